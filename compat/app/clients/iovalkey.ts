/**
 * The app's nodes as iovalkey users pass them: `new Valkey(url)` clients (ioredis' API), which the library
 * never closes, so the app closes them after `app.close()`. No ioredis is installed in this app. Copied to
 * src/clients.ts by compat/app.ts.
 */
import { Valkey } from 'iovalkey';
import { urls } from './urls.js';

export const kind = 'iovalkey';
export const passedAs = '`new Valkey(url)` clients';
export const needsIoredis = false;

/** Errors the app's own node clients emitted (reported in the result). */
export const clientErrors: string[] = [];

const clients = urls.map((url) =>
  new Valkey(url).on('error', (error: Error) => clientErrors.push(String(error?.message ?? error))),
);

/** What the app passes to RedlockModule.forRoot / new Redlock: its own clients. */
export function nodes(): Valkey[] {
  return clients;
}

/** The lock key's value on every node, read with fresh clients of the app's own (a second view). */
export async function valuesOf(key: string): Promise<(string | null)[]> {
  const readers = urls.map((url) => new Valkey(url, { maxRetriesPerRequest: 1 }));
  try {
    return await Promise.all(readers.map((reader) => reader.get(key)));
  } finally {
    await Promise.all(readers.map((reader) => reader.quit()));
  }
}

/** Closes the clients the app passed as nodes (the library leaves them open). */
export async function closeNodes(): Promise<void> {
  await Promise.all(clients.map((client) => client.quit()));
}
