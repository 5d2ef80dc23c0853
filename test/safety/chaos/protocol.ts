/**
 * What the chaos parent and its client processes say to each other over the IPC channel. Times are ms since
 * the parent's base instant on CLOCK_MONOTONIC (`process.hrtime.bigint()`), which all processes on a Linux
 * machine share, so intervals from different clients can be compared directly.
 */

/** How the clients of one phase behave. */
export interface ClientPhase {
  readonly name: string;
  readonly seed: number;
  readonly ttl: number;
  readonly restartGuard: boolean | number;
  readonly nodeTimeout: number;
  /** NEGATIVE CONTROL ONLY: the core hands out locks whose validity already ran out. */
  readonly unsafeSkipValidityCheck: boolean;
  /** Resources with their weights; in a name, `{client}` becomes the client number, `{half}` its parity. */
  readonly resources: readonly (readonly [string, number])[];
  /** Loop styles with their weights (see {@link LoopStyle}). */
  readonly styles: readonly (readonly [LoopStyle, number])[];
  /** Planned length of the work of a `wait` / `poll` section, ms. */
  readonly work: readonly [number, number];
  /** Planned length of the work of a `using` section (may exceed the ttl: auto-extension), ms. */
  readonly longWork: readonly [number, number];
  /** How long one acquisition may wait or poll for a busy resource, ms. */
  readonly acquireWait: number;
  /** Sleep between two `tryAcquire` polls, ms. */
  readonly pollDelay: readonly [number, number];
  /** Pause between two iterations, ms. */
  readonly pause: readonly [number, number];
  /**
   * A correct client stops working `margin` ms before its validity deadline and skips the fenced write once
   * the lock is no longer valid. `false`: a naive client that trusts whatever `acquire()` returned.
   */
  readonly respectDeadline: boolean;
  readonly margin: number;
  /**
   * Connect as the nodes' ACL user that may not run INFO (`NO_INFO_USER`): the restart guard then runs in its
   * portable mode (the data-age marker), as on a managed Redis that denies INFO.
   */
  readonly portableGuard?: boolean;
  /**
   * A mixed fleet: node i is reached through the library's own ioredis client (i % 3 = 0), a node-redis client
   * (1) or an iovalkey client (2), all created by the client process with their default settings.
   */
  readonly mixedClients?: boolean;
  /** Read-write locks: the chance that an iteration on a resource that is not a semaphore is a read. */
  readonly readShare?: number;
  /** Resources that are counting semaphores, with their number of permits. */
  readonly permits?: Readonly<Record<string, number>>;
  /** The Redlock option `detectClockSteps` (unset: the library's default). */
  readonly detectClockSteps?: boolean;
  /**
   * Fair waiting (docs/DESIGN.md §18): even clients set `fair: true` on their instance, odd clients pass it per
   * call (writers only: a reader's call refuses it). Unset: not fair.
   */
  readonly fair?: boolean;
}

/** An ACL user on every chaos node with every command but INFO (set up by `ChaosCluster.start`). */
export const NO_INFO_USER = { name: 'noinfo', password: 'noinfo-pass' } as const;

/**
 * - `wait`: `acquire()` with a wait budget (waits for release announcements / the holder's ttl);
 * - `poll`: `tryAcquire()` in a loop with short sleeps (what a job that must not queue up does);
 * - `using`: `using()` with auto-extension, work possibly longer than the ttl, stopping when `signal` aborts.
 */
export type LoopStyle = 'wait' | 'poll' | 'using';

export type ParentMessage =
  | {
      readonly type: 'init';
      readonly client: number;
      readonly urls: readonly string[];
      readonly base: string;
    }
  | { readonly type: 'phase'; readonly phase: ClientPhase }
  | { readonly type: 'stop' }
  | { readonly type: 'fenced'; readonly seq: number; readonly accepted: boolean }
  /** Re-subscribe scenario: hold a lock and wait for it through `url` (one node), then continue when told. */
  | { readonly type: 'resubscribe'; readonly url: string }
  | { readonly type: 'continue' };

export type ClientMessage =
  | { readonly type: 'ready'; readonly client: number }
  | { readonly type: 'entered'; readonly entry: EntryRecord }
  | { readonly type: 'section'; readonly section: SectionRecord }
  | { readonly type: 'failure'; readonly failure: FailureRecord }
  | {
      readonly type: 'fence';
      readonly seq: number;
      readonly client: number;
      readonly resource: string;
      readonly token: number;
    }
  /** The phase's Redlock instance finished `connect()` (connected, or gave up): its loop starts now. */
  | { readonly type: 'connected'; readonly client: number }
  | { readonly type: 'stopped'; readonly client: number; readonly stats: ClientStats }
  /** The client's event loop was held up this long (a starved host, not a lock problem). */
  | { readonly type: 'lag'; readonly client: number; readonly t: number; readonly ms: number }
  /** The phase's Redlock instance saw node `node`'s wall clock step (its `clock-step` event). */
  | { readonly type: 'clock-step'; readonly client: number; readonly node: number; readonly step: number }
  /** The phase's Redlock instance emitted `waiting`: a fair waiter learnt its place in the queue. */
  | { readonly type: 'waiting'; readonly waiting: WaitingRecord }
  | { readonly type: 'log'; readonly client: number; readonly message: string }
  | { readonly type: 'resubscribe'; readonly step: 'waiting' | 'done'; readonly error?: string };

/** Sent the moment a section begins, so fault patterns can aim at a fresh holder. */
export interface EntryRecord {
  readonly client: number;
  readonly resource: string;
  readonly acqStart: number;
  readonly start: number;
  readonly remaining: number;
}

/** A fair waiter's place in the queue on `resource`, as its `waiting` event said (1: it goes next). */
export interface WaitingRecord {
  readonly client: number;
  readonly resource: string;
  readonly t: number;
  readonly position: number;
  readonly waited: number;
}

/** One critical section, as its client saw it. */
export interface SectionRecord {
  readonly phase: string;
  readonly client: number;
  readonly resource: string;
  readonly style: LoopStyle;
  readonly token: number;
  /** When the acquisition that led to this section began. */
  readonly acqStart: number;
  /** Right after `acquire()` returned, before any work. */
  readonly start: number;
  /** After the work and the fenced write. */
  readonly end: number;
  /** The lock's validity deadline as known at the end (after any extension). */
  readonly deadline: number;
  /** `lock.remainingTime` when the section began. */
  readonly remainingAtStart: number;
  readonly attempts: number;
  /** Whether the fenced resource took the write (undefined: skipped because the lock was no longer valid). */
  readonly fenceAccepted: boolean | undefined;
  /** `using()`: the lock was declared lost while the work ran. */
  readonly lost: boolean;
  /** A read lock's section (no fenced write: a reader does not write); otherwise a writer's. */
  readonly mode?: 'read' | 'write';
  /** A semaphore's permit (its fenced writes go to `<resource>#<permit>`). */
  readonly permit?: number;
  /** Fair waiting: the furthest-back place in the queue this acquisition learnt (undefined: it learnt none). */
  readonly place?: number;
}

/** An acquisition that gave up. */
export interface FailureRecord {
  readonly phase: string;
  readonly client: number;
  readonly resource: string;
  readonly style: LoopStyle;
  readonly acqStart: number;
  readonly acqEnd: number;
  /** The error class (`LockBusyError`, `QuorumUnavailableError`, ...). */
  readonly error: string;
  /** The last attempt's vote per node, in node order (`acquired`, `busy`, `timeout`, ...). */
  readonly votes: string;
}

export interface ClientStats {
  readonly sections: number;
  readonly failures: number;
  readonly pollAttempts: number;
  readonly releases: number;
  readonly wokenByRelease: number;
  readonly wokenByTimer: number;
  readonly locksLost: number;
  /** How each node's restart guard decides, as `connect()` reported it (in node order). */
  readonly guardModes: readonly string[];
  /** Steps of a node's wall clock the instance saw (its `clock-step` events). */
  readonly clockSteps?: number;
  /** Fair waiting: the instance's `waiting` events, and the furthest-back place any of them gave. */
  readonly waitingEvents?: number;
  readonly maxPlace?: number;
}
