import { InvalidArgumentError } from '../../core';

type IoredisModule = typeof import('ioredis');

/** What the library uses of the `redis` package (node-redis) when it creates clients itself. */
export interface NodeRedisModule {
  createClient(options: object): import('../node-redis/node-redis-client').NodeRedisClientLike;
}

const loaded = new Map<string, unknown>();

/**
 * An optional peer, loaded only when the library creates a client of that kind itself (from a connection
 * string or options): an application that passes its own clients needs no other client package installed.
 */
export function optionalPeer<T>(name: string, install: string): T {
  if (loaded.has(name)) return loaded.get(name) as T;
  let module: T;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    module = require(name) as T;
  } catch (error) {
    throw new InvalidArgumentError(
      `nodes given as connection strings or options need the package '${name}', which is not installed ` +
        `(${(error as Error).message.split('\n')[0]}): ${install}, or pass the clients your application ` +
        "already uses — ioredis or iovalkey clients, node-redis clients from createClient() (package 'redis') — " +
        'as nodes.',
    );
  }
  loaded.set(name, module);
  return module;
}

/** ioredis, for the clients the library creates (the default `client`). */
export function ioredis(): IoredisModule {
  return optionalPeer<IoredisModule>('ioredis', 'npm install ioredis');
}

/** node-redis, for the clients the library creates with `client: 'node-redis'`. */
export function nodeRedis(): NodeRedisModule {
  return optionalPeer<NodeRedisModule>('redis', "npm install redis@5 (or pass client: 'ioredis')");
}
