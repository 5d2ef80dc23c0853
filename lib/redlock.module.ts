import { DynamicModule, Module } from '@nestjs/common';
import type { NodeSpec } from './redis';
import { RedlockConfigurableModule } from './redlock.module-definition';
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
  static forRoot(nodes: readonly NodeSpec[], options: RedlockRootOptions = {}): DynamicModule {
    return { ...RedlockConfigurableModule.forRoot({ ...options, nodes }), module: RedlockModule };
  }

  /** Options from a factory (`useFactory` + `inject` + `imports`) or a class (`useClass`, `useExisting`). */
  static forRootAsync(options: RedlockModuleAsyncOptions): DynamicModule {
    return { ...RedlockConfigurableModule.forRootAsync(options), module: RedlockModule };
  }
}
