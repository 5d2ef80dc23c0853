import * as net from 'node:net';

export interface TcpProxy {
  /** Listens on 127.0.0.1:<port> and forwards every connection to the target. */
  readonly port: number;
  readonly url: string;
  /** Added one-way delay for data in both directions; order per connection is kept. */
  setLatency(ms: number): void;
  /** Partition: destroy current connections and close new ones at once, until heal(). */
  cut(): void;
  /** Accept and forward connections again. */
  heal(): void;
  /** How many connections are open through the proxy now. */
  readonly open: number;
  /**
   * Resolves once no connection is open through the proxy (at once if none is): each client socket closed,
   * and for one the client ended cleanly, the target closed its side too (so the target has let go of it:
   * the proxy ends its upstream side and forgets the connection when the target's end arrives). A connection
   * that failed on either side is dropped at once.
   */
  drained(): Promise<void>;
  close(): Promise<void>;
}

interface Link {
  client: net.Socket;
  upstream: net.Socket;
  cancel(): void;
}

/**
 * Forward `from` → `to`, delaying each chunk by the current latency. A single FIFO queue drained by one
 * timer keeps the order even if the latency changes while data is in flight. `null` marks end-of-stream.
 */
function pump(from: net.Socket, to: net.Socket, latency: () => number): () => void {
  const queue: Array<{ due: number; chunk: Buffer | null }> = [];
  let timer: NodeJS.Timeout | undefined;
  const deliver = (chunk: Buffer | null): void => {
    if (to.destroyed) return;
    if (chunk === null) to.end();
    else to.write(chunk);
  };
  const flush = (): void => {
    timer = undefined;
    const now = Date.now();
    while (queue.length > 0 && queue[0].due <= now) deliver(queue.shift()!.chunk);
    if (queue.length > 0) timer = setTimeout(flush, queue[0].due - now);
  };
  const push = (chunk: Buffer | null): void => {
    const ms = latency();
    if (ms <= 0 && queue.length === 0) return deliver(chunk);
    queue.push({ due: Date.now() + Math.max(0, ms), chunk });
    timer ??= setTimeout(flush, Math.max(0, ms));
  };
  from.on('data', (chunk: Buffer) => push(chunk));
  from.on('end', () => push(null));
  return () => {
    clearTimeout(timer);
    queue.length = 0;
  };
}

/**
 * Start a TCP proxy in front of targetHost:targetPort, for latency and partition faults.
 *
 * cut() stops listening, so new connections are refused (ECONNREFUSED). Accepting and then closing them
 * would not do: a client like ioredis treats every successful TCP connect as a recovery, resets its retry
 * count and would retry forever instead of failing its commands.
 */
export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  let latencyMs = 0;
  let closed = false;
  let healError: Error | undefined;
  const links = new Set<Link>();
  const drainWaiters = new Set<() => void>();

  const drop = (link: Link): void => {
    link.cancel();
    link.client.destroy();
    link.upstream.destroy();
    links.delete(link);
    if (links.size === 0) for (const drained of [...drainWaiters]) drained();
  };
  const dropAll = (): void => {
    for (const link of [...links]) drop(link);
  };

  const onConnection = (client: net.Socket): void => {
    client.setNoDelay(true);
    const upstream = net.connect({ port: targetPort, host: targetHost, noDelay: true });
    const cancelUp = pump(client, upstream, () => latencyMs);
    const cancelDown = pump(upstream, client, () => latencyMs);
    const link: Link = {
      client,
      upstream,
      cancel: () => {
        cancelUp();
        cancelDown();
      },
    };
    links.add(link);
    // An error on either side (e.g. the target node is down) ends the whole connection.
    client.on('error', () => drop(link));
    upstream.on('error', () => drop(link));
    // A clean close is propagated by pump's end marker; once both sides are closed, forget the link.
    const forgetWhenClosed = (): void => {
      if (client.destroyed && upstream.destroyed) drop(link);
    };
    client.on('close', forgetWhenClosed);
    upstream.on('close', forgetWhenClosed);
  };

  const listen = (port: number): Promise<net.Server> =>
    new Promise((resolve, reject) => {
      const server = net.createServer(onConnection);
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve(server));
    });

  let server: net.Server | undefined = await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const stopListening = (): Promise<void> => {
    const s = server;
    server = undefined;
    return new Promise((done) => (s ? s.close(() => done()) : done()));
  };

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    setLatency(ms: number) {
      latencyMs = ms;
    },
    cut() {
      void stopListening();
      dropAll();
    },
    get open() {
      return links.size;
    },
    drained() {
      if (links.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const drained = () => {
          drainWaiters.delete(drained);
          resolve();
        };
        drainWaiters.add(drained);
      });
    },
    heal() {
      if (closed || server) return;
      // The bind happens before any I/O callback runs, so a client connecting after heal() finds it open.
      listen(port).then(
        (s) => {
          if (closed) s.close();
          else server = s;
        },
        (error: Error) => {
          healError = error; // port taken meanwhile; reported by close()
        },
      );
    },
    async close() {
      closed = true;
      dropAll();
      await stopListening();
      if (healError)
        throw new Error(`TcpProxy on port ${port} could not listen again after heal(): ${healError.message}`);
    },
  };
}
