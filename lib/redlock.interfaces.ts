import type { ConfigurableModuleAsyncOptions, LoggerService } from '@nestjs/common';
import type { RedlockOptions } from './core';
import type { NodeSpec } from './redis';

/**
 * Options of `RedlockModule`: the nodes, every core option (`ttl`, `wait`, `nodeTimeout`, `keyPrefix`, ...,
 * each also the default for every call) and a few Nest-level ones.
 */
export interface RedlockModuleOptions extends Omit<RedlockOptions, 'logger'> {
  /**
   * The independent Redis nodes, one entry per server: connection strings (`redis://host:6379`), ioredis
   * options, or ready ioredis clients. Clients created from strings or options are owned by the module and
   * closed on shutdown; clients passed in ready-made are left open. Or one string of connection strings
   * separated by commas, as an environment variable holds them (`REDLOCK_NODES`).
   */
  nodes: readonly NodeSpec[] | string;
  /**
   * Where log lines go: by default Nest's `Logger` with the context `'Redlock'`; a `LoggerService` of your
   * own (called with the context `'Redlock'` as last argument); `false` for silence.
   */
  logger?: false | LoggerService;
  /** How long start-up waits for the nodes to connect, in ms. Default 2 000. */
  connectTimeout?: number;
  /** How long `app.close()` spends releasing locks still held, in ms. Default 2 000. */
  shutdownTimeout?: number;
}

/** Options that change how the module is assembled rather than how it locks; accepted by both `forRoot*`. */
export interface RedlockModuleExtras {
  /**
   * Register {@link LockBusyFilter} as a global exception filter, so a busy lock on an HTTP route answers
   * 409 Conflict. Default true. Turn it off to handle `LockBusyError` yourself.
   */
  busyFilter?: boolean;
}

/** The second argument of `RedlockModule.forRoot(nodes, options)`. */
export type RedlockRootOptions = Omit<RedlockModuleOptions, 'nodes'> & RedlockModuleExtras;

/** A class that `forRootAsync({ useClass })` or `{ useExisting }` asks for the module options. */
export interface RedlockOptionsFactory {
  createRedlockOptions(): RedlockModuleOptions | Promise<RedlockModuleOptions>;
}

/**
 * `RedlockModule.forRootAsync(...)`: `imports` and `inject` with `useFactory`, or `useClass` / `useExisting`
 * naming a {@link RedlockOptionsFactory}. The factory returns `{ nodes, ...options }`.
 */
export interface RedlockModuleAsyncOptions
  extends ConfigurableModuleAsyncOptions<RedlockModuleOptions, 'createRedlockOptions'>, RedlockModuleExtras {}
