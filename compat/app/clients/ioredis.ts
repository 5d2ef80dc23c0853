/**
 * The app's nodes as ioredis users pass them: `redis://` URLs (the library creates and closes the ioredis
 * clients). Copied to src/clients.ts by compat/app.ts when the app is checked with ioredis 5 or 6.
 */
import { Redis } from 'ioredis';
import { urls } from './urls.js';

export const kind = 'ioredis';
export const passedAs = '`redis://` URLs';
/** Whether ioredis must be installed in this app (it must be absent for the other kinds). */
export const needsIoredis = true;

/** What the app passes to RedlockModule.forRoot / new Redlock: the URLs themselves. */
export function nodes(): string[] {
  return [...urls];
}

/** The lock key's value on every node, read with fresh clients of the app's own (a second view). */
export async function valuesOf(key: string): Promise<(string | null)[]> {
  const clients = urls.map((url) => new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 }));
  try {
    return await Promise.all(clients.map((client) => client.get(key)));
  } finally {
    await Promise.all(clients.map((client) => client.quit()));
  }
}

/** Closes the clients the app created for the nodes (none: the library owns the clients it created). */
export async function closeNodes(): Promise<void> {}

/** Errors the app's own node clients emitted (none here). */
export const clientErrors: string[] = [];
