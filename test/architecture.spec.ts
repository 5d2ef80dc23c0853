import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildLibrary } from './package/packed-package';
import { LIMITS, shapeFindings } from '../scripts/code-shape';

/**
 * The rooms of docs/DESIGN.md §0, checked on the source: the core imports neither Nest nor ioredis nor
 * anything outside itself, the Redis adapter does not import Nest, and a folder is entered only through its
 * index.ts. Then the published declarations: they show what lib/index.ts exports and none of the members
 * marked @internal.
 */
const LIB = path.join(__dirname, '..', 'lib');

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory()
        ? sourceFiles(path.join(dir, entry.name))
        : entry.name.endsWith('.ts')
          ? [path.join(dir, entry.name)]
          : [],
    );
}

/** Every module specifier a file imports or re-exports. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [
    ...text.matchAll(/(?:import|export)\s[^;]*?from\s+'([^']+)'|import\s+'([^']+)'|require\('([^']+)'\)/g),
  ].map((match) => match[1] ?? match[2] ?? match[3]);
}

/** The folder of lib/ an import resolves into, and whether it names the folder itself (its index.ts). */
function target(file: string, specifier: string): { room: string; entry: boolean } | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const resolved = path.resolve(path.dirname(file), specifier);
  const relative = path.relative(LIB, resolved).split(path.sep);
  const room = relative.length > 1 ? relative[0] : '.';
  const entry = relative.length === 1 && fs.existsSync(path.join(resolved, 'index.ts'));
  return { room: fs.existsSync(path.join(LIB, relative[0], 'index.ts')) ? relative[0] : room, entry };
}

const roomOf = (file: string) => {
  const parts = path.relative(LIB, file).split(path.sep);
  return parts.length > 1 ? parts[0] : '.';
};

/**
 * Which rooms each room may import (docs/DESIGN.md §0): the Nest layer (the flat files of lib/, '.') →
 * lib/locked → lib/core ← lib/redis, with lib/telemetry, lib/cli and lib/testing beside, reading the core. Nothing imports
 * upward or sideways.
 */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  '.': ['core', 'redis', 'locked', 'telemetry', 'testing'],
  locked: ['core'],
  redis: ['core'],
  telemetry: ['core'],
  cli: ['core', 'redis'],
  testing: ['core'],
  core: [],
};

/** Imports that cross rooms against {@link MAY_IMPORT}; `asPath` is where the file is taken to live. */
function wrongWay(file: string, asPath = file): string[] {
  const from = roomOf(asPath);
  const allowed = MAY_IMPORT[from];
  if (!allowed) return [`${path.relative(LIB, asPath)}: room "${from}" has no rule in MAY_IMPORT`];
  return importsOf(file).flatMap((specifier) => {
    const to = target(asPath, specifier);
    if (!to || to.room === from || allowed.includes(to.room)) return [];
    return [`${path.relative(LIB, asPath)} (${from}) → ${specifier} (${to.room})`];
  });
}

/**
 * The rooms inside lib/core and lib/redis (docs/DESIGN.md §0): which room each file is in, and which rooms each
 * room may import. A room is a sub-folder, entered from outside only through its index.ts; the files directly
 * in the folder are split into the facade (which may import every room) and the foundation (or front).
 */
interface NestedRooms {
  readonly dir: string;
  /** The room of a file directly in `dir`. */
  readonly flatRoom: (name: string) => string;
  readonly mayImport: Readonly<Record<string, readonly string[]>>;
}

const CORE_ROOMS: NestedRooms = {
  dir: path.join(LIB, 'core'),
  flatRoom: (name) =>
    ['index.ts', 'redlock.ts', 'instance.ts', 'instance-sections.ts', 'stats.ts'].includes(name)
      ? 'facade'
      : 'foundation',
  mayImport: {
    foundation: [],
    options: ['foundation'],
    nodes: ['options', 'foundation'],
    release: ['nodes', 'options', 'foundation'],
    acquire: ['release', 'nodes', 'options', 'foundation'],
    hold: ['nodes', 'options', 'foundation'],
    primitives: ['acquire', 'release', 'hold', 'nodes', 'options', 'foundation'],
    operate: ['primitives', 'hold', 'nodes', 'options', 'foundation'],
    facade: ['operate', 'primitives', 'hold', 'acquire', 'release', 'nodes', 'options', 'foundation'],
  },
};

const REDIS_ROOMS: NestedRooms = {
  dir: path.join(LIB, 'redis'),
  flatRoom: () => 'front',
  mayImport: {
    front: ['ioredis', 'node-redis', 'script-node', 'scripts'],
    ioredis: ['script-node', 'scripts'],
    'node-redis': ['script-node', 'scripts'],
    'script-node': ['scripts'],
    scripts: [],
  },
};

function nestedRoomOf(rooms: NestedRooms, file: string): string {
  const parts = path.relative(rooms.dir, file).split(path.sep);
  return parts.length > 1 ? parts[0] : rooms.flatRoom(parts[0]);
}

/** Imports inside `rooms.dir` that go against its `mayImport`, or into a room other than through its index.ts. */
function wrongWayInside(rooms: NestedRooms, file: string, asPath = file): string[] {
  const from = nestedRoomOf(rooms, asPath);
  const allowed = rooms.mayImport[from];
  const name = path.relative(LIB, asPath);
  if (!allowed) return [`${name}: room "${from}" has no rule`];
  return importsOf(file).flatMap((specifier) => {
    if (!specifier.startsWith('.')) return [];
    const resolved = path.resolve(path.dirname(asPath), specifier);
    if (path.relative(rooms.dir, resolved).startsWith('..')) return [];
    const isRoom = fs.existsSync(path.join(resolved, 'index.ts')) && path.dirname(resolved) === rooms.dir;
    const to = isRoom ? path.basename(resolved) : nestedRoomOf(rooms, `${resolved}.ts`);
    if (to === from) return [];
    const problems: string[] = [];
    if (!allowed.includes(to)) problems.push(`${name} (${from}) → ${specifier} (${to})`);
    if (to in rooms.mayImport && !['facade', 'foundation', 'front'].includes(to) && !isRoom) {
      problems.push(`${name} → ${specifier}: enter the room "${to}" through its index.ts`);
    }
    return problems;
  });
}

/** Every import cycle among lib/'s files (type-only imports and re-exports included), each once. */
function importCycles(files: readonly string[]): string[][] {
  const resolve = (from: string, specifier: string): string | undefined => {
    const base = path.resolve(path.dirname(from), specifier);
    if (fs.existsSync(`${base}.ts`)) return `${base}.ts`;
    if (fs.existsSync(path.join(base, 'index.ts'))) return path.join(base, 'index.ts');
    return undefined;
  };
  const edges = new Map(
    files.map((file) => [
      file,
      importsOf(file)
        .filter((s) => s.startsWith('.'))
        .map((s) => resolve(file, s))
        .filter((f): f is string => f !== undefined),
    ]),
  );
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 'open') {
        cycles.push(stack.slice(stack.indexOf(next)).map((f) => path.relative(LIB, f)));
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return cycles;
}

describe('architecture (the rooms of docs/DESIGN.md)', () => {
  const files = sourceFiles(LIB);

  it('finds the sources it checks', () => {
    expect(files.filter((file) => roomOf(file) === 'core').length).toBeGreaterThan(10);
    expect(files.filter((file) => roomOf(file) === 'redis').length).toBeGreaterThan(5);
    expect(files.filter((file) => roomOf(file) === 'locked').length).toBeGreaterThan(5);
  });

  it('lib/core imports neither @nestjs nor ioredis nor any file outside lib/core', () => {
    const offending: string[] = [];
    for (const file of files.filter((f) => roomOf(f) === 'core')) {
      for (const specifier of importsOf(file)) {
        const inside =
          specifier.startsWith('.') &&
          !path
            .relative(path.join(LIB, 'core'), path.resolve(path.dirname(file), specifier))
            .startsWith('..');
        const builtin = specifier.startsWith('node:');
        if (!inside && !builtin) offending.push(`${path.relative(LIB, file)} → ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('lib/redis does not import @nestjs', () => {
    const offending = files
      .filter((f) => roomOf(f) === 'redis')
      .flatMap((file) =>
        importsOf(file)
          .filter((s) => s.startsWith('@nestjs'))
          .map((s) => `${file} → ${s}`),
      );
    expect(offending).toEqual([]);
  });

  it('a folder is entered only through its index.ts', () => {
    const offending: string[] = [];
    for (const file of files) {
      for (const specifier of importsOf(file)) {
        const to = target(file, specifier);
        if (!to || to.room === '.' || to.room === roomOf(file)) continue;
        if (!to.entry) offending.push(`${path.relative(LIB, file)} → ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('the rooms are one-way: every room, the flat Nest layer included, imports only the rooms below it', () => {
    const rooms = new Set(files.map(roomOf));
    expect([...rooms].sort()).toEqual(Object.keys(MAY_IMPORT).sort());
    expect(files.flatMap((file) => wrongWay(file))).toEqual([]);
  });

  it('negative control: an upward import from lib/locked into the Nest layer, and a sideways one, are caught', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arch-'));
    try {
      const file = path.join(dir, 'x.ts');
      fs.writeFileSync(
        file,
        "import * as messages from '../redlock.messages';\nimport type { Redlock } from '../redis';\n" +
          "import { Lock } from '../core';\n",
      );
      expect(wrongWay(file, path.join(LIB, 'locked', 'x.ts'))).toEqual([
        'locked/x.ts (locked) → ../redlock.messages (.)',
        'locked/x.ts (locked) → ../redis (redis)',
      ]);
      // The same file in the Nest layer imports downward only.
      fs.writeFileSync(file, "import { Redlock } from './redis';\nimport { Locked } from './locked';\n");
      expect(wrongWay(file, path.join(LIB, 'x.ts'))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  it('the checker catches a forbidden import (negative control)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arch-'));
    const file = path.join(dir, 'x.ts');
    fs.writeFileSync(file, "import Redis from 'ioredis';\nimport { X } from '../redis/scripts';\n");
    expect(importsOf(file)).toEqual(['ioredis', '../redis/scripts']);
    fs.rmSync(dir, { recursive: true });
  });

  it('inside lib/core and lib/redis, rooms import only the rooms below them, through their index.ts', () => {
    for (const rooms of [CORE_ROOMS, REDIS_ROOMS]) {
      const inside = files.filter((file) => !path.relative(rooms.dir, file).startsWith('..'));
      const found = new Set(inside.map((file) => nestedRoomOf(rooms, file)));
      expect([...found].sort()).toEqual(Object.keys(rooms.mayImport).sort());
      expect(inside.flatMap((file) => wrongWayInside(rooms, file))).toEqual([]);
    }
  });

  it('negative control: an upward import inside lib/core, and one past a room index, are caught', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arch-'));
    try {
      const file = path.join(dir, 'x.ts');
      fs.writeFileSync(file, "import { a } from '../primitives';\nimport { b } from '../release/release';\n");
      expect(wrongWayInside(CORE_ROOMS, file, path.join(LIB, 'core', 'acquire', 'x.ts'))).toEqual([
        'core/acquire/x.ts (acquire) → ../primitives (primitives)',
        'core/acquire/x.ts → ../release/release: enter the room "release" through its index.ts',
      ]);
      fs.writeFileSync(file, "import { c } from '../acquire';\n");
      expect(wrongWayInside(CORE_ROOMS, file, path.join(LIB, 'core', 'primitives', 'x.ts'))).toEqual([]);
      // A foundation file may not reach into a room.
      fs.writeFileSync(file, "import { d } from './hold';\n");
      expect(wrongWayInside(CORE_ROOMS, file, path.join(LIB, 'core', 'x.ts'))).toEqual([
        'core/x.ts (foundation) → ./hold (hold)',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  it('lib/ has no import cycle, type-only imports included', () => {
    expect(importCycles(files)).toEqual([]);
  });

  it('negative control: a cycle of two files, one import type-only, is found', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arch-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\n");
      fs.writeFileSync(path.join(dir, 'b.ts'), "export { A } from './a';\n");
      const cycles = importCycles([path.join(dir, 'a.ts'), path.join(dir, 'b.ts')]);
      expect(cycles).toHaveLength(1);
      expect(cycles[0]).toHaveLength(2);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  it(`lib/ keeps its shape: ≤ ${LIMITS.filesPerFolder} files a folder, ≤ ${LIMITS.linesPerFile} lines a file, ≤ ${LIMITS.linesPerFunction} a function`, () => {
    expect(shapeFindings(LIB)).toEqual([]);
  });

  it('negative control: a crowded folder, a long file and a long function are found', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shape-'));
    try {
      const root = path.join(dir, 'lib');
      fs.mkdirSync(path.join(root, 'hall'), { recursive: true });
      for (let i = 0; i <= LIMITS.filesPerFolder; i++)
        fs.writeFileSync(path.join(root, 'hall', `f${i}.ts`), '');
      fs.writeFileSync(path.join(root, 'long.ts'), 'export const x = 1;\n'.repeat(LIMITS.linesPerFile + 1));
      const body = '  x++;\n'.repeat(LIMITS.linesPerFunction - 1);
      fs.writeFileSync(path.join(root, 'fn.ts'), `let x = 0;\nexport function big() {\n${body}}\n`);
      const found = shapeFindings(root).map((f) => `${f.kind} ${f.where} ${f.size}`);
      expect(found.sort()).toEqual(
        [
          `folder lib/hall ${LIMITS.filesPerFolder + 1}`,
          `file lib/long.ts ${LIMITS.linesPerFile + 1}`,
          `function lib/fn.ts:2 big ${LIMITS.linesPerFunction + 1}`,
        ].sort(),
      );
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  it('the published declarations hide every @internal member', () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'dts-'));
    try {
      buildLibrary(out, true);
      const lock = fs.readFileSync(path.join(out, 'core', 'lock.d.ts'), 'utf8');
      const core = fs.readFileSync(path.join(out, 'core', 'redlock.d.ts'), 'utf8');
      const redis = fs.readFileSync(path.join(out, 'redis', 'redis-redlock.d.ts'), 'utf8');
      expect(lock).toContain('get remainingTime(): number;');
      for (const name of [
        'markReleased',
        'markLost',
        'setDeadline',
        'claim',
        'issuer',
        'validUntil',
        'keys:',
      ]) {
        expect(lock).not.toContain(name);
      }
      expect(core).toContain('acquire(resources');
      for (const name of ['internals', 'lockResources', 'runUnderLock', 'settingsFor']) {
        expect(core).not.toContain(name);
        expect(redis).not.toContain(name);
      }
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });
});
