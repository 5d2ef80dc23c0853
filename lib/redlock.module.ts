import { DynamicModule, Module } from '@nestjs/common';
import { InvalidArgumentError, describe } from './core';
import type { NodeSpec } from './redis';
import * as messages from './redlock.messages';
import { RedlockConfigurableModule } from './redlock.module-definition';
import { readModuleOptions } from './redlock.module-options';
import type { RedlockModuleAsyncOptions, RedlockRootOptions } from './redlock.interfaces';

/**
 * Distributed locks over N independent Redis nodes. Import it once, in the root module; it is global and
 * provides `RedlockService` everywhere (and `@Locked` through it).
 *
 * ```ts
 * RedlockModule.forRoot(['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379', 'redis://10.0.0.3:6379'], { ttl: 5000 })
 * RedlockModule.forRootAsync({ inject: [ConfigService], useFactory: (config) => ({ nodes: config.get('REDLOCK_NODES') }) })
 * ```
 */
@Module({})
export class RedlockModule {
  /**
   * @param nodes one entry per independent Redis server: connection strings, ioredis options, or ready
   *   ioredis clients (never closed by the module; those it creates itself are closed on shutdown).
   * @param options core options (`ttl`, `wait`, `nodeTimeout`, `keyPrefix`, ...: the defaults of every
   *   call), Nest-level ones (`logger`, `connectTimeout`, `shutdownTimeout`) and `busyFilter`.
   */
  static forRoot(nodes: readonly NodeSpec[] | string, options: RedlockRootOptions = {}): DynamicModule {
    // Read here, before Nest's builder copies them (its copy would drop a `__proto__` key silently).
    const read = readModuleOptions(options) as RedlockRootOptions;
    return { ...RedlockConfigurableModule.forRoot({ ...read, nodes }), module: RedlockModule };
  }

  /** Options from a factory (`useFactory` + `inject` + `imports`) or a class (`useClass`, `useExisting`). */
  static forRootAsync(options: RedlockModuleAsyncOptions): DynamicModule {
    checkAsyncOptions(options);
    return { ...RedlockConfigurableModule.forRootAsync(options), module: RedlockModule };
  }
}

/** What Nest would otherwise refuse later with a generic error (or accept and fail at the first call). */
function checkAsyncOptions(options: unknown): void {
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError(
      messages.badAsyncOptions(`expected an options object, got ${describe(options)}`),
    );
  }
  const { useFactory, useClass, useExisting } = options as Record<string, unknown>;
  const given = [useFactory, useClass, useExisting].filter((way) => way !== undefined).length;
  if (given !== 1) {
    throw new InvalidArgumentError(
      messages.badAsyncOptions(
        given === 0
          ? 'none of useFactory, useClass or useExisting was given'
          : 'give only one of useFactory, useClass and useExisting',
      ),
    );
  }
  if (useFactory !== undefined && typeof useFactory !== 'function') {
    throw new InvalidArgumentError(
      messages.badAsyncOptions(`useFactory must be a function, got ${describe(useFactory)}`),
    );
  }
  if (useClass !== undefined) {
    const prototype = (useClass as { prototype?: Record<string, unknown> } | null)?.prototype;
    if (typeof useClass !== 'function' || typeof prototype?.createRedlockOptions !== 'function') {
      throw new InvalidArgumentError(
        messages.badAsyncOptions(`useClass ${describe(useClass)} has no createRedlockOptions() method`),
      );
    }
  }
}
