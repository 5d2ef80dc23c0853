import { InvalidArgumentError } from '../core';

type IoredisModule = typeof import('ioredis');

let loaded: IoredisModule | undefined;

/**
 * ioredis, loaded only when the library creates a client itself (from a connection string or options): an
 * application that passes node-redis clients needs no ioredis installed (an optional peer).
 */
export function ioredis(): IoredisModule {
  if (loaded) return loaded;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require('ioredis') as IoredisModule;
  } catch (error) {
    throw new InvalidArgumentError(
      'nodes given as connection strings or options need ioredis, which is not installed ' +
        `(${(error as Error).message.split('\n')[0]}): npm install ioredis, or pass the clients your ` +
        "application already uses — node-redis clients from createClient() (package 'redis'), ioredis or " +
        'iovalkey clients — as nodes.',
    );
  }
  return loaded;
}
