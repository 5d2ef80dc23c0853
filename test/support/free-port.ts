import * as fs from 'node:fs';
import * as net from 'node:net';

// Ports handed out recently in this process: the OS may return the same ephemeral port to two
// parallel callers once the probe socket is closed, so we never hand one out twice in a row.
const recentlyHanded = new Set<number>();

/** The lowest port handed out: below are the well-known and registered ports services tend to use. */
const FLOOR = 10_000;

/**
 * The kernel's ephemeral port range (Linux), where outgoing connections take their local ports; undefined
 * where it cannot be read.
 */
function ephemeralRange(): [number, number] | undefined {
  try {
    const [low, high] = fs
      .readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    return low > 0 && high >= low ? [low, high] : undefined;
  } catch {
    return undefined;
  }
}

/** A cluster node also binds this much above its port (its bus). */
const BUS_OFFSET = 10_000;

/**
 * A random port that lies, with its port + 10000 (a cluster node's bus), below the ephemeral range (or 0,
 * the kernel's choice, where that range is unknown or leaves no room): while a node on such a port is down
 * (killed, restarting), no outgoing connection of this machine can take either as its local port and keep
 * the node from listening there again.
 */
function candidate(): number {
  const low = ephemeralRange()?.[0];
  if (low === undefined || low - BUS_OFFSET <= FLOOR) return 0;
  return FLOOR + Math.floor(Math.random() * (low - BUS_OFFSET - FLOOR));
}

/** Binds `port` (0: any) on 127.0.0.1 and closes it: the port bound, or undefined if it was taken. */
function probe(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' || error.code === 'EACCES' ? resolve(undefined) : reject(error),
    );
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as net.AddressInfo;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (bind it, read it, close), below the kernel's
 * ephemeral range where that is known (see {@link candidate}).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await probe(candidate());
    if (port !== undefined && !recentlyHanded.has(port)) {
      recentlyHanded.add(port);
      if (recentlyHanded.size > 1000) recentlyHanded.clear();
      return port;
    }
  }
  throw new Error('freePort: could not find an unused port');
}
