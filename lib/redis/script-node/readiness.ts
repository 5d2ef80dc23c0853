import type { Redis } from 'ioredis';

/**
 * Resolves once `client` is ready (starting a lazy one), or rejects after `timeout` ms with the last
 * connection error seen (or the client's status). Leaves no listener behind.
 */
export function waitForReady(client: Redis, timeout: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    let lastError: Error | undefined;
    const onReady = () => settle();
    const onError = (error: Error) => {
      lastError = error;
    };
    const timer = setTimeout(
      () => settle(lastError ?? new Error(`not connected after ${timeout} ms (status "${client.status}")`)),
      timeout,
    );
    const settle = (error?: Error) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
      if (error) reject(error);
      else resolve();
    };
    client.on('ready', onReady);
    client.on('error', onError);
    if (client.status === 'wait') client.connect().catch(() => undefined);
  });
}
