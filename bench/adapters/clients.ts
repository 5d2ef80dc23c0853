import Redis, { RedisOptions } from 'ioredis';

/**
 * ioredis clients for the peers and the floor: the library defaults, as a user following the peers' READMEs
 * would create them (no auto-pipelining unless asked), connected before measuring.
 */
export async function connectClients(urls: readonly string[], options: RedisOptions = {}): Promise<Redis[]> {
  const clients = urls.map((url) => {
    const client = new Redis(url, { lazyConnect: true, ...options });
    client.on('error', () => undefined);
    return client;
  });
  await Promise.all(clients.map((client) => client.connect()));
  return clients;
}

export async function closeClients(clients: readonly Redis[]): Promise<void> {
  await Promise.all(
    clients.map(async (client) => {
      try {
        if (client.status === 'ready') await client.quit();
      } catch {
        // already closing
      } finally {
        client.disconnect();
      }
    }),
  );
}
