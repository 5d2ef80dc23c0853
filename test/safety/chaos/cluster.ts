import { Redis } from 'ioredis';
import { RedisNodes, StartRedisNodesOptions, TcpProxy, startRedisNodes, startTcpProxy } from '../../support';
import { ClientBuild, buildClient } from './build-client';
import { ClientProcess, PhaseReport } from './client-process';
import { FencedResources, Rejection } from './fenced-resources';
import { ClientPhase, EntryRecord, NO_INFO_USER, SectionRecord, WaitingRecord } from './protocol';

/** Event-loop delays above this are recorded, ms. */
const LAG_THRESHOLD = 50;

/** One entry of the fault log; `t` is ms since the cluster's base instant (CLOCK_MONOTONIC). */
export interface FaultEvent {
  readonly t: number;
  readonly kind:
    | 'kill'
    | 'starting'
    | 'started'
    | 'pause'
    | 'resume'
    | 'cut'
    | 'heal'
    | 'latency'
    | 'client-pause'
    | 'client-resume'
    | 'window'
    | 'note';
  readonly node?: number;
  readonly client?: number;
  readonly ms?: number;
  readonly note?: string;
}

/** An event loop (the parent's, `client` undefined, or a client's) held up for `ms` until `t`. */
export interface Lag {
  readonly t: number;
  readonly ms: number;
  readonly client?: number;
}

/** The outcome of one phase: every client's report plus the faults injected meanwhile. */
export interface PhaseRun {
  readonly name: string;
  readonly from: number;
  readonly to: number;
  readonly reports: PhaseReport[];
  readonly events: FaultEvent[];
  readonly rejections: Rejection[];
  readonly fencedWrites: number;
  /** Event-loop delays of the parent and the clients during the phase: how starved the host was. */
  readonly lags: Lag[];
}

/**
 * Five real redis-server nodes, client processes that reach each node through their own TCP proxy, the
 * fault primitives (each one logged with its time) and the fenced resources the clients write to.
 */
export class ChaosCluster {
  readonly events: FaultEvent[] = [];
  private fenced = new FencedResources(() => this.now());
  private readonly latencies = new Map<string, number>();
  private entryWaiters = new Set<(entry: EntryRecord) => void>();
  private sectionWaiters = new Set<(section: SectionRecord) => void>();
  private waitingWaiters = new Set<(waiting: WaitingRecord) => void>();
  private build: ClientBuild | undefined;
  private readonly lags: Lag[] = [];
  private lagTimer: NodeJS.Timeout | undefined;

  private constructor(
    readonly nodes: RedisNodes,
    /** proxies[client][node] */
    readonly proxies: TcpProxy[][],
    readonly clients: ClientProcess[],
    readonly base: bigint,
  ) {}

  /** `startNodes`: how the nodes start (the clock-step runs start theirs under a clock shim). */
  static async start(
    nodeCount: number,
    clientCount: number,
    startNodes: (count: number, options: StartRedisNodesOptions) => Promise<RedisNodes> = startRedisNodes,
  ): Promise<ChaosCluster> {
    const base = process.hrtime.bigint();
    // Faults need nodes this process can kill and pause: external nodes (REDLOCK_TEST_NODES) will not do.
    // Every node also has a user that may not run INFO, for the phase that runs the guard's portable mode.
    const { name, password } = NO_INFO_USER;
    const extraArgs = ['--user', name, 'on', `>${password}`, '~*', '&*', '+@all', '-info'];
    const nodes = await startNodes(nodeCount, {
      extraArgs,
      ...(process.env.REDLOCK_TEST_NODES ? { source: 'path' } : {}),
    });
    const proxies: TcpProxy[][] = [];
    const clients: ClientProcess[] = [];
    const cluster = new ChaosCluster(nodes, proxies, clients, base);
    try {
      for (let c = 0; c < clientCount; c++) {
        proxies.push(await Promise.all(nodes.nodes.map((node) => startTcpProxy(node.port))));
      }
      const onFence = (client: number, resource: string, token: number) =>
        cluster.fenced.write(client, resource, token);
      const build = (cluster.build = buildClient());
      const started = await Promise.allSettled(
        proxies.map((list, c) =>
          ClientProcess.start(
            c,
            build,
            list.map((proxy) => proxy.url),
            base,
            onFence,
          ),
        ),
      );
      for (const result of started) if (result.status === 'fulfilled') clients.push(result.value);
      for (const client of clients) {
        client.onEntry = (entry) => {
          for (const waiter of [...cluster.entryWaiters]) waiter(entry);
        };
        client.onSection = (section) => {
          for (const waiter of [...cluster.sectionWaiters]) waiter(section);
        };
        client.onLag = (t, ms) => cluster.lags.push({ t, ms, client: client.index });
        client.onWaiting = (waiting) => {
          for (const waiter of [...cluster.waitingWaiters]) waiter(waiting);
        };
      }
      cluster.watchLag();
      const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (failed) throw failed.reason;
      return cluster;
    } catch (error) {
      await cluster.close();
      throw error;
    }
  }

  /** ms since the base instant, on the clock the clients use. */
  now(): number {
    return Number(process.hrtime.bigint() - this.base) / 1e6;
  }

  log(kind: FaultEvent['kind'], detail: Omit<FaultEvent, 't' | 'kind'> = {}): void {
    this.events.push({ t: this.now(), kind, ...detail });
  }

  get nodeCount(): number {
    return this.nodes.nodes.length;
  }

  get clientCount(): number {
    return this.clients.length;
  }

  // --- faults --------------------------------------------------------------------------------------------

  /** kill -9; logged once the process is gone. */
  async kill(node: number): Promise<void> {
    if (!this.nodes.nodes[node].running) return;
    await this.nodes.nodes[node].kill();
    this.log('kill', { node });
  }

  /** Starts a killed node again, empty. */
  async start(node: number): Promise<void> {
    if (this.nodes.nodes[node].running) return;
    this.log('starting', { node });
    await this.nodes.nodes[node].start();
    this.log('started', { node });
  }

  async restartEmpty(node: number): Promise<void> {
    await this.kill(node);
    await this.start(node);
  }

  /** SIGSTOP; logged after the signal was sent. */
  async pause(node: number): Promise<void> {
    const handle = this.nodes.nodes[node];
    if (!handle.running || handle.paused) return;
    await handle.pause();
    this.log('pause', { node });
  }

  /** SIGCONT; logged before the signal is sent. */
  async resume(node: number): Promise<void> {
    const handle = this.nodes.nodes[node];
    if (!handle.paused) return;
    this.log('resume', { node });
    await handle.resume();
  }

  /** SIGSTOP of a client process (a waiter that stops renewing its tickets); `note` says why it was chosen. */
  pauseClient(client: number, note?: string): void {
    if (!this.clients[client].running || this.clients[client].paused) return;
    this.clients[client].pause();
    this.log('client-pause', { client, ...(note === undefined ? {} : { note }) });
  }

  resumeClient(client: number): void {
    if (!this.clients[client].paused) return;
    this.log('client-resume', { client });
    this.clients[client].resume();
  }

  /** Cuts one client off from one node (an asymmetric partition). */
  cut(client: number, node: number): void {
    this.proxies[client][node].cut();
    this.log('cut', { client, node });
  }

  heal(client: number, node: number): void {
    this.log('heal', { client, node });
    this.proxies[client][node].heal();
  }

  /** Cuts every client off from `node`. */
  isolate(node: number): void {
    for (let c = 0; c < this.clientCount; c++) this.cut(c, node);
  }

  latency(client: number, node: number, ms: number): void {
    this.proxies[client][node].setLatency(ms);
    this.latencies.set(`${client}/${node}`, ms);
    this.log('latency', { client, node, ms });
  }

  /** Every client and node running and resumed, every link healed and without latency. */
  async healAll(): Promise<void> {
    for (let c = 0; c < this.clientCount; c++) this.resumeClient(c);
    for (let node = 0; node < this.nodeCount; node++) {
      await this.resume(node);
      await this.start(node);
    }
    for (let c = 0; c < this.clientCount; c++) {
      for (let node = 0; node < this.nodeCount; node++) {
        if (this.isCut(c, node)) this.heal(c, node);
        if ((this.latencies.get(`${c}/${node}`) ?? 0) > 0) this.latency(c, node, 0);
      }
    }
  }

  /** Whether the last cut/heal of this link was a cut. */
  isCut(client: number, node: number): boolean {
    for (let i = this.events.length - 1; i >= 0; i--) {
      const e = this.events[i];
      if (e.client === client && e.node === node && (e.kind === 'cut' || e.kind === 'heal')) {
        return e.kind === 'cut';
      }
    }
    return false;
  }

  /**
   * Resolves once none of `keys` is on any of `nodes` (expired, or deleted): each node's keyspace
   * notifications for the keys wake a re-read, subscribed before the first read, so no change slips between.
   */
  async keysGoneFrom(nodes: readonly number[], keys: readonly string[]): Promise<void> {
    await Promise.all(
      nodes.map(async (node) => {
        const handle = this.nodes.nodes[node];
        const subscriber: Redis = handle.redis();
        const reader: Redis = handle.redis();
        try {
          await reader.config('SET', 'notify-keyspace-events', 'KA');
          let changed = (): void => undefined;
          subscriber.on('message', () => changed());
          await subscriber.subscribe(...keys.map((key) => `__keyspace@0__:${key}`));
          for (;;) {
            const next = new Promise<void>((resolve) => (changed = resolve));
            if ((await reader.exists(...keys)) === 0) return;
            await next;
          }
        } finally {
          subscriber.disconnect();
          reader.disconnect();
        }
      }),
    );
  }

  /**
   * Resolves with the next section that begins and satisfies `accept`, or undefined after `timeout` ms.
   * Lets a fault pattern aim at a holder that has just acquired.
   */
  waitForEntry(accept: (entry: EntryRecord) => boolean, timeout: number): Promise<EntryRecord | undefined> {
    return this.nextReport(this.entryWaiters, accept, timeout);
  }

  /**
   * Resolves true once `done()` holds — checked now and at every section a client reports (sections are
   * reported when they end) — or false after `timeout` ms. Lets a fault pattern stop as soon as the checker
   * has what it looks for.
   */
  async waitForSections(done: () => boolean, timeout: number): Promise<boolean> {
    if (done()) return true;
    return (await this.nextReport(this.sectionWaiters, () => done(), timeout)) !== undefined;
  }

  /**
   * Resolves with the next `waiting` event (a fair waiter learnt its place) that satisfies `accept`, or undefined
   * after `timeout` ms. Lets a fault pattern aim at a waiter that is queued.
   */
  waitForWaiting(
    accept: (waiting: WaitingRecord) => boolean,
    timeout: number,
  ): Promise<WaitingRecord | undefined> {
    return this.nextReport(this.waitingWaiters, accept, timeout);
  }

  /** The next report to `waiters` that satisfies `accept`, or undefined after `timeout` ms (the deadline). */
  private nextReport<T>(
    waiters: Set<(report: T) => void>,
    accept: (report: T) => boolean,
    timeout: number,
  ): Promise<T | undefined> {
    return new Promise((resolve) => {
      const done = (report: T | undefined) => {
        clearTimeout(timer);
        waiters.delete(waiter);
        resolve(report);
      };
      const waiter = (report: T) => {
        if (accept(report)) done(report);
      };
      const timer = setTimeout(() => done(undefined), timeout);
      waiters.add(waiter);
    });
  }

  // --- what the clients do -------------------------------------------------------------------------------

  /** Resolves once every client's Redlock instance of the current phase finished connecting. */
  async clientsConnected(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.connected));
  }

  /** Every section reported so far in the current phase, by every client. */
  sectionsSoFar(): SectionRecord[] {
    return this.clients.flatMap((client) => client.sections);
  }

  /** Records the parent's own event-loop delays: the proxies run here, so they stall with it. */
  private watchLag(): void {
    const period = 20;
    let expected = this.now() + period;
    this.lagTimer = setInterval(() => {
      const t = this.now();
      if (t - expected > LAG_THRESHOLD) this.lags.push({ t, ms: t - expected });
      expected = t + period;
    }, period);
    this.lagTimer.unref();
  }

  // --- phases --------------------------------------------------------------------------------------------

  /**
   * Runs the clients with `phase` (or each client with its own) while `faults` runs, then heals everything,
   * stops the clients and collects what they recorded. Fenced resources start fresh for every phase.
   */
  async runPhase(
    phase: ClientPhase | ((client: number) => ClientPhase),
    faults: () => Promise<void>,
  ): Promise<PhaseRun> {
    const phaseOf = typeof phase === 'function' ? phase : () => phase;
    const name = phaseOf(0).name;
    const fenced = (this.fenced = new FencedResources(() => this.now()));
    const firstEvent = this.events.length;
    const firstLag = this.lags.length;
    const from = this.now();
    this.log('note', { note: `phase ${name} starts` });
    this.clients.forEach((client, c) => client.startPhase(phaseOf(c)));
    try {
      await faults();
    } finally {
      await this.healAll();
    }
    const reports = await Promise.all(this.clients.map((client) => client.stopPhase()));
    const to = this.now();
    this.log('note', { note: `phase ${name} ends` });
    return {
      name,
      from,
      to,
      reports,
      events: this.events.slice(firstEvent),
      rejections: fenced.rejections,
      fencedWrites: fenced.writes,
      lags: this.lags.slice(firstLag),
    };
  }

  /** Stops everything this cluster started: client processes, proxies, redis-servers. Idempotent. */
  async close(): Promise<void> {
    clearInterval(this.lagTimer);
    await Promise.allSettled(this.clients.map((client) => client.close()));
    await Promise.allSettled(this.proxies.flat().map((proxy) => proxy.close()));
    await this.nodes.stop();
    this.build?.dispose();
  }
}
