import type { NodeRedisClientLike } from './node-redis-client';

/** A server node-redis' sentinel reports (`getMasterNode()`, `getSentinelNode()`). */
interface SentinelReportedNode {
  readonly host: string;
  readonly port: number;
}

/**
 * What this adapter uses of a node-redis sentinel (`createSentinel({ name, sentinelRootNodes })`, node-redis 5
 * and later): one lock node, the primary the sentinels report, followed across failovers. Its `sendCommand`
 * takes an `isReadonly` flag before the arguments (a plain client's takes the arguments alone).
 */
export interface NodeRedisSentinelLike extends Omit<
  NodeRedisClientLike,
  'sendCommand' | 'duplicate' | 'options'
> {
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** node-redis 6 (node-redis 5's sentinel has none: its own pub/sub connection is shared). */
  duplicate?(overrides?: object): NodeRedisSentinelLike;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  getMasterNode(): SentinelReportedNode | undefined;
  getSentinelNode(): SentinelReportedNode | undefined;
}

/** A node-redis sentinel (duck-typed: it reports its master and sentinel nodes, which clients do not). */
export function isNodeRedisSentinel(value: object): value is NodeRedisSentinelLike {
  const candidate = value as Partial<NodeRedisSentinelLike>;
  return (
    typeof candidate.sendCommand === 'function' &&
    typeof candidate.getMasterNode === 'function' &&
    typeof candidate.getSentinelNode === 'function'
  );
}

/**
 * The sentinel seen as a plain client: every command goes to the current primary (`isReadonly` false, never a
 * replica), and `duplicate()` is a sentinel again (its subscriptions follow the primary too). node-redis' own
 * `execute` re-sends a command to the new primary when the old one answers READONLY or drops: what a
 * sentinel-managed node is, and an answer that comes late is undone as for any node-redis client.
 */
export function sentinelAsClient(sentinel: NodeRedisSentinelLike): NodeRedisClientLike {
  // node-redis 5's sentinel never emits 'ready': its shared subscriber waits for the node to see it ready.
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  return {
    get isOpen() {
      return sentinel.isOpen;
    },
    get isReady() {
      if (sentinel.isReady) markReady();
      return sentinel.isReady;
    },
    sendCommand: (args) => sentinel.sendCommand(false, args),
    connect: () => sentinel.connect(),
    // A sentinel's options are its own (sentinelRootNodes, nodeClientOptions): none of a client's overrides.
    duplicate: () =>
      sentinel.duplicate ? sentinelAsClient(sentinel.duplicate()) : sharedSubscriber(sentinel, ready),
    subscribe: (channels, listener) => sentinel.subscribe(channels, listener),
    unsubscribe: (channels) => sentinel.unsubscribe(channels),
    on: (event, listener) => sentinel.on(event, listener),
    off: (event, listener) => sentinel.removeListener(event, listener),
    removeListener: (event, listener) => sentinel.removeListener(event, listener),
    destroy: () => sentinel.destroy?.(),
    close: sentinel.close ? () => sentinel.close!() : undefined,
    // ended() waits for 'end' on an open client.
    once: (event: string, listener: (...args: unknown[]) => void) => sentinel.once(event, listener),
  } as NodeRedisClientLike;
}

/**
 * The subscriber of a sentinel without `duplicate()` (node-redis 5): the application's sentinel itself, whose
 * subscriptions go over its own pub/sub connection to the primary (not the command connections). Closing it
 * only leaves our channels and takes our listeners off: the sentinel stays the application's.
 */
function sharedSubscriber(sentinel: NodeRedisSentinelLike, ready: Promise<void>): NodeRedisClientLike {
  type Listener = (...args: unknown[]) => void;
  const channels = new Map<string, (message: string, channel: string) => void>();
  const listeners: [string, Listener][] = [];
  let open = true;
  const leave = (names: readonly string[]) =>
    Promise.all(
      names.map((name) => {
        const listener = channels.get(name);
        channels.delete(name);
        return sentinel.unsubscribe([name], listener);
      }),
    );
  return {
    get isOpen() {
      return open && sentinel.isOpen;
    },
    get isReady() {
      return open && sentinel.isReady;
    },
    sendCommand: () => Promise.reject(new Error('a sentinel subscriber sends no commands')),
    // The node connects the sentinel (or the application did): wait until the node has seen it ready.
    connect: () => (sentinel.isReady ? Promise.resolve() : ready),
    duplicate: () => sharedSubscriber(sentinel, ready),
    subscribe: (names, listener) => {
      for (const name of names) channels.set(name, listener);
      return sentinel.subscribe(names, listener);
    },
    unsubscribe: (names) => leave(names),
    on: (event, listener) => {
      listeners.push([event, listener]);
      return sentinel.on(event, listener);
    },
    removeListener: (event, listener) => sentinel.removeListener(event, listener),
    destroy: () => {
      open = false;
      for (const [event, listener] of listeners.splice(0)) sentinel.removeListener(event, listener);
      return leave([...channels.keys()]).catch(() => undefined);
    },
  };
}

/** `node-redis sentinel`, and the primary it reported when the node was made (if it was connected then). */
export function describeSentinel(sentinel: NodeRedisSentinelLike): string {
  const master = sentinel.getMasterNode();
  return master ? `node-redis sentinel (primary ${master.host}:${master.port})` : 'node-redis sentinel';
}
