import * as net from 'node:net';

/** A TCP forwarder that can drop a connection the moment a SUBSCRIBE passes through it. */
export interface SubscribeDropper {
  readonly url: string;
  /** Drop the connection right after forwarding the next SUBSCRIBE command (its reply never arrives). */
  armed: boolean;
  /** How many connections were dropped that way. */
  readonly drops: number;
  /** Drops every open connection now (clients reconnect). */
  dropAll(): void;
  close(): Promise<void>;
}

const SUBSCRIBE = /\r\nsubscribe\r\n/i;

/**
 * Forwards 127.0.0.1:<port> to the target. When armed, the next SUBSCRIBE a client sends is forwarded and
 * its connection dropped at once: the command is in flight when the connection closes, as when a node or a
 * link fails a moment after a client reconnected and re-subscribed.
 */
export async function startSubscribeDropper(targetPort: number): Promise<SubscribeDropper> {
  const links = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let drops = 0;
  const dropper: SubscribeDropper & { url: string } = {
    url: '',
    armed: false,
    get drops() {
      return drops;
    },
    dropAll() {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      links.clear();
    },
    close: () => Promise.resolve(),
  };
  const server = net.createServer((client) => {
    const upstream = net.connect({ port: targetPort, host: '127.0.0.1' });
    const link = { client, upstream };
    links.add(link);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      links.delete(link);
    };
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      if (dropper.armed && SUBSCRIBE.test(chunk.toString('latin1'))) {
        dropper.armed = false;
        drops++;
        setImmediate(drop);
      }
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
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
