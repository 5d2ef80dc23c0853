import { Keyspace } from './keyspace';
import { PubSub } from './pub-sub';

/** Where a model node reads time. */
export interface ModelClock {
  /** Milliseconds by which keys expire (a simulation's true time; `Date.now()` for in-memory nodes). */
  now(): number;
  /** The node's wall clock, what `TIME` answers, in µs. */
  wallMicros(): number;
}

/** How one model node behaves beyond the scripts. */
export interface ModelSpec {
  readonly name: string;
  /**
   * How `INFO server` counts `uptime_in_seconds`: 1000 as Redis does (whole wall-clock seconds now minus whole
   * seconds at start, up to a second more than the real uptime), 1 as an honest floor of the exact uptime.
   */
  readonly uptimeGranularity: number;
  /**
   * Whether the acquire script can read `INFO` here (precise guard mode). False: denied (ACL, managed service),
   * so the client sends "INFO not readable" and the script runs the portable mode (the data-age marker).
   */
  readonly infoReadable: boolean;
}

interface Queued {
  readonly connection: number;
  readonly run: () => void;
}

/**
 * A model Redis server's life beside its scripts: up or crashed, paused (commands wait in a backlog), its
 * run_id and uptime, its keys and its pub/sub. Faults: crash (data — or only the last writes — and watchers
 * lost; commands arriving meanwhile fail), restart (uptime from zero, a new run_id), pause (commands wait; on
 * resume they run, each connection's own order kept; with `random`, the order across connections shuffled, as
 * SIGCONT'd Redis does).
 */
export class ModelServer {
  up = true;
  paused = false;
  /** INFO's run_id: new on every start. */
  runId: string;
  protected readonly keyspace: Keyspace;
  protected readonly pubSub = new PubSub();
  private boots = 0;
  /** The server's wall clock (µs) when it last started. */
  private bootWallUs: number;
  private backlog: Queued[] = [];

  constructor(
    protected readonly clock: ModelClock,
    readonly spec: ModelSpec,
    /** The node's wall clock (µs) when it started. */
    bootWallUs: number,
    /** Picks among connections when a paused backlog runs (undefined: in arrival order). */
    private readonly random?: () => number,
  ) {
    this.keyspace = new Keyspace(() => clock.now());
    this.bootWallUs = bootWallUs;
    this.runId = this.nextRunId();
  }

  get name(): string {
    return this.spec.name;
  }

  /** A command arrived from `connection`: run it now, queue it (paused), or report the node down. */
  deliver(connection: number, run: () => void): 'ran' | 'queued' | 'down' {
    if (!this.up) return 'down';
    if (this.paused) {
      this.backlog.push({ connection, run });
      return 'queued';
    }
    run();
    return 'ran';
  }

  /** Stops: every key written after `keptUntil` (default: every key) and every watcher lost, the backlog dropped. */
  crash(keptUntil = -Infinity): void {
    this.up = false;
    this.paused = false;
    this.keyspace.clear(keptUntil);
    this.backlog = [];
    this.pubSub.dropWatchers();
  }

  /** Starts again (after crash()): uptime from `bootWallUs` (default: now), a new run_id. */
  restart(bootWallUs?: number): void {
    this.up = true;
    this.bootWallUs = bootWallUs ?? this.clock.wallMicros();
    this.runId = this.nextRunId();
  }

  /** The connections dropped, the data kept (a network fault): every watcher hears `'lost'` and is gone. */
  dropWatchers(): void {
    this.pubSub.dropWatchers();
  }

  /** FLUSHALL: every key gone, the server stays up (uptime and run_id unchanged). */
  flushAll(): void {
    this.keyspace.clear();
  }

  /** SET key value [PX ttl]: data written by something else than the scripts (a restored marker, other data). */
  write(key: string, value: string, ttl?: number): void {
    this.keyspace.set(key, value, ttl);
  }

  pause(): void {
    if (this.up) this.paused = true;
  }

  /** Runs the backlog: each connection's commands in order, the connections interleaved (see `random`). */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const queues = new Map<number, Queued[]>();
    for (const item of this.backlog) {
      const queue = queues.get(item.connection);
      if (queue) queue.push(item);
      else queues.set(item.connection, [item]);
    }
    const backlog = this.backlog;
    this.backlog = [];
    if (!this.random) {
      for (const item of backlog) item.run();
      return;
    }
    const lists = [...queues.values()];
    while (lists.length > 0) {
      const index = Math.floor(this.random() * lists.length);
      const item = lists[index].shift() as Queued;
      if (lists[index].length === 0) lists.splice(index, 1);
      item.run();
    }
  }

  /** The value of `key` (lazy expiry, as Redis: a key lives until time passes its expiry). */
  peek(key: string): string | undefined {
    return this.keyspace.get(key)?.value;
  }

  /** Every live string key with its value and PTTL (−1: no ttl), for comparisons. */
  dump(): Map<string, { value: string; pttl: number }> {
    const out = new Map<string, { value: string; pttl: number }>();
    for (const key of this.keyspace.keys()) {
      const entry = this.keyspace.get(key);
      if (entry) out.set(key, { value: entry.value, pttl: this.keyspace.pttl(entry) });
    }
    return out;
  }

  /** For the differential test: the uptime the acquire script would compute now (ms, a second taken off). */
  uptimeForTest(): number {
    return Math.max(0, this.reportedUptimeSeconds() - 1) * 1000;
  }

  /**
   * For the differential test: when `key` expires or expired (Infinity: no ttl; undefined: not written since
   * it was deleted). Reads without expiring, so a key just gone still tells when it went.
   */
  expireAtForTest(key: string): number | undefined {
    return this.keyspace.rawExpireAt(key);
  }

  /** For the differential test: each live readers set, member → expiry (server ms), with its PTTL. */
  dumpSets(): Map<string, { members: Map<string, number>; pttl: number }> {
    const out = new Map<string, { members: Map<string, number>; pttl: number }>();
    for (const key of this.keyspace.keys()) {
      const set = this.keyspace.getSet(key);
      if (set) out.set(key, { members: new Map(set.members), pttl: this.keyspace.pttl(set) });
    }
    return out;
  }

  /** For the differential test: makes `key` a readers set with these members (server ms), as the real one. */
  writeSetForTest(key: string, members: ReadonlyMap<string, number>, ttl?: number): void {
    const now = this.clock.now();
    this.keyspace.putSet(key, {
      members: new Map(members),
      expireAt: ttl === undefined ? Infinity : now + ttl,
      writtenAt: now,
    });
  }

  /** For the differential test: a readers set's expiry (model time) and its members' (server ms). */
  setForTest(key: string): { expireAt: number; members: ReadonlyMap<string, number> } | undefined {
    return this.keyspace.rawSet(key);
  }

  /** `uptime_in_seconds` as INFO reports it (see `uptimeGranularity`). */
  protected reportedUptimeSeconds(): number {
    const nowUs = this.clock.wallMicros();
    if (this.spec.uptimeGranularity >= 1000) {
      return Math.max(0, Math.floor(nowUs / 1e6) - Math.floor(this.bootWallUs / 1e6));
    }
    return Math.max(0, Math.floor((nowUs - this.bootWallUs) / 1e6));
  }

  /** The script's `TIME` in whole ms: seconds × 1000 + floor(µs / 1000). */
  protected wallMs(): number {
    return Math.floor(this.clock.wallMicros() / 1000);
  }

  private nextRunId(): string {
    this.boots++;
    return `${this.spec.name.replace(/\W/g, '')}boot${this.boots}`;
  }
}
