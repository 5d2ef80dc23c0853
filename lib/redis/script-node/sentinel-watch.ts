import { ended } from './client-end';

/** What the watch uses of an ioredis client (no ioredis types: declarations must not need the package). */
interface Client {
  readonly status: string;
  readonly options?: object;
  on(event: 'connect', listener: () => void): unknown;
  off(event: 'connect', listener: () => void): unknown;
  once(event: 'end', listener: () => void): unknown;
}

/**
 * The connections a Sentinel-managed ioredis client (`failoverDetector: true`) opens to its sentinels, over its
 * whole life: each new connection to a primary starts a failover detector with connections of its own, and
 * cleans the previous one up without waiting for its sockets to close. {@link close} ends the current ones
 * (QUIT does not reach them: ioredis 5 closes them only in its connector's disconnect()) and waits for every
 * one of them to close, so no socket of the client outlives `quit()` — on a loaded host a previous detector's
 * socket can still be closing then.
 */
export class SentinelWatch {
  private readonly watchers = new Set<Client>();
  private readonly record = () => {
    for (const watcher of this.watchers) if (watcher.status === 'end') this.watchers.delete(watcher);
    for (const watcher of this.current()) this.watchers.add(watcher);
  };

  private constructor(private readonly client: Client) {
    // A detector starts on its connection's 'connect', before the client's own 'connect' listeners run.
    client.on('connect', this.record);
    this.record();
  }

  /** Follows `client`'s connections to its sentinels; undefined for a client without a failover detector. */
  static of(client: Client): SentinelWatch | undefined {
    const options = (client as unknown as { options?: { sentinels?: unknown; failoverDetector?: unknown } })
      .options;
    return options?.sentinels && options.failoverDetector ? new SentinelWatch(client) : undefined;
  }

  /**
   * Call before closing the client: no failover detector starts from here on. A connection whose connect
   * completes while the client is being closed would otherwise start one, subscribed to the sentinels for good.
   */
  stop(): void {
    const connector = (this.client as unknown as SentinelManaged).connector;
    if (connector?.options) connector.options.failoverDetector = false;
  }

  /** Call once the client itself closed: ends the current detector and waits until every watcher's socket closed. */
  async close(): Promise<void> {
    this.client.off('connect', this.record);
    this.record();
    // cleanup() disconnects each watcher; the client's own disconnect() would also arm ioredis' disconnect timer
    // for its socket, which QUIT already closed (the timer then waits it out).
    this.detector()?.cleanup?.();
    await Promise.all([...this.watchers].map((watcher) => ended(watcher)));
    this.watchers.clear();
  }

  private detector(): FailoverDetector | null | undefined {
    return (this.client as unknown as SentinelManaged).connector?.failoverDetector;
  }

  private current(): Client[] {
    const sentinels = this.detector()?.sentinels;
    return Array.isArray(sentinels) ? sentinels.map((sentinel) => sentinel.client) : [];
  }
}

/** The ioredis internals of a Sentinel-managed client that hold its connections to the sentinels. */
interface FailoverDetector {
  sentinels?: { client: Client }[];
  cleanup?(): void;
}
interface SentinelManaged {
  connector?: { failoverDetector?: FailoverDetector | null; options?: { failoverDetector?: boolean } };
}
