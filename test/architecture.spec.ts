import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildLibrary } from './package/packed-package';

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
 * lib/locked → lib/core ← lib/redis, with lib/telemetry and lib/cli beside, reading the core. Nothing imports
 * upward or sideways.
 */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  '.': ['core', 'redis', 'locked', 'telemetry'],
  locked: ['core'],
  redis: ['core'],
  telemetry: ['core'],
  cli: ['core', 'redis'],
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
        const inside = specifier.startsWith('./');
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
