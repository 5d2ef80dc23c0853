import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { removeOnExit } from './exit-cleanup';
import { findOnPath } from './find-binary';
import { LocalRedisNode } from './local-node';
import type { RedisNodeHandle, RedisNodes, StartRedisNodesOptions } from './types';

/**
 * Redis nodes whose wall clock the test steps (issue "clock steps"): each redis-server runs under our own
 * LD_PRELOAD shim (clock-shim.c), which adds an offset read from a file to CLOCK_REALTIME, gettimeofday() and
 * time(), and leaves CLOCK_MONOTONIC alone. Redis expires keys and answers TIME by that wall clock, so a step of
 * the offset is what an NTP step, a VM resume or `date -s` does to a real server.
 */

/** The environment variable naming the offset file (read by the shim). */
export const OFFSET_FILE_ENV = 'REDLOCK_CLOCK_OFFSET_FILE';

const SOURCE = path.join(__dirname, 'clock-shim.c');

let built: { dir: string; library: string } | undefined;

/**
 * Compiles the shim with gcc (or $CC) into a temporary folder, once per process, and returns the shared
 * library's path. No compiler is a failure, never a skip: a clock test that silently ran nothing would prove
 * nothing.
 */
export function buildClockShim(): string {
  if (built) return built.library;
  const cc = process.env.CC ?? 'gcc';
  const compiler = path.isAbsolute(cc) ? cc : findOnPath(cc);
  if (!compiler) {
    throw new Error(
      `the clock-step tests compile an LD_PRELOAD shim (test/support/clock-shim.c) and need a C compiler: ` +
        `"${cc}" is not on PATH. Install gcc (Debian/Ubuntu: apt-get install gcc) or set CC.`,
    );
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-clock-shim-'));
  removeOnExit(dir);
  const library = path.join(dir, 'clock-shim.so');
  try {
    execFileSync(compiler, ['-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-o', library, SOURCE], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const { stderr } = error as { stderr?: Buffer };
    throw new Error(`compiling ${SOURCE} with ${compiler} failed:\n${stderr?.toString() ?? String(error)}`);
  }
  built = { dir, library };
  return library;
}

/**
 * A wrapper around redis-server that runs it under the shim, its offset file named after its port (so a node
 * keeps its clock across kill/start): `exec` keeps the pid, so kill, pause and resume reach redis-server.
 */
function shimmedServer(bin: string): { wrapper: string; offsetFile: (port: number) => string } {
  const library = buildClockShim();
  const dir = built!.dir;
  const wrapper = path.join(dir, 'redis-server-shimmed');
  const offsetFile = (port: number) => path.join(dir, `offset-${port}`);
  const script = [
    '#!/bin/sh',
    'port=""; previous=""',
    'for arg in "$@"; do [ "$previous" = "--port" ] && port="$arg"; previous="$arg"; done',
    `LD_PRELOAD=${JSON.stringify(library)} ${OFFSET_FILE_ENV}=${JSON.stringify(dir)}/offset-"$port" ` +
      `exec ${JSON.stringify(bin)} "$@"`,
    '',
  ].join('\n');
  fs.writeFileSync(wrapper, script, { mode: 0o755 });
  return { wrapper, offsetFile };
}

/** The server's TIME as ms, with the real wall-clock instants (this process is not shimmed) around the call. */
export async function serverTime(admin: Redis): Promise<{ before: number; server: number; after: number }> {
  const before = Date.now();
  const [seconds, micros] = await admin.time();
  const after = Date.now();
  return { before, server: Number(seconds) * 1000 + Number(micros) / 1000, after };
}

/** One node's wall-clock offset, ms: set it, step it. */
export class NodeClock {
  private current = 0;

  constructor(
    readonly node: RedisNodeHandle,
    private readonly file: string,
  ) {
    this.write(0);
  }

  /** The offset written last, ms. */
  get offset(): number {
    return this.current;
  }

  /**
   * Sets the offset and, when the node is running and not paused, resolves once the node's clock shows it: a
   * TIME whose answer lies within the real instants around the call shifted by the new offset (the shim
   * re-reads its file within about a millisecond). Throws if an answer is on neither the old nor the new offset.
   */
  async setOffset(ms: number): Promise<void> {
    const previous = this.current;
    this.write(ms);
    if (!this.node.running || this.node.paused) return;
    const admin = this.node.redis();
    try {
      for (let asked = 1; ; asked++) {
        const { before, server, after } = await serverTime(admin);
        const on = (offset: number) => server >= before + offset && server < after + offset + 1;
        if (on(ms)) return;
        if (!on(previous) || asked >= 1_000) {
          throw new Error(
            `node ${this.node.index} (port ${this.node.port}) does not follow its clock shim: offset ${ms} ms ` +
              `written, TIME said ${server} between real ${before} and ${after} (asked ${asked} times)`,
          );
        }
      }
    } finally {
      admin.disconnect();
    }
  }

  /** Moves the node's wall clock by `ms` (negative: backwards), as {@link setOffset}. */
  step(ms: number): Promise<void> {
    return this.setOffset(this.current + ms);
  }

  /** Atomically (write, then rename): the shim reads either the old or the new offset, never half a number. */
  private write(ms: number): void {
    const temporary = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(temporary, `${Math.round(ms)}\n`);
    fs.renameSync(temporary, this.file);
    this.current = ms;
  }
}

/** Nodes under the clock shim and their clocks (`clocks[i]` is `nodes.nodes[i]`'s). */
export interface ClockNodes {
  readonly nodes: RedisNodes;
  readonly clocks: NodeClock[];
}

/** Starts `count` local redis-server nodes under the clock shim, every offset 0. */
export async function startClockNodes(
  count: number,
  options: Pick<StartRedisNodesOptions, 'extraArgs'> = {},
): Promise<ClockNodes> {
  const bin = findOnPath('redis-server');
  if (!bin) throw new Error('the clock-step tests need redis-server on PATH (they run it under a shim)');
  const { wrapper, offsetFile } = shimmedServer(bin);
  const started = await Promise.allSettled(
    Array.from({ length: count }, (_, i) => LocalRedisNode.create(i, wrapper, options.extraArgs ?? [])),
  );
  const nodes = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stop = () => Promise.all(nodes.map((node) => node.dispose())).then(() => undefined);
  const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  let stopping: Promise<void> | undefined;
  const handles: RedisNodes = {
    source: 'path',
    nodes,
    get urls() {
      return nodes.map((node) => node.url);
    },
    async flushAll() {
      await Promise.all(
        nodes.filter((n) => n.running && !n.paused).map((n) => withAdmin(n, (admin) => admin.flushall())),
      );
    },
    stop: () => (stopping ??= stop()),
  };
  return { nodes: handles, clocks: nodes.map((node) => new NodeClock(node, offsetFile(node.port))) };
}

async function withAdmin<T>(node: RedisNodeHandle, use: (admin: Redis) => Promise<T>): Promise<T> {
  const admin = node.redis();
  try {
    return await use(admin);
  } finally {
    admin.disconnect();
  }
}

/** What {@link checkClockFollows} measured on one node. */
export interface ClockFollows {
  readonly node: number;
  /** TIME minus the real wall clock, bracketed by the real instants around the call, ms, at each offset. */
  readonly timeShift: readonly { offset: number; low: number; high: number }[];
  /** PTTL of a key set with PX {@link PROBE_TTL} at offset 0, then after a step forward and one backward. */
  readonly pttl: readonly { offset: number; pttl: number; low: number; high: number }[];
}

export const PROBE_TTL = 10_000;

/**
 * Checks that `clock`'s node follows the shim, and throws (loudly, with what it saw) if not. Steps the offset
 * 0 → +stepMs → −stepMs → 0 and checks, by causality alone (no timing threshold): TIME lies within the real
 * instants around the call shifted by the offset; a key set with PX {@link PROBE_TTL} at offset 0 then has a
 * PTTL of at most PROBE_TTL − offset (its expiry is fixed, the clock moved at least by the offset) and at
 * least that minus the real time since just before the SET (plus a millisecond of rounding). Leaves 0.
 */
export async function checkClockFollows(clock: NodeClock, stepMs: number): Promise<ClockFollows> {
  return withAdmin(clock.node, async (admin) => {
    const key = `clock-probe:${process.pid}:${clock.node.index}`;
    const timeShift: { offset: number; low: number; high: number }[] = [];
    const pttl: { offset: number; pttl: number; low: number; high: number }[] = [];
    const measureTime = async () => {
      const { before, server, after } = await serverTime(admin);
      timeShift.push({ offset: clock.offset, low: server - (after + 1), high: server - before });
    };
    await clock.setOffset(0);
    await measureTime();
    const setBefore = Date.now();
    await admin.set(key, '1', 'PX', PROBE_TTL);
    const measurePttl = async () => {
      const left = await admin.pttl(key);
      const high = PROBE_TTL - clock.offset;
      pttl.push({ offset: clock.offset, pttl: left, low: high - (Date.now() - setBefore) - 1, high });
    };
    await measurePttl();
    for (const offset of [stepMs, -stepMs, 0]) {
      await clock.setOffset(offset);
      await measureTime();
      await measurePttl();
    }
    await admin.del(key);
    const result = { node: clock.node.index, timeShift, pttl };
    const wrong = [
      ...timeShift.filter((s) => !(s.low <= s.offset && s.offset <= s.high)),
      ...pttl.filter((p) => !(p.low <= p.pttl && p.pttl <= p.high)),
    ];
    if (wrong.length > 0) {
      throw new Error(
        `node ${clock.node.index} (port ${clock.node.port}) does not follow the clock shim; ` +
          `out of bounds: ${JSON.stringify(wrong)}; all: ${JSON.stringify(result)}`,
      );
    }
    return result;
  });
}
