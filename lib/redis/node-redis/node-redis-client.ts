/**
 * What this adapter uses of a node-redis (`redis` 4, 5 or 6) client, typed here so that the package never loads
 * `redis` itself (an optional peer: only the application's own client is used).
 */
export interface NodeRedisClientLike {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  readonly options?: { url?: string; socket?: { host?: string; port?: number; path?: string } };
  sendCommand(args: string[]): Promise<unknown>;
  connect(): Promise<unknown>;
  duplicate(overrides?: object): NodeRedisClientLike;
  subscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channels: string[], listener?: (message: string, channel: string) => void): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off?(event: string, listener: (...args: unknown[]) => void): unknown;
  removeListener(event: string, listener: (...args: unknown[]) => void): unknown;
  destroy?(): unknown;
  disconnect?(): Promise<unknown>;
  /** node-redis 5's graceful close. */
  close?(): Promise<unknown>;
  /** node-redis 4's graceful close. */
  quit?(): Promise<unknown>;
}

/** What this adapter uses of a node-redis cluster (`createCluster()`). */
export interface NodeRedisClusterLike extends Omit<NodeRedisClientLike, 'sendCommand' | 'duplicate'> {
  readonly masters: readonly { readonly host?: string; readonly port?: number; readonly address?: string }[];
  nodeClient(master: unknown): NodeRedisClientLike | Promise<NodeRedisClientLike>;
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
  ): Promise<unknown>;
  duplicate(overrides?: object): NodeRedisClusterLike;
  /** Sharded pub/sub (node-redis 4.6 and later), routed to each channel's slot. */
  sSubscribe?(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  sUnsubscribe?(channels: string[]): Promise<unknown>;
}
