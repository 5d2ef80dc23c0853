import { Inject } from '@nestjs/common';
import { Observable, isObservable } from 'rxjs';
import {
  DEFAULT_OPTIONS,
  InvalidArgumentError,
  ResolvedOptions,
  OptionsKind,
  USING_OPTION_KEYS,
  UsingOptions,
  describe,
  readOptions,
  resolveCallOptions,
} from '../core';
import type { LockedOptions } from './locked.options';
import * as messages from './locked.messages';
import { copyMethodMetadata } from './copy-method-metadata';
import { LockKeySource, compileLockKey } from './lock-key';
import { LockedPlan, lockedMethod } from './locked-method';
import { LockedSections } from './locked-sections';

/**
 * What `@Locked` can decorate: methods returning a Promise (async methods) or an Observable. A synchronous
 * method does not match, so TypeScript rejects the decorator on it: its work could not wait for the lock.
 */
export type LockableMethod = (...args: any[]) => Promise<unknown> | Observable<unknown>;

/**
 * Runs the method only while holding a distributed lock on the resources its arguments name.
 *
 * ```ts
 * @Locked('order:<0>')                             // <0> = first argument
 * async pay(orderId: string) { ... }
 *
 * @Cron('0 * * * * *')
 * @Locked('report:hourly', { onBusy: 'skip' })     // another instance runs it: skip quietly
 * async hourly() { ... }
 * ```
 *
 * - `key`: a template (`'order:<0>'`, `'tenant:<1.tenant.id>'`), an array of templates (one lock on several
 *   resources), or a function of the arguments returning a key or keys. Compiled here, when the class is
 *   defined: a malformed template or an index past the declared parameters throws `InvalidLockKeyError`
 *   at start-up. See `lock-key.ts` for the syntax and the escaping that keeps keys injective.
 * - Works on providers, controllers and `@Cron` tasks (it wraps the method itself, so no interceptor is
 *   needed), in either order with other decorators: their metadata, the method's `name`, `length` and
 *   `design:*` metadata are kept.
 * - Reaches the application's `LockedSections` through property injection, so each Nest application in a
 *   process uses its own, and request-scoped and transient providers work.
 * - The method's own errors and results pass through unchanged; the lock is always released afterwards.
 * - Reentrant within one call chain: a locked section calling another on resources it holds does not
 *   acquire them again (see `RedlockService.using`).
 * - An Observable method (declared return type `Observable<T>`) is locked from subscription until it
 *   completes, errors or is unsubscribed.
 */
export function Locked(key: LockKeySource, options?: LockedOptions) {
  return <T extends LockableMethod>(
    target: object,
    propertyKey: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ): TypedPropertyDescriptor<T> => {
    const where = whereOf(target, propertyKey);
    if (typeof target === 'function') throw new InvalidArgumentError(messages.staticMethod(where));
    const original = descriptor?.value;
    if (typeof original !== 'function') throw new InvalidArgumentError(messages.notAMethod(where));
    const returnType: unknown = Reflect.getMetadata('design:returntype', target, propertyKey);
    if (SYNCHRONOUS_TYPES.has(returnType)) {
      throw new InvalidArgumentError(messages.synchronousMethod(where, (returnType as Function).name));
    }

    // One injected property per method: its description is what Nest prints when RedlockModule is missing.
    const sectionsProperty = Symbol(messages.sectionsProperty(where));
    const compiled = compileLockKey(key, where, original.length);
    const plan: LockedPlan = {
      where,
      propertyKey,
      key: compiled,
      // Low cardinality: the template, never the rendered resource.
      template: compiled.templates?.join(',') ?? where,
      ...planOptions(where, options),
      observable: isObservableType(returnType),
      sectionsProperty,
    };
    Inject(LockedSections)(target, sectionsProperty);

    const wrapper = lockedMethod(original, plan);
    copyMethodMetadata(original, wrapper);
    descriptor.value = wrapper as T;
    return descriptor;
  };
}

/**
 * Validates the options now, with the core's own rules for `using()` options and its reading of an options
 * object (unknown and reserved keys, getters), so a bad one fails when the class is defined. The module's defaults are not known yet: the core's stand in.
 */
function planOptions(where: string, options: LockedOptions | undefined): PlannedOptions {
  const bad = (problem: string) => new InvalidArgumentError(messages.badLockedOptions(where, problem));
  if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
    throw bad(`options must be an object like { ttl: 5000, onBusy: 'skip' }, got ${describe(options)}.`);
  }
  let given: Record<string, unknown>;
  let rest: UsingOptions;
  try {
    // Read once (own keys, each value once; no __proto__, no unknown key): what is checked is what is used.
    given = options === undefined ? Object.create(null) : readOptions(options, LOCKED_OPTIONS);
    rest = Object.fromEntries(Object.entries(given).filter(([key]) => !LOCKED_ONLY_KEYS.includes(key)));
    resolveCallOptions(rest, CORE_DEFAULTS, USING_OPTION_KEYS);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw bad(error.message);
  }
  const { onBusy, oncePerTick = true } = given;
  if (onBusy !== undefined && onBusy !== 'throw' && onBusy !== 'skip') throw bad(messages.badOnBusy(onBusy));
  if (typeof oncePerTick !== 'boolean') throw bad(messages.badOncePerTick(oncePerTick));
  // Called directly, a busy lock throws unless told to skip; a scheduled tick skips unless told to throw.
  const direct = onBusy ?? 'throw';
  const scheduled = onBusy ?? 'skip';
  return {
    options: coreOptions(rest, direct),
    onBusy: direct,
    scheduledOptions: coreOptions(rest, scheduled),
    scheduledOnBusy: scheduled,
    scheduledWaitGiven: rest.wait !== undefined || scheduled === 'throw',
    oncePerTick,
  };
}

const LOCKED_ONLY_KEYS = ['onBusy', 'oncePerTick'];
const LOCKED_OPTIONS: OptionsKind = {
  name: '@Locked options',
  option: '@Locked option',
  known: new Set([...USING_OPTION_KEYS, ...LOCKED_ONLY_KEYS]),
};

type PlannedOptions = Pick<
  LockedPlan,
  'options' | 'onBusy' | 'scheduledOptions' | 'scheduledOnBusy' | 'scheduledWaitGiven' | 'oncePerTick'
>;

/** Skipping is for work another instance is already doing: one attempt, unless a wait is asked for. */
function coreOptions(rest: UsingOptions, onBusy: 'throw' | 'skip'): UsingOptions | undefined {
  const core: UsingOptions = onBusy === 'skip' && rest.wait === undefined ? { ...rest, wait: 0 } : rest;
  return Object.keys(core).length > 0 ? Object.freeze(core) : undefined;
}

/** Declared return types (emitDecoratorMetadata) that say the method is synchronous. */
const SYNCHRONOUS_TYPES: ReadonlySet<unknown> = new Set([String, Number, Boolean, Array, BigInt, Symbol]);

const CORE_DEFAULTS = Object.freeze({ ...DEFAULT_OPTIONS, logger: undefined }) as ResolvedOptions;

/** `Observable`, a subclass, or an Observable class from another copy of rxjs. */
function isObservableType(type: unknown): boolean {
  return typeof type === 'function' && type.prototype != null && isObservable(type.prototype);
}

function whereOf(target: object, propertyKey: string | symbol): string {
  const owner = typeof target === 'function' ? target : target.constructor;
  return `${owner?.name || '<anonymous class>'}.${String(propertyKey)}`;
}
