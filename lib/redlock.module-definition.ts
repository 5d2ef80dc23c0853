import { ConfigurableModuleBuilder, Provider } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { LockBusyFilter } from './lock-busy.filter';
import { InvalidArgumentError } from './core';
import { LockedSections } from './locked';
import * as messages from './redlock.messages';
import {
  DEFAULT_MODULE_OPTIONS,
  REDLOCK_MODULE_OPTIONS,
  REDLOCK_RESOLVED_OPTIONS,
} from './redlock.constants';
import type { RedlockModuleExtras, RedlockModuleOptions } from './redlock.interfaces';
import { RedlockHealthIndicator } from './redlock.health';
import { ResolvedModuleOptions, resolveModuleOptions } from './redlock.module-options';
import { RedlockService } from './redlock.service';

/**
 * The builder writes the options providers of `forRoot` / `forRootAsync` (`useFactory`, `useClass`,
 * `useExisting`); the extras (`busyFilter`) are read here, when the module is assembled, and never reach
 * the options. The module is global and exports `RedlockService`, `RedlockHealthIndicator` and
 * `LockedSections` (what `@Locked` methods reach by property injection).
 */
export const { ConfigurableModuleClass: RedlockConfigurableModule } =
  new ConfigurableModuleBuilder<RedlockModuleOptions>({ optionsInjectionToken: REDLOCK_MODULE_OPTIONS })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createRedlockOptions')
    .setExtras<RedlockModuleExtras>(
      { busyFilter: DEFAULT_MODULE_OPTIONS.busyFilter },
      (definition, extras) => ({
        ...definition,
        global: true,
        providers: [...(definition.providers ?? []), ...redlockProviders(extras)],
        exports: [RedlockService, RedlockHealthIndicator, LockedSections],
      }),
    )
    .build();

function redlockProviders(extras: RedlockModuleExtras): Provider[] {
  if (extras.busyFilter !== undefined && typeof extras.busyFilter !== 'boolean') {
    throw new InvalidArgumentError(messages.badModuleOptions(messages.badBusyFilter(extras.busyFilter)));
  }
  const providers: Provider[] = [
    { provide: REDLOCK_RESOLVED_OPTIONS, useFactory: resolveModuleOptions, inject: [REDLOCK_MODULE_OPTIONS] },
    // lib/locked knows only the core: it gets the instance and the log sink as values (docs/DESIGN.md §0).
    {
      provide: LockedSections,
      useFactory: (resolved: ResolvedModuleOptions) => new LockedSections(resolved.redlock, resolved.log),
      inject: [REDLOCK_RESOLVED_OPTIONS],
    },
    RedlockService,
    RedlockHealthIndicator,
  ];
  if (extras.busyFilter !== false) providers.push({ provide: APP_FILTER, useClass: LockBusyFilter });
  return providers;
}
