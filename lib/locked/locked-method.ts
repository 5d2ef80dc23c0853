import { Observable, ObservableInput, Subscription, from, isObservable } from 'rxjs';
import { RedlockError, UsingOptions, normalizeResources } from '../core';
import * as messages from './locked.messages';
import type { CompiledLockKey } from './lock-key';
import type { LockedSections, ScheduledRun } from './locked-sections';
import { TickSchedule, scheduleOf } from './scheduled-tick';

/** Everything `@Locked` settled when the class was defined. */
export interface LockedPlan {
  /** `Class.method`, for messages. */
  readonly where: string;
  /** The decorated method's name: where the final method (with any `@Cron` metadata) is found. */
  readonly propertyKey: string | symbol;
  readonly key: CompiledLockKey;
  /** What the gauges count its locks under: the key's templates, or `where` for a key function. */
  readonly template: string;
  /** Passed to the core as they are (`undefined`: the module's defaults). */
  readonly options: UsingOptions | undefined;
  readonly onBusy: 'throw' | 'skip';
  /** The same, on a method scheduled with @nestjs/schedule (busy: skip by default, one attempt). */
  readonly scheduledOptions: UsingOptions | undefined;
  readonly scheduledOnBusy: 'throw' | 'skip';
  /** The caller chose the wait of a scheduled call (otherwise the schedule's own short wait applies). */
  readonly scheduledWaitGiven: boolean;
  /** Keep a scheduled tick's lock until shortly before the next tick. */
  readonly oncePerTick: boolean;
  /** The method returns an Observable (known from its declared return type). */
  readonly observable: boolean;
  /** The property where Nest injected the application's {@link LockedSections}. */
  readonly sectionsProperty: symbol;
}

type Method = (...args: unknown[]) => unknown;
type Instance = Record<string | symbol, unknown>;

/** The method that replaces a `@Locked` one: runs `original` while holding the lock its arguments name. */
export function lockedMethod(original: Method, plan: LockedPlan): Method {
  // Read on the first call: decorators written above @Locked put their metadata on the final method later.
  let schedule: TickSchedule | null | undefined;
  let scheduledOptions: UsingOptions | undefined;
  return function (this: Instance, ...args: unknown[]): unknown {
    if (schedule === undefined) {
      schedule = scheduleOf(finalMethod(this, plan.propertyKey)) ?? null;
      scheduledOptions =
        schedule && !plan.scheduledWaitGiven
          ? Object.freeze({ ...plan.scheduledOptions, wait: schedule.wait })
          : plan.scheduledOptions;
    }
    const run: ScheduledRun | undefined = schedule
      ? { schedule, firedAt: Date.now(), oncePerTick: plan.oncePerTick, options: scheduledOptions }
      : undefined;
    return plan.observable
      ? lockedObservable(original, this, args, plan, run)
      : lockedPromise(original, this, args, plan, run);
  };
}

function finalMethod(self: Instance, propertyKey: string | symbol): unknown {
  return self == null ? undefined : Object.getPrototypeOf(self)?.[propertyKey];
}

/** Lock, run, release — also when the method throws; a failed release never hides its outcome. */
async function lockedPromise(
  original: Method,
  self: Instance,
  args: unknown[],
  plan: LockedPlan,
  run: ScheduledRun | undefined,
) {
  const outcome = await runLocked(self, args, plan, run, async () => {
    const value = original.apply(self, args);
    if (isObservable(value)) throw new RedlockError(messages.unexpectedObservable(plan.where));
    return value;
  });
  return outcome.ran ? outcome.value : undefined;
}

/**
 * Acquires when subscribed, then calls the method and subscribes to its Observable under the lock (like
 * rxjs `defer`: every subscription runs the method again, under its own lock). Releases once the source
 * completes or errors — before passing that on, so a consumer that goes on afterwards finds the lock free —
 * or when the subscriber unsubscribes, also while the lock is still being acquired.
 */
function lockedObservable(
  original: Method,
  self: Instance,
  args: unknown[],
  plan: LockedPlan,
  run: ScheduledRun | undefined,
) {
  return new Observable<unknown>((subscriber) => {
    let inner: Subscription | undefined;
    let stop: (() => void) | undefined;
    let unsubscribed = false;

    // The work of the lock: resolves (and so lets the lock go) when the source ends or we unsubscribe.
    const work = () =>
      new Promise<void>((resolve, reject) => {
        if (unsubscribed) return resolve();
        stop = resolve;
        inner = from(original.apply(self, args) as ObservableInput<unknown>).subscribe({
          next: (value) => subscriber.next(value),
          error: reject,
          complete: resolve,
        });
      });

    runLocked(self, args, plan, run, work).then(
      () => subscriber.complete(),
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      unsubscribed = true;
      inner?.unsubscribe();
      stop?.();
    };
  });
}

/** Renders the keys and runs `work` as a locked section of the instance's own application. */
async function runLocked<T>(
  self: Instance,
  args: unknown[],
  plan: LockedPlan,
  run: ScheduledRun | undefined,
  work: () => Promise<T>,
) {
  const sections = self?.[plan.sectionsProperty] as LockedSections | undefined;
  if (sections === undefined || typeof sections.runOrSkip !== 'function') {
    throw new RedlockError(messages.notManaged(plan.where));
  }
  const resources = normalizeResources(plan.key.render(args));
  const { where, template } = plan;
  if (run) {
    const { options } = run;
    return sections.runOrSkip({
      resources,
      options,
      onBusy: plan.scheduledOnBusy,
      where,
      template,
      work,
      scheduled: run,
    });
  }
  return sections.runOrSkip({ resources, options: plan.options, onBusy: plan.onBusy, where, template, work });
}
