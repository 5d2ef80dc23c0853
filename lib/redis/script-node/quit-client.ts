import type Redis from 'ioredis';
import { withTimeout } from '../../core';

/**
 * Closes a client the library created: QUIT when the node answers within `timeout` ms, otherwise a plain
 * disconnect — a paused or unreachable node must never hold up shutdown.
 */
export async function quitClient(client: Redis, timeout: number): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    await withTimeout(client.quit(), timeout, () => new Error('QUIT not answered')).catch(() => undefined);
  }
  client.disconnect();
}
