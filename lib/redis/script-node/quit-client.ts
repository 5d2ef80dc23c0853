import type Redis from 'ioredis';
import { withTimeout } from '../../core';
import { ended, ignoreLateSocketErrors } from './client-end';

/**
 * Closes a client the library created: QUIT when the node answers within `timeout` ms, otherwise a plain
 * disconnect — a paused or unreachable node must never hold up shutdown. Resolves once its socket closed.
 */
export async function quitClient(client: Redis, timeout: number): Promise<void> {
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
      if ((client.status as string) === 'end') return endSentinelWatch(client);
    }
  }
  ignoreLateSocketErrors(client);
  client.disconnect();
  await ended(client);
}

/**
 * A Sentinel-managed client (`failoverDetector: true`) keeps its connections to the sentinels after QUIT (ioredis
 * 5 closes them in its connector's disconnect(), which QUIT does not reach): closed and waited for here, so no
 * socket of the client outlives quit(). A no-op for a client without sentinels.
 */
async function endSentinelWatch(client: Redis): Promise<void> {
  const detector = (client as unknown as SentinelManaged).connector?.failoverDetector;
  if (!detector || !Array.isArray(detector.sentinels)) return;
  const watchers = detector.sentinels.map((sentinel) => sentinel.client);
  // cleanup() disconnects each watcher; calling the client's disconnect() instead would also arm ioredis'
  // disconnect timer for its own socket, which QUIT already closed (the timer then waits it out).
  detector.cleanup?.();
  await Promise.all(watchers.map((watcher) => ended(watcher)));
}

/** The ioredis internals of a Sentinel-managed client that hold its connections to the sentinels. */
interface SentinelManaged {
  connector?: { failoverDetector?: { sentinels?: { client: Redis }[]; cleanup?(): void } | null };
}
