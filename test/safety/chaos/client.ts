/**
 * One chaos client: a separate Node process with its own Redlock instance, reaching every Redis node through
 * its own TCP proxy (so the parent can cut this client off from one node, or slow one link down). It loops
 * acquire → critical section → release and reports every section to the parent over IPC.
 *
 * Started by the parent with `fork(..., { execArgv: ['-r', 'ts-node/register/transpile-only'] })`.
 */
import { performance } from 'node:perf_hooks';
// The core and its ioredis layer, not lib/index.ts: the Nest layer (@nestjs/*, rxjs) would cost each of the six
// client processes about 0.2 s of CPU to load, for nothing.
import { Lock, NodeVote } from '../../../lib/core';
import { NodeSpec, Redlock } from '../../../lib/redis';
import Valkey from 'iovalkey';
import { createClient } from 'redis';
import { ClientMessage, ClientPhase, ClientStats, LoopStyle, NO_INFO_USER, ParentMessage } from './protocol';
import { Random } from './random';
import { resubscribeScenario } from './resubscribe-scenario';
import { delay as sleep } from '../../support/waits';

let client = -1;
let urls: readonly string[] = [];
let base = 0n;
/** performance.now() + perfOffset = ms since base (both read CLOCK_MONOTONIC). */
let perfOffset = 0;
let stopping: AbortController | undefined;
let fenceSeq = 0;
const fences = new Map<number, (accepted: boolean) => void>();

/** Event-loop delays above this are reported to the parent, ms. */
const LAG_THRESHOLD = 50;

const now = (): number => Number(process.hrtime.bigint() - base) / 1e6;

function send(message: ClientMessage): void {
  if (process.connected) process.send!(message);
}

/** The offset between the two clocks, from the tightest of a few paired readings. */
function measurePerfOffset(): number {
  let best = { gap: Infinity, offset: 0 };
  for (let i = 0; i < 50; i++) {
    const before = now();
    const perf = performance.now();
    const after = now();
    if (after - before < best.gap) best = { gap: after - before, offset: (before + after) / 2 - perf };
  }
  return best.offset;
}

/** Writes to the parent's fenced resource; resolves whether the token was accepted. */
function fencedWrite(resource: string, token: number): Promise<boolean> {
  const seq = ++fenceSeq;
  return new Promise((resolve) => {
    fences.set(seq, resolve);
    send({ type: 'fence', seq, client, resource, token });
  });
}

/** How one iteration locks: a writer or a reader, or a permit of a semaphore; `fair` passed per call. */
interface LockKind {
  readonly mode: 'read' | 'write';
  readonly permits: number | undefined;
  readonly fair?: true;
}

class Loop {
  readonly stats = {
    sections: 0,
    failures: 0,
    pollAttempts: 0,
    releases: 0,
    waitingEvents: 0,
    maxPlace: 0,
  };
  private readonly random: Random;
  /** The furthest-back place in the queue the current acquisition learnt (fair waiting). */
  private place: number | undefined;

  constructor(
    private readonly phase: ClientPhase,
    private readonly redlock: Redlock,
    private readonly stop: AbortSignal,
  ) {
    this.random = new Random(phase.seed).fork(client);
  }

  /** A `waiting` event: it belongs to the acquisition in progress (one at a time per client). */
  onWaiting(position: number): void {
    this.stats.waitingEvents++;
    this.stats.maxPlace = Math.max(this.stats.maxPlace, position);
    this.place = Math.max(this.place ?? 0, position);
  }

  async run(): Promise<void> {
    while (!this.stop.aborted) {
      const resource = this.random
        .weighted(this.phase.resources)
        .replace('{client}', String(client))
        .replace('{half}', String(client % 2));
      const style = this.random.weighted(this.phase.styles);
      try {
        await this.iteration(resource, style);
      } catch (error) {
        send({
          type: 'log',
          client,
          message: `iteration failed: ${String((error as Error)?.stack ?? error)}`,
        });
      }
      await sleep(this.random.int(this.phase.pause[0], this.phase.pause[1]));
    }
  }

  private async iteration(resource: string, style: LoopStyle): Promise<void> {
    const acqStart = now();
    this.place = undefined;
    const permits = this.phase.permits?.[resource];
    const mode: 'read' | 'write' =
      permits === undefined && this.random.chance(this.phase.readShare ?? 0) ? 'read' : 'write';
    // Fair per call on odd clients (even ones have it as their instance's default), where a call may ask.
    const callFair =
      this.phase.fair === true && client % 2 === 1 && mode === 'write' && permits === undefined;
    const kind: LockKind = { mode, permits, ...(callFair ? { fair: true } : {}) };
    const work = style === 'using' ? this.phase.longWork : this.phase.work;
    const planned = this.random.int(work[0], work[1]);
    if (style === 'using') {
      let entered = false;
      try {
        await this.redlock.using(
          resource,
          { wait: this.phase.acquireWait, signal: this.stop, ...kind },
          async (lock) => {
            entered = true;
            await this.section(lock, resource, style, acqStart, planned);
          },
        );
      } catch (error) {
        // After the section, a LockLostError only says what the section already recorded.
        if (!entered) this.failed(resource, style, acqStart, error);
      }
      return;
    }
    const lock =
      style === 'wait'
        ? await this.acquireWaiting(resource, style, acqStart, kind)
        : await this.poll(resource, acqStart, kind);
    if (!lock) return;
    try {
      await this.section(lock, resource, style, acqStart, planned);
    } finally {
      await this.redlock.release(lock);
      this.stats.releases++;
    }
  }

  private async acquireWaiting(
    resource: string,
    style: LoopStyle,
    acqStart: number,
    kind: LockKind,
  ): Promise<Lock | undefined> {
    try {
      return await this.redlock.acquire(resource, {
        wait: this.phase.acquireWait,
        signal: this.stop,
        ...kind,
      });
    } catch (error) {
      this.failed(resource, style, acqStart, error);
      return undefined;
    }
  }

  /** tryAcquire until it succeeds or the wait budget is spent; busy and unavailable both mean "poll again". */
  private async poll(resource: string, acqStart: number, kind: LockKind): Promise<Lock | undefined> {
    let lastError: unknown = new Error('LockBusyError');
    while (!this.stop.aborted) {
      this.stats.pollAttempts++;
      try {
        const lock = await this.redlock.tryAcquire(resource, kind);
        if (lock) return lock;
        lastError = { name: 'LockBusyError' };
      } catch (error) {
        lastError = error;
      }
      if (now() - acqStart >= this.phase.acquireWait) break;
      await sleep(this.random.int(this.phase.pollDelay[0], this.phase.pollDelay[1]));
    }
    this.failed(resource, 'poll', acqStart, lastError);
    return undefined;
  }

  private async section(lock: Lock, resource: string, style: LoopStyle, acqStart: number, planned: number) {
    const { respectDeadline, margin } = this.phase;
    const start = now();
    const remainingAtStart = lock.remainingTime;
    send({ type: 'entered', entry: { client, resource, acqStart, start, remaining: remainingAtStart } });
    const stopAt = start + planned;
    if (respectDeadline) {
      // Work in slices, stopping `margin` ms before the validity deadline (which auto-extension may move).
      for (;;) {
        const left = Math.min(stopAt - now(), lock.remainingTime - margin);
        if (left <= 0 || lock.signal.aborted) break;
        await sleep(Math.min(left, 50));
      }
    } else {
      await sleep(planned); // trusts the lock it was given, whatever its remaining time
    }
    let fenceAccepted: boolean | undefined;
    // A reader does not write; a permit holder writes to its permit's own resource (tokens rise per permit).
    const fenced = lock.permit === undefined ? resource : `${resource}#${lock.permit}`;
    if (
      lock.mode !== 'read' &&
      (!respectDeadline || (lock.remainingTime > margin / 2 && !lock.signal.aborted))
    ) {
      fenceAccepted = await fencedWrite(fenced, lock.fencingToken ?? -1);
    }
    const end = now();
    this.stats.sections++;
    send({
      type: 'section',
      section: {
        phase: this.phase.name,
        client,
        resource,
        style,
        token: lock.fencingToken ?? -1,
        acqStart,
        start,
        end,
        deadline: lock.validUntil + perfOffset,
        remainingAtStart,
        attempts: lock.attempts,
        fenceAccepted,
        lost: lock.lostError !== undefined,
        mode: lock.mode,
        permit: lock.permit,
        place: this.place,
      },
    });
  }

  private failed(resource: string, style: LoopStyle, acqStart: number, error: unknown): void {
    if (this.stop.aborted) return; // stopped by the parent: not a failure of the lock
    this.stats.failures++;
    const { name = 'Error', votes = [] } = (error ?? {}) as { name?: string; votes?: NodeVote[] };
    const byNode = urls.map((url) => votes.find((vote) => url.endsWith(`:${vote.node.split(':').pop()}`)));
    const failure = {
      phase: this.phase.name,
      client,
      resource,
      style,
      acqStart,
      acqEnd: now(),
      error: name,
      votes: byNode.map((vote) => vote?.outcome ?? '?').join(' '),
    };
    send({ type: 'failure', failure });
  }
}

/** Reports every time this process's event loop was held up for more than `threshold` ms. */
function watchLag(threshold: number): void {
  const period = 20;
  let expected = now() + period;
  setInterval(() => {
    const t = now();
    const lag = t - expected;
    if (lag > threshold) send({ type: 'lag', client, t, ms: lag });
    expected = t + period;
  }, period).unref();
}

let proceed: (() => void) | undefined;

/** Node i as the phase reaches it: a URL (the library's ioredis client), or an application's client. */
async function nodesOf(phase: ClientPhase): Promise<{ specs: NodeSpec[]; close: () => void }> {
  const { name, password } = NO_INFO_USER;
  if (phase.portableGuard)
    return {
      specs: urls.map((url) => url.replace('redis://', `redis://${name}:${password}@`)),
      close: () => undefined,
    };
  if (!phase.mixedClients) return { specs: [...urls], close: () => undefined };
  const closers: (() => void)[] = [];
  const specs = await Promise.all(
    urls.map(async (url, i): Promise<NodeSpec> => {
      if (i % 3 === 1) {
        const client = createClient({ url });
        client.on('error', () => undefined);
        closers.push(() => void client.destroy());
        // Connected by redlock.connect(); the proxies in front may be cut or slow at this moment.
        return client;
      }
      if (i % 3 === 2) {
        const client = new Valkey(url, { lazyConnect: true });
        client.on('error', () => undefined);
        closers.push(() => client.disconnect());
        return client;
      }
      return url;
    }),
  );
  return { specs, close: () => closers.forEach((close) => close()) };
}

async function runPhase(phase: ClientPhase, stop: AbortSignal): Promise<void> {
  const nodes = await nodesOf(phase);
  const redlock = new Redlock(
    nodes.specs,
    {
      ttl: phase.ttl,
      fencing: true,
      restartGuard: phase.restartGuard,
      nodeTimeout: phase.nodeTimeout,
      wait: phase.acquireWait,
      logger: false,
      ...(phase.detectClockSteps === undefined ? {} : { detectClockSteps: phase.detectClockSteps }),
      ...(phase.fair === true && client % 2 === 0 ? { fair: true } : {}),
    },
    { unsafeSkipValidityCheck: phase.unsafeSkipValidityCheck },
  );
  const loop = new Loop(phase, redlock, stop);
  let clockSteps = 0;
  redlock.on('clock-step', ({ node, step }) => {
    clockSteps++;
    const index = urls.findIndex((url) => url.endsWith(`:${node.split(':').pop()}`));
    send({ type: 'clock-step', client, node: index, step });
  });
  redlock.on('waiting', ({ resources, position, waited }) => {
    loop.onWaiting(position);
    send({ type: 'waiting', waiting: { client, resource: resources.join(','), t: now(), position, waited } });
  });
  let guardModes: string[] = [];
  try {
    const states = await redlock.connect(3_000).finally(() => send({ type: 'connected', client }));
    guardModes = states.map((state) => state.guardMode ?? '?');
    await loop.run();
  } finally {
    await redlock.quit(500);
    nodes.close();
    const stats: ClientStats = { ...loop.stats, ...redlock.stats, guardModes, clockSteps };
    send({ type: 'stopped', client, stats });
  }
}

process.on('message', (message: ParentMessage) => {
  switch (message.type) {
    case 'init':
      client = message.client;
      urls = message.urls;
      base = BigInt(message.base);
      perfOffset = measurePerfOffset();
      watchLag(LAG_THRESHOLD);
      send({ type: 'ready', client });
      break;
    case 'phase':
      stopping = new AbortController();
      void runPhase(message.phase, stopping.signal).catch((error: unknown) =>
        send({ type: 'log', client, message: `phase failed: ${String((error as Error)?.stack ?? error)}` }),
      );
      break;
    case 'stop':
      stopping?.abort();
      break;
    case 'fenced':
      fences.get(message.seq)?.(message.accepted);
      fences.delete(message.seq);
      break;
    case 'resubscribe':
      void resubscribeScenario(message.url, {
        waiting: () =>
          new Promise<void>((resolve) => {
            proceed = resolve;
            send({ type: 'resubscribe', step: 'waiting' });
          }),
        done: (error) => send({ type: 'resubscribe', step: 'done', error }),
      });
      break;
    case 'continue':
      proceed?.();
      break;
  }
});

// The parent is gone (or closed the channel): never outlive it.
process.on('disconnect', () => process.exit(0));
