import { EventEmitter } from 'node:events';
import * as net from 'node:net';

/** A TCP forwarder that can drop a connection the moment a SUBSCRIBE passes through it. */
export interface SubscribeDropper {
  readonly url: string;
  /** Drop the connection right after forwarding the next SUBSCRIBE command (its reply never arrives). */
  armed: boolean;
  /** How many connections were dropped that way. */
  readonly drops: number;
  /** How many connections are open through it. */
  readonly open: number;
  /** Drops every open connection now (clients reconnect). */
  dropAll(): void;
  /** Resolves once `drops` reached `count`. */
  dropped(count: number): Promise<void>;
  /** Resolves once `count` connections are open through it. */
  connectionsOpen(count: number): Promise<void>;
  /**
   * Resolves once the server confirmed `count` SUBSCRIBEs naming `channel` (counted since the start): the
   * confirmation was forwarded to the client, so it knows it is subscribed once it reads its socket.
   */
  subscriptionsConfirmed(channel: string, count: number): Promise<void>;
  close(): Promise<void>;
}

const SUBSCRIBE = /\r\nsubscribe\r\n/i;
const CONFIRMATION = /\*3\r\n\$9\r\nsubscribe\r\n\$\d+\r\n([^\r]*)\r\n:\d+\r\n/gi;

/**
 * Forwards 127.0.0.1:<port> to the target. When armed, the next SUBSCRIBE a client sends is forwarded and
 * its connection dropped at once: the command is in flight when the connection closes, as when a node or a
 * link fails a moment after a client reconnected and re-subscribed.
 */
export async function startSubscribeDropper(targetPort: number): Promise<SubscribeDropper> {
  const links = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let drops = 0;
  /** Confirmed SUBSCRIBEs per channel. */
  const confirmed = new Map<string, number>();
  /** Told of every change to the counts above, for the waits on them. */
  const changes = new EventEmitter();
  const changed = () => changes.emit('change');
  const when = (reached: () => boolean) =>
    new Promise<void>((resolve) => {
      if (reached()) return resolve();
      const check = () => {
        if (!reached()) return;
        changes.off('change', check);
        resolve();
      };
      changes.on('change', check);
    });
  const dropper: SubscribeDropper & { url: string } = {
    url: '',
    armed: false,
    get drops() {
      return drops;
    },
    get open() {
      return links.size;
    },
    dropAll() {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      links.clear();
      changed();
    },
    dropped: (count) => when(() => drops >= count),
    connectionsOpen: (count) => when(() => links.size >= count),
    subscriptionsConfirmed: (channel, count) => when(() => (confirmed.get(channel) ?? 0) >= count),
    close: () => Promise.resolve(),
  };
  const server = net.createServer((client) => {
    const upstream = net.connect({ port: targetPort, host: '127.0.0.1' });
    const link = { client, upstream };
    links.add(link);
    changed();
    const drop = () => {
      client.destroy();
      upstream.destroy();
      if (links.delete(link)) changed();
    };
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      if (dropper.armed && SUBSCRIBE.test(chunk.toString('latin1'))) {
        dropper.armed = false;
        setImmediate(() => {
          drop();
          drops++;
          changed();
        });
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      // A SUBSCRIBE's confirmations, one per channel: *3 subscribe <channel> <count> (RESP2).
      for (const [, channel] of chunk.toString('latin1').matchAll(CONFIRMATION)) {
        confirmed.set(channel, (confirmed.get(channel) ?? 0) + 1);
      }
      changed();
    });
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  dropper.url = `redis://127.0.0.1:${port}`;
  dropper.close = () => {
    dropper.dropAll();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return dropper;
}
