import {
  AcquireAbortedError,
  Lock,
  LockBusyError,
  LockLostError,
  QuorumUnavailableError,
  RedlockCore,
  type Timer,
} from '../../../lib/core';
import type { CallRecord } from '../checkers/fairness';
import type { Interval } from '../checkers/intervals';
import type { OpSpec } from './config';
import type { SimContext } from './context';
import type { Connection } from './connection';
import type { DriftingClock } from './scheduler';

/** What clients did, summed over a schedule. */
export interface OpStats {
  operations: number;
  granted: number;
  busy: number;
  unavailable: number;
  lost: number;
  aborted: number;
  extended: number;
  extendFailed: number;
  /** `extend(lock, ttl)` with a ttl shorter than the lock's that missed its quorum: the short-extend case. */
  shortExtendFailed: number;
  /** Read locks granted. */
  readsGranted: number;
  /** Permits of a semaphore granted. */
  permitsGranted: number;
  /** Operations that ran with `fair: true` (docs/DESIGN.md §18), and how many of them were granted. */
  fairOps: number;
  fairGranted: number;
}

export function emptyOpStats(): OpStats {
  return {
    operations: 0,
    granted: 0,
    busy: 0,
    unavailable: 0,
    lost: 0,
    aborted: 0,
    extended: 0,
    extendFailed: 0,
    shortExtendFailed: 0,
    readsGranted: 0,
    permitsGranted: 0,
    fairOps: 0,
    fairGranted: 0,
  };
}

/** One simulated client process: its Redlock instance (own connections), its clock, its plan. */
export interface SimClient {
  readonly id: number;
  readonly redlock: RedlockCore;
  /** Its connections, for the semaphore control that bypasses the core. */
  readonly connections: readonly Connection[];
  readonly clock: DriftingClock;
  readonly ops: readonly OpSpec[];
  /** Callers sharing the instance (see `ClientSpec.lanes`). */
  readonly lanes?: number;
}

/** Where a client reports what it saw. */
export interface ClientSink {
  readonly context: SimContext;
  readonly stats: OpStats;
  /** Checks grants for expired locks (off in the negative control that hands those out on purpose). */
  readonly checkGrants: boolean;
  /**
   * NEGATIVE CONTROL ONLY: after an extension that failed, keep working to the deadline the lock had before
   * the call (what the core did before the short-extend fix), not to `lock.remainingTime`.
   */
  readonly keepDeadlineOfFailedExtend: boolean;
  /** NEGATIVE CONTROL ONLY: semaphores as a per-node count accepted on a majority (redis-semaphore's design). */
  readonly perNodeCount: boolean;
  /**
   * A long-lived instance: its earlier locks read every node's clock before the schedule's operations (see
   * {@link warmUp}) — a later step is judged against that sample.
   */
  readonly warmUp: boolean;
  /** The instances' default `fair` option. */
  readonly fairDefault: boolean;
  section(interval: Interval): void;
  /** Every acquisition, as the caller saw it (fair waiting's checkers); filled in as it goes. */
  call(record: CallRecord): void;
  anomaly(message: string): void;
}

/**
 * Runs the client's operations one after another: acquire → critical section → release; with `lanes`, that
 * many callers share the instance, each running its share of the operations (dealt round-robin).
 */
export async function runClient(client: SimClient, sink: ClientSink): Promise<void> {
  if (sink.warmUp) void warmUp(client);
  const lanes = client.lanes ?? 1;
  if (lanes === 1) return runLane(client, sink, 0, 1);
  await Promise.all(Array.from({ length: lanes }, (_, lane) => runLane(client, sink, lane, lanes)));
}

async function runLane(client: SimClient, sink: ClientSink, lane: number, lanes: number): Promise<void> {
  for (let i = lane; i < client.ops.length; i += lanes) {
    const op = client.ops[i];
    await sleep(client.clock, op.think);
    sink.stats.operations++;
    const holder = `c${client.id}#${i}`;
    const { context } = sink;
    if (context.tracing)
      context.trace(`${holder} BEGIN ${op.kind} ${op.resources.join(',')} ttl=${op.ttl} wait=${op.wait}`);
    const fair = op.fair ?? (sink.fairDefault && op.mode === 'write' && op.permits === undefined);
    if (fair) sink.stats.fairOps++;
    const call: CallRecord = {
      holder,
      resources: op.resources,
      arrival: context.scheduler.now,
      ended: NaN,
      wait: op.wait,
      fair,
    };
    sink.call(call);
    try {
      await operate(client, op, holder, sink, call);
    } catch (error) {
      if (context.tracing)
        context.trace(`${holder} FAILED ${String(error instanceof Error ? error.name : error)}`);
      if (error instanceof LockBusyError) sink.stats.busy++;
      else if (error instanceof QuorumUnavailableError) sink.stats.unavailable++;
      else if (error instanceof LockLostError) sink.stats.lost++;
      else if (error instanceof AcquireAbortedError) sink.stats.aborted++;
      else sink.anomaly(`c${client.id} op ${i} (${op.kind}) failed unexpectedly: ${describeError(error)}`);
    } finally {
      if (Number.isNaN(call.ended)) call.ended = context.scheduler.now;
    }
  }
}

/**
 * A long-lived instance's earlier lock: one try on a resource of its own, released at once; the answers
 * (acquired or busy, each with the node's `TIME`) are its first samples of the nodes' clocks. Not awaited: the
 * operations start as planned. (Not `inspect()`: its per-node timeout runs on real timers, not the instance's
 * clock, so whether its samples count would depend on how fast the machine runs the schedule.)
 */
async function warmUp(client: SimClient): Promise<void> {
  const lock = await client.redlock.tryAcquire(`warm-${client.id}`, { fencing: false }).catch(() => null);
  if (lock) await client.redlock.release(lock).catch(() => undefined);
}

async function operate(
  client: SimClient,
  op: OpSpec,
  holder: string,
  sink: ClientSink,
  call: CallRecord,
): Promise<void> {
  const { redlock } = client;
  if (op.permits !== undefined && sink.perNodeCount) return countedOperate(client, op, holder, sink);
  let signal: AbortSignal | undefined;
  if (op.abortAfter !== undefined) {
    const controller = new AbortController();
    client.clock.setTimeout(() => controller.abort(new Error('the caller gave up')), op.abortAfter);
    signal = controller.signal;
  }
  const options = {
    ttl: op.ttl,
    wait: op.wait,
    fencing: op.fencing,
    signal,
    mode: op.mode,
    permits: op.permits,
    ...(op.fair === undefined ? {} : { fair: op.fair }),
  };
  if (op.kind === 'using') {
    const settings = { ...options, autoExtend: true, onLockLost: op.onLockLost };
    await redlock.using(op.resources, settings, async (lock) => {
      const section = granted(lock, op, holder, sink, call);
      await work(client.clock, lock, op.work, section, lock.signal);
      record(lock, holder, section, sink);
    });
    return;
  }
  const lock =
    op.kind === 'try'
      ? await redlock.tryAcquire(op.resources, options)
      : await redlock.acquire(op.resources, options);
  if (lock === null) {
    if (sink.context.tracing) sink.context.trace(`${holder} BUSY (tryAcquire → null)`);
    sink.stats.busy++;
    return;
  }
  const section = granted(lock, op, holder, sink, call);
  if (op.extendMidway) {
    await work(client.clock, lock, op.work / 2, section);
    const deadlineBefore = client.clock.now() + lock.remainingTime;
    let remaining = () => lock.remainingTime;
    try {
      await redlock.extend(lock, op.extendTtl);
      sink.stats.extended++;
      if (sink.context.tracing)
        sink.context.trace(`${holder} EXTENDED (${lock.remainingTime.toFixed(3)} ms left)`);
    } catch (error) {
      if (!(error instanceof LockLostError || error instanceof QuorumUnavailableError)) throw error;
      if (sink.context.tracing) {
        sink.context.trace(
          `${holder} EXTEND FAILED ${error.name} (${lock.remainingTime.toFixed(3)} ms left)`,
        );
      }
      // The old validity still stands (remainingTime says how much): keep working within it.
      sink.stats.extendFailed++;
      const short = op.extendTtl !== undefined && op.extendTtl < op.ttl;
      if (short && error instanceof QuorumUnavailableError) sink.stats.shortExtendFailed++;
      if (sink.keepDeadlineOfFailedExtend) remaining = () => deadlineBefore - client.clock.now();
    }
    await work(client.clock, lock, op.work / 2, section, undefined, remaining);
  } else {
    await work(client.clock, lock, op.work, section);
  }
  record(lock, holder, section, sink);
  await redlock.release(lock);
}

/**
 * The semaphore control: one try on every node (a per-node count), held when a majority admitted it, for
 * the work or until its ttl on the client's clock; then released everywhere. No token.
 */
async function countedOperate(
  client: SimClient,
  op: OpSpec,
  holder: string,
  sink: ClientSink,
): Promise<void> {
  const owner = `${holder}:${sink.context.scheduler.now}`;
  const key = `count:${op.resources[0]}`;
  const { connections } = client;
  const started = client.clock.now();
  // A lost message never answers: each node gets the ttl to answer, as a per-node timeout would.
  const inTime = <T>(call: Promise<T>, otherwise: T) =>
    Promise.race([
      call.catch(() => otherwise),
      new Promise<T>((resolve) => client.clock.setTimeout(() => resolve(otherwise), op.ttl)),
    ]);
  const answers = await Promise.all(
    connections.map((connection) => inTime(connection.countAcquire(key, op.permits!, owner, op.ttl), false)),
  );
  const yes = answers.filter(Boolean).length;
  if (yes >= Math.floor(connections.length / 2) + 1) {
    sink.stats.granted++;
    sink.stats.permitsGranted++;
    const start = sink.context.scheduler.now;
    // Works until its work is done or its ttl (less what the acquisition took) is up, on its own clock.
    const left = Math.min(op.work, op.ttl - (client.clock.now() - started));
    if (left > 0) await new Promise<void>((resolve) => client.clock.setExactTimeout(resolve, left));
    sink.section({ resource: op.resources[0], holder, start, end: sink.context.scheduler.now });
  } else sink.stats.busy++;
  await Promise.all(connections.map((connection) => inTime(connection.countRelease(key, owner), 0)));
}

/** A critical section in true time: from the grant to the end of the last stretch of work. */
interface Section {
  readonly start: number;
  end: number;
}

function granted(lock: Lock, op: OpSpec, holder: string, sink: ClientSink, call: CallRecord): Section {
  sink.stats.granted++;
  call.granted = call.ended = sink.context.scheduler.now;
  if (call.fair) sink.stats.fairGranted++;
  if (lock.mode === 'read') sink.stats.readsGranted++;
  if (lock.permit !== undefined) sink.stats.permitsGranted++;
  const { context } = sink;
  if (sink.checkGrants && !(lock.remainingTime > 0)) {
    sink.anomaly(`${holder} was handed a lock with no validity left (${lock.remainingTime} ms)`);
  }
  if (op.fencing && !(typeof lock.fencingToken === 'number' && lock.fencingToken > 0)) {
    sink.anomaly(`${holder} got no fencing token (${String(lock.fencingToken)})`);
  }
  if (context.tracing) {
    context.trace(
      `${holder} GRANTED ${op.resources.join(',')} token=${lock.fencingToken} owner=${context.ownerName(lock.value)}`,
    );
  }
  const now = context.scheduler.now;
  return { start: now, end: now };
}

function record(lock: Lock, holder: string, section: Section, sink: ClientSink): void {
  const { context } = sink;
  const { start, end } = section;
  if (context.tracing)
    context.trace(`${holder} END (worked until ${end.toFixed(4)}, ${(end - start).toFixed(3)} ms)`);
  for (const resource of lock.resources) {
    sink.section({
      resource,
      holder,
      start,
      end,
      token: lock.fencingToken,
      mode: lock.mode,
      permit: lock.permit,
    });
  }
}

/**
 * The critical section: work for `ms` on the client's clock, but never past what the client believes is its
 * validity — before each step it reads `lock.remainingTime` (which an extension may have raised, and a loss
 * set to 0) and works at most that long; inside `using()` it also stops the moment `lock.signal` aborts
 * (outside, nothing aborts it: a loss is seen through `remainingTime`). `section.end` is
 * moved to the true time at which each stretch of work ended (time spent waiting for `extend()` between two
 * stretches is not work).
 */
async function work(
  clock: DriftingClock,
  lock: Lock,
  ms: number,
  section: Section,
  signal?: AbortSignal,
  remainingOf: () => number = () => lock.remainingTime,
): Promise<void> {
  let left = ms;
  while (left > 1e-9) {
    const remaining = remainingOf();
    if (!(remaining > 1e-9) || signal?.aborted) return;
    const step = Math.min(left, remaining);
    const began = clock.now();
    const aborted = await sleepUnlessAborted(clock, step, signal);
    section.end = clock.scheduler.now;
    left -= clock.now() - began;
    if (aborted) return;
  }
}

function sleep(clock: DriftingClock, ms: number): Promise<void> {
  return new Promise((resolve) => {
    clock.setTimeout(resolve, ms);
  });
}

function sleepUnlessAborted(clock: DriftingClock, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (!signal) return new Promise((resolve) => clock.setExactTimeout(() => resolve(false), ms));
  return new Promise((resolve) => {
    let timer: Timer | undefined = undefined;
    const onAbort = () => {
      timer?.cancel();
      resolve(true);
    };
    timer = clock.setExactTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(false);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error);
}
