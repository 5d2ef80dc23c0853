/**
 * The app's nodes as node-redis users pass them: `createClient({ url })` clients (package `redis` 4, 5 or 6),
 * left unconnected — RedlockModule connects them at start-up and never closes them, so the app closes them
 * after `app.close()`. No ioredis is installed in this app. Copied to src/clients.ts by compat/app.ts.
 */
import { createClient } from 'redis';
import { urls } from './urls.js';

export const kind = 'node-redis';
export const passedAs = '`createClient({ url })` clients, not connected';
export const needsIoredis = false;

/** Errors the app's own node clients emitted (reported in the result). */
export const clientErrors: string[] = [];

const clients = urls.map((url) =>
  createClient({ url }).on('error', (error: Error) => clientErrors.push(String(error?.message ?? error))),
);

/** What the app passes to RedlockModule.forRoot / new Redlock: its own clients. */
export function nodes(): typeof clients {
  return clients;
}

/** The lock key's value on every node, read with fresh clients of the app's own (a second view). */
export async function valuesOf(key: string): Promise<(string | null)[]> {
  const readers = await Promise.all(urls.map((url) => createClient({ url }).connect()));
  try {
    return await Promise.all(readers.map((reader) => reader.get(key)));
  } finally {
    await Promise.all(readers.map((reader) => reader.quit()));
  }
}

/** Closes the clients the app passed as nodes (the library leaves them open). */
export async function closeNodes(): Promise<void> {
  await Promise.all(clients.filter((client) => client.isOpen).map((client) => client.quit()));
}
