import type { Redis, RedisOptions } from 'ioredis';
import { InvalidArgumentError, LockNode, describe, readOptions } from '../core';
import { ioredis, nodeRedis } from './script-node';
import { ioredisOptionKeys, IoredisLockNode, describeClient } from './ioredis';
import { checkNodeOptions, checkNodeUrl } from './node-address';
import { unusableNode } from './node-list';
import {
  NodeRedisClientLike,
  NodeRedisClusterLike,
  NodeRedisLockNode,
  NodeRedisSentinelLike,
  isNodeRedisClient,
} from './node-redis';

/**
 * How to reach one node: a connection string (`redis://host:port`), ioredis options, a ready ioredis (or
 * iovalkey) client or `Cluster` (a whole Redis Cluster as one node), a node-redis client from `createClient()`
 * or cluster from `createCluster()` (package `redis` 4, 5 or 6), a node-redis sentinel from `createSentinel()`
 * (its current primary, followed across failovers), or any {@link LockNode}. Clients passed in are
 * never closed by the library.
 */
export type NodeSpec =
  | string
  | IoredisOptions
  | IoredisCompatibleClient
  | NodeRedisClientOptions
  | NodeRedisClientLike
  | NodeRedisClusterLike
  | NodeRedisSentinelLike
  | LockNode;

/**
 * ioredis options (`RedisOptions`) for a node the library connects itself, typed here so that the package's
 * declarations need no ioredis installed: the common fields, and any other option ioredis accepts (an unknown
 * key is refused when the instance is made, naming the near one).
 */
export interface IoredisOptions {
  host?: string;
  port?: number;
  path?: string;
  username?: string;
  password?: string;
  db?: number;
  tls?: object;
  name?: string;
  sentinels?: readonly { host?: string; port?: number }[];
  connectTimeout?: number;
  [option: string]: unknown;
}

/**
 * `createClient()` options of node-redis, for a node the library connects itself with `client: 'node-redis'`
 * (its offline queue is turned off; `socket.connectTimeout` 2 s and a capped reconnect delay by default).
 */
export interface NodeRedisClientOptions {
  url?: string;
  socket?: Readonly<Record<string, unknown>>;
  username?: string;
  password?: string;
  database?: number;
  name?: string;
  RESP?: 2 | 3;
  pingInterval?: number;
}

/** A client with ioredis' API from another package (iovalkey's `Redis` or `Cluster`): used as ioredis is. */
export interface IoredisCompatibleClient {
  readonly status: string;
  evalsha(...args: never[]): Promise<unknown>;
  duplicate(...args: never[]): unknown;
}

/**
 * Settings forced on the clients the library creates. A command sent while a node is down must fail, not
 * wait in an offline queue or be resent after a reconnect: a replayed SET could land on a restarted node
 * long after the caller gave up on it.
 */
/** @internal */
export const OWNED_CLIENT_SAFETY: Readonly<RedisOptions> = Object.freeze({
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  // IoredisLockNode batches by itself and relies on send order; ioredis' auto-pipelining may hold a command
  // back behind an earlier pipeline while a later batch is written at once.
  enableAutoPipelining: false,
});

/** Defaults for the clients the library creates; the caller's options override these. */
const OWNED_CLIENT_DEFAULTS: Readonly<RedisOptions> = Object.freeze({
  connectTimeout: 2_000,
  // How long a closing socket may linger before it is destroyed; ioredis' 2 s keeps processes from exiting.
  disconnectTimeout: 200,
  // Keep reconnecting, but never more often than every second once a node has been down a while.
  retryStrategy: (times: number) => Math.min(times * 50, 1_000),
});

/**
 * Turns specs into nodes, refusing an empty list and the same node twice (it would break independence).
 * Nodes over clients created here close them when the instance quits.
 */
export function resolveNodes(specs: unknown, client: 'ioredis' | 'node-redis' = 'ioredis'): LockNode[] {
  // An environment variable (`REDLOCK_NODES=redis://a:6379,redis://b:6379,...`, as dev-redis prints it).
  if (typeof specs === 'string' && /^\s*rediss?:\/\//.test(specs)) specs = commaSeparated(specs);
  if (!Array.isArray(specs) || specs.length === 0) {
    throw new InvalidArgumentError(
      `nodes must be a non-empty array of Redis connection strings, ioredis options or clients, got ${
        Array.isArray(specs) ? 'an empty array' : describe(specs)
      }. Example: ['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379', 'redis://10.0.0.3:6379'], or one string of ` +
        `redis:// URLs separated by commas.`,
    );
  }
  const nodes: LockNode[] = [];
  const owned: Redis[] = [];
  const seen = new Map<string, number>();
  const fail = (error: InvalidArgumentError): never => {
    // Clients created for earlier entries must not keep reconnecting after the constructor threw, and
    // clients passed in must not keep the listeners their nodes added (close() only removes them).
    for (const client of owned) client.disconnect();
    for (const node of nodes) {
      if (node instanceof IoredisLockNode && !owned.includes(node.client)) void node.close(0);
      if (node instanceof NodeRedisLockNode) void node.close(0); // a client it created was never connected
    }
    throw error;
  };
  specs.forEach((spec: unknown, index) => {
    let node: LockNode;
    try {
      if (typeof spec === 'string' && /^rediss?:\/\//i.test(spec)) {
        checkNodeUrl(spec, index, client === 'node-redis' ? 'node-redis' : 'ioredis');
      }
      node = client === 'node-redis' && isAddress(spec) ? nodeRedisNode(spec) : toNode(spec, index, owned);
    } catch (error) {
      return fail(unusableNode(index, error));
    }
    const identity = identityOf(node);
    const earlier = seen.get(identity);
    nodes.push(node); // before fail() below, which detaches it
    if (earlier !== undefined) {
      fail(
        new InvalidArgumentError(
          `nodes[${index}] and nodes[${earlier}] are the same node (${node.name}): one server would hold two ` +
            'votes, so a lock held there and on one other node would look like a majority. Redlock needs ' +
            'independent nodes: list each Redis server once.',
        ),
      );
    }
    seen.set(identity, index);
  });
  return nodes;
}

function toNode(spec: unknown, index: number, owned: Redis[]): LockNode {
  if (typeof spec === 'string') {
    if (!/^rediss?:\/\//.test(spec)) {
      throw new InvalidArgumentError(
        `nodes[${index}] must be a redis:// or rediss:// URL, got ${JSON.stringify(spec)}.`,
      );
    }
    const { default: Redis } = ioredis();
    return ownedNode(new Redis(spec, { ...OWNED_CLIENT_DEFAULTS, ...OWNED_CLIENT_SAFETY }), owned);
  }
  if (spec === null || typeof spec !== 'object') {
    throw new InvalidArgumentError(
      `nodes[${index}] must be a connection string, ioredis options or a client, got ${describe(spec)}. ` +
        "Example: 'redis://10.0.0.1:6379' or { host: '10.0.0.1', port: 6379 }.",
    );
  }
  if (isLockNode(spec)) return spec;
  if (isNodeRedisClient(spec)) return new NodeRedisLockNode(spec);
  if (isRedisClient(spec)) return new IoredisLockNode(spec);
  refuseClientLike(spec, index);
  const options = spec as RedisOptions;
  refuseUnknownKeys(options, index);
  const { default: Redis } = ioredis();
  return ownedNode(new Redis({ ...OWNED_CLIENT_DEFAULTS, ...options, ...OWNED_CLIENT_SAFETY }), owned);
}

/**
 * An object that looks like a client of some kind but is none the library knows (a GLIDE client, a client
 * pool, a wrapper): refused with what a node may be, instead of being read as ioredis options.
 */
function refuseClientLike(spec: object, index: number): void {
  const looksLikeClient =
    Object.getPrototypeOf(spec) !== Object.prototype && Object.getPrototypeOf(spec) !== null;
  if (!looksLikeClient) return;
  const kind = (spec as { constructor?: { name?: string } }).constructor?.name ?? 'object';
  throw new InvalidArgumentError(
    `nodes[${index}] is a ${kind}, which is not a client this library can lock on. A node may be a ` +
      'redis:// URL, ioredis options, an ioredis or iovalkey client or Cluster, a node-redis client or cluster ' +
      "(createClient() / createCluster() from 'redis'), or an object implementing LockNode.",
  );
}

/**
 * ioredis ignores keys it does not know: `{ hots: '10.0.0.5' }` would lock on localhost instead. Read as every
 * options object is (no `__proto__` key, which the merge in ioredis would follow; a getter that throws refused
 * as such), then the address fields are checked (node-address.ts).
 */
function refuseUnknownKeys(options: object, index: number): void {
  const known = ioredisOptionKeys();
  const read = readOptions(options, {
    name: `nodes[${index}]`,
    option: `ioredis option in nodes[${index}]`,
    known,
  });
  checkNodeOptions(read, index);
}

/** A URL or a plain options object: what the library connects itself (as opposed to a client or a LockNode). */
function isAddress(spec: unknown): spec is string | object {
  if (typeof spec === 'string') return true;
  return (
    typeof spec === 'object' &&
    spec !== null &&
    (Object.getPrototypeOf(spec) === Object.prototype || Object.getPrototypeOf(spec) === null)
  );
}

/** Defaults for the node-redis clients the library creates; the caller's options override these. */
const NODE_REDIS_SOCKET_DEFAULTS = Object.freeze({
  connectTimeout: 2_000,
  // Keep reconnecting, but never more often than every second once a node has been down a while.
  reconnectStrategy: (retries: number) => Math.min(retries * 50, 1_000),
});

/**
 * A node-redis client the library creates (`client: 'node-redis'`) from a URL or `createClient()` options,
 * with its offline queue off: a command issued while the node is down fails instead of being sent after the
 * reconnect. Closed by `quit()`.
 */
function nodeRedisNode(spec: string | object): LockNode {
  const given = (typeof spec === 'string' ? { url: spec } : spec) as { socket?: object };
  const client = nodeRedis().createClient({
    ...given,
    socket: { ...NODE_REDIS_SOCKET_DEFAULTS, ...given.socket },
    disableOfflineQueue: true,
  });
  // Errors surface through commands and votes; without a listener node-redis would end the process.
  client.on('error', () => undefined);
  return new NodeRedisLockNode(client, undefined, true);
}

function ownedNode(client: Redis, owned: Redis[]): LockNode {
  // Errors surface through commands and votes; without a listener ioredis would print each one.
  client.on('error', () => undefined);
  owned.push(client);
  return new IoredisLockNode(client, undefined, true);
}

function isLockNode(value: object): value is LockNode {
  const candidate = value as Partial<LockNode>;
  return (
    typeof candidate.acquire === 'function' &&
    typeof candidate.release === 'function' &&
    typeof candidate.extend === 'function' &&
    typeof candidate.name === 'string'
  );
}

/** Duck-typed, so a client from another copy of ioredis is recognised too. */
/** @internal */
export function isRedisClient(value: object): value is Redis {
  const candidate = value as Partial<Redis>;
  return typeof candidate.evalsha === 'function' && typeof candidate.status === 'string';
}

/**
 * Nodes at the same address are the same node, whatever the database number or the spelling of the host:
 * its case, a trailing dot, or one of the loopback names. Other aliases (0.0.0.0, a DNS alias, a proxy) are
 * recognised once connected, by the server's run_id (core/nodes/connect.ts: a warning).
 */
function identityOf(node: LockNode): string {
  const name = (node instanceof IoredisLockNode ? describeClient(node.client) : node.name).toLowerCase();
  const address = /^(\S+):(\d+)$/.exec(name);
  if (!address) return name;
  const host = canonicalHost(address[1].replace(/^\[(.*)\]$/, '$1').replace(/\.$/, ''));
  return `${LOOPBACK.has(host) ? '127.0.0.1' : host}:${Number(address[2])}`;
}

/**
 * One spelling per address: IPv4 as four decimal numbers (`127.1`, `0x7f.0.0.1` and `2130706433` are
 * `127.0.0.1`, as the WHATWG parser of http: URLs reads them), IPv6 compressed, an IPv4-mapped IPv6 address
 * (`::ffff:127.0.0.1`) as its IPv4 address; names in lower case.
 */
function canonicalHost(host: string): string {
  let canonical = host;
  try {
    canonical = new URL(host.includes(':') ? `http://[${host}]` : `http://${host}`).hostname;
  } catch {
    return host;
  }
  const ipv6 = canonical.replace(/^\[(.*)\]$/, '$1');
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(ipv6);
  if (!mapped) return ipv6;
  const [high, low] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

const LOOPBACK: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '::1', '0:0:0:0:0:0:0:1']);

/** `redis://a:6379, redis://b:6379,` → the URLs, trimmed, empty entries dropped. */
function commaSeparated(list: string): string[] {
  return list
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url.length > 0);
}
