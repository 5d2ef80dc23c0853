/**
 * The clock shim the clock-step chaos runs rely on (test/support/clock-shim.c): a redis-server under it answers
 * TIME and expires keys by the shifted wall clock, forward and backward; offset 0 changes nothing; the shim
 * leaves CLOCK_MONOTONIC alone; and the check the chaos runs make before each run fails on a node without it.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  ClockNodes,
  NodeClock,
  OFFSET_FILE_ENV,
  PROBE_TTL,
  buildClockShim,
  checkClockFollows,
  serverTime,
  startClockNodes,
} from '../../support/clock-shim';
import { RedisNodes, startRedisNodes } from '../../support';

const STEP = 3_000;

describe('clock shim (LD_PRELOAD) on a real redis-server', () => {
  let shimmed: ClockNodes | undefined;
  let plain: RedisNodes | undefined;
  let dir: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clock-shim-spec-'));
    [shimmed, plain] = await Promise.all([startClockNodes(1), startRedisNodes(1, { source: 'path' })]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all([shimmed?.nodes.stop(), plain?.stop()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('TIME moves by a forward and a backward step, and PTTL follows (a PX 10000 key)', async () => {
    const follows = await checkClockFollows(shimmed!.clocks[0], STEP);
    // TIME − real wall clock, bracketed: contains each offset.
    expect(follows.timeShift.map((s) => s.offset)).toEqual([0, STEP, -STEP, 0]);
    for (const s of follows.timeShift) {
      expect(s.low).toBeLessThanOrEqual(s.offset);
      expect(s.high).toBeGreaterThanOrEqual(s.offset);
    }
    const [atSet, forward, backward, back] = follows.pttl;
    expect(atSet.pttl).toBeLessThanOrEqual(PROBE_TTL);
    expect(forward.offset).toBe(STEP);
    expect(forward.pttl).toBeLessThanOrEqual(PROBE_TTL - STEP); // the key lost the step at once
    expect(forward.pttl).toBeGreaterThanOrEqual(forward.low);
    expect(backward.offset).toBe(-STEP);
    expect(backward.pttl).toBeLessThanOrEqual(PROBE_TTL + STEP); // and got it back, and more
    expect(backward.pttl).toBeGreaterThanOrEqual(backward.low);
    expect(back.pttl).toBeLessThanOrEqual(PROBE_TTL);
  });

  it('a forward step larger than a key’s ttl expires it at once', async () => {
    const clock = shimmed!.clocks[0];
    const admin = clock.node.redis();
    try {
      await admin.set('short', '1', 'PX', 2_000);
      await clock.step(2_500);
      expect(await admin.exists('short')).toBe(0);
      await clock.setOffset(0);
    } finally {
      admin.disconnect();
    }
  });

  it('negative control: at offset 0 TIME is the real wall clock and PTTL only counts real time', async () => {
    const clock = shimmed!.clocks[0];
    await clock.setOffset(0);
    const admin = clock.node.redis();
    try {
      const { before, server, after } = await serverTime(admin);
      expect(server).toBeGreaterThanOrEqual(before);
      expect(server).toBeLessThan(after + 1);
      const setBefore = Date.now();
      await admin.set('zero', '1', 'PX', PROBE_TTL);
      const left = await admin.pttl('zero');
      expect(left).toBeLessThanOrEqual(PROBE_TTL);
      expect(left).toBeGreaterThanOrEqual(PROBE_TTL - (Date.now() - setBefore) - 1);
    } finally {
      admin.disconnect();
    }
  });

  it('negative control: the check fails loudly on a node without the shim', async () => {
    const clock = new NodeClock(plain!.nodes[0], path.join(dir, 'offset-plain'));
    await expect(checkClockFollows(clock, STEP)).rejects.toThrow(/does not follow its clock shim/);
  });

  it('CLOCK_MONOTONIC does not move: a process under the shim sees the step on its wall clock only', async () => {
    const file = path.join(dir, 'offset-node');
    fs.writeFileSync(file, `${STEP}\n`);
    const mono = () => Number(process.hrtime.bigint() / 1_000_000n);
    const before = { wall: Date.now(), mono: mono() };
    const output = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['-e', 'console.log(JSON.stringify([Date.now(), Number(process.hrtime.bigint() / 1000000n)]))'],
        { env: { ...process.env, LD_PRELOAD: buildClockShim(), [OFFSET_FILE_ENV]: file } },
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      ),
    );
    const after = { wall: Date.now(), mono: mono() };
    const [childWall, childMono] = JSON.parse(output) as [number, number];
    // Monotonic: within the real instants around the child (both processes read the same CLOCK_MONOTONIC).
    expect(childMono).toBeGreaterThanOrEqual(before.mono);
    expect(childMono).toBeLessThanOrEqual(after.mono);
    // Wall clock: the same instants, shifted by the step.
    expect(childWall).toBeGreaterThanOrEqual(before.wall + STEP);
    expect(childWall).toBeLessThanOrEqual(after.wall + STEP);
  });
});
