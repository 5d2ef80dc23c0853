import * as net from 'node:net';

// Ports handed out recently in this process: the OS may return the same ephemeral port to two
// parallel callers once the probe socket is closed, so we never hand one out twice in a row.
const recentlyHanded = new Set<number>();

function probe(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await probe();
    if (!recentlyHanded.has(port)) {
      recentlyHanded.add(port);
      if (recentlyHanded.size > 1000) recentlyHanded.clear();
      return port;
    }
  }
  throw new Error('freePort: could not find an unused port');
}
