import type Redis from 'ioredis';

/**
 * Closes a client the library created: QUIT when the node answers within `timeout` ms, otherwise a plain
 * disconnect — a paused or unreachable node must never hold up shutdown.
 */
export async function quitClient(client: Redis, timeout: number): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeout);
  });
  await Promise.race([client.quit().catch(() => undefined), gaveUp]);
  clearTimeout(timer);
  client.disconnect();
}
