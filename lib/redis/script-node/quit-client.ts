import type Redis from 'ioredis';
import { withTimeout } from '../../core';
import { ended, ignoreLateSocketErrors } from './client-end';
import type { SentinelWatch } from './sentinel-watch';

/**
 * Closes a client the library created: QUIT when the node answers within `timeout` ms, otherwise a plain
 * disconnect — a paused or unreachable node must never hold up shutdown. Resolves once its socket closed, and
 * those of its connections to the sentinels (`sentinels`, a Sentinel-managed client's).
 */
export async function quitClient(client: Redis, timeout: number, sentinels?: SentinelWatch): Promise<void> {
  sentinels?.stop();
  await quitOwnConnection(client, timeout);
  await sentinels?.close();
}

async function quitOwnConnection(client: Redis, timeout: number): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    const quit = await withTimeout(client.quit(), timeout, () => new Error('QUIT not answered')).then(
      () => true,
      () => false,
    );
    // The server closes the connection after QUIT: no disconnect(), which would arm a timer for a socket
    // that is closing anyway — unless it never does (a node that answers QUIT and keeps the socket open).
    if (quit) {
      await ended(client);
      if ((client.status as string) === 'end') return;
    }
  }
  ignoreLateSocketErrors(client);
  client.disconnect();
  await ended(client);
}
