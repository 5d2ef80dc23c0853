import { withTimeout } from '../../core';

/** How long closing waits for a connection's socket to close at the most, in ms. */
const END_WAIT = 2_500;

/** A client that reports the end of its connection: ioredis (`status`, 'end') and node-redis (`isOpen`, 'end'). */
interface Ending {
  readonly status?: string;
  readonly isOpen?: boolean;
  readonly options?: object;
  once?(event: 'end', listener: () => void): unknown;
}

/**
 * Resolves once `client`'s connection has ended — its socket closed, its timers gone — so that what closes it
 * leaves no handle behind when it resolves (at most {@link END_WAIT} ms: a client that never says so is not
 * waited for longer). Call after asking it to disconnect.
 */
export function ended(client: Ending): Promise<void> {
  if (client.status === 'end' || client.isOpen === false || !client.once) return Promise.resolve();
  if (client.status === 'reconnecting') {
    // ioredis between connections never says 'end', but disconnect() armed a timer (disconnectTimeout) to
    // destroy its last, already closed socket: let it run out.
    const configured = (client.options as { disconnectTimeout?: number } | undefined)?.disconnectTimeout;
    const linger = Math.min(configured ?? END_WAIT, END_WAIT);
    return new Promise((resolve) => setTimeout(resolve, linger + 1));
  }
  const end = new Promise<void>((resolve) => client.once!('end', resolve));
  return withTimeout(end, END_WAIT, () => new Error('not ended')).catch(() => undefined);
}

/**
 * Before closing a client ourselves: its socket, still in a TLS handshake, may report the server's alert after
 * ioredis stopped listening to it (an 'error' event nobody listens to is thrown: an uncaught exception, seen
 * with a rediss:// node that fails verification on a loaded host). Nobody needs that socket's errors any more.
 */
export function ignoreLateSocketErrors(client: { stream?: unknown }): void {
  const stream = client.stream as { on?: (event: 'error', listener: () => void) => unknown } | undefined;
  if (typeof stream?.on === 'function') stream.on('error', () => undefined);
}
