import { InvalidArgumentError, LockLostError } from '../errors';
import type { DeposedReason, RedlockEvents } from '../events';
import type { Lock } from '../lock';
import { describe, textHint } from '../messages';
import { UsingOptions, readMethodOptions } from '../options';

/** Options of `lead()`. */
export interface LeadOptions {
  /** Time to live of the lease in ms, renewed while `work` runs (default: the instance's `ttl`). */
  ttl?: number;
  /**
   * After the lease was lost while `work` ran (`lease.signal` aborted with a `LockLostError`): campaign again
   * and run `work` again under a new lease with a larger fencing token (default `true`). `false`: `lead()`
   * rejects with that `LockLostError` once `work` has settled.
   */
  recampaign?: boolean;
  /**
   * Stops campaigning (the call rejects with `AcquireAbortedError`) and ends the current term: the lease's
   * `signal` aborts with this signal's reason, and the lease is released once `work` settles.
   */
  signal?: AbortSignal;
}

/** @internal Runs one term: holds the lease (renewed) while `work` runs; `using()` or the locked sections. */
export type TermRunner = <T>(options: UsingOptions, work: (lease: Lock) => Promise<T>) => Promise<T>;

const LEAD_OPTION_KEYS: ReadonlySet<string> = new Set(['ttl', 'recampaign', 'signal']);

/**
 * @internal Leadership as a lease (docs/DESIGN.md §13): the mutex on `name`, campaigned for without a time
 * limit, fenced (a token per term), auto-extended while `work(lease)` runs and released when it returns.
 * A term whose lease is lost ends when `work` settles (it should stop on `lease.signal`); then, unless
 * `recampaign` is false, the next term campaigns again. Resolves `work`'s value; rejects with `work`'s own
 * error, the loss (without recampaign), an abort, or the instance closing.
 */
export async function runLeadership<T>(
  runTerm: TermRunner,
  events: RedlockEvents,
  name: string,
  work: (lease: Lock) => Promise<T>,
  options: LeadOptions = {},
): Promise<T> {
  const { ttl, recampaign, signal } = validateLead(name, work, options);
  const resources = [name];
  for (let termOfCall = 1; ; termOfCall++) {
    let reason = 'returned' as DeposedReason;
    try {
      return await runTerm(
        { ttl, wait: Infinity, fencing: true, autoExtend: true, onLockLost: 'throw', signal },
        async (lease) => {
          const fencingToken = lease.fencingToken as number;
          if (events.has('elected'))
            events.emit('elected', { resources, termOfCall, term: termOfCall, fencingToken });
          const abort = () => lease.abortSignal(signal!.reason as Error);
          signal?.addEventListener('abort', abort, { once: true });
          try {
            return await work(lease);
          } catch (error) {
            reason = 'failed';
            throw error;
          } finally {
            signal?.removeEventListener('abort', abort);
            // The caller's signal, or shutdown in Nest (the locked sections abort the lease's signal).
            if (lease.lostError) reason = 'lost';
            else if (lease.signal.aborted) reason = 'aborted';
            if (events.has('deposed'))
              events.emit('deposed', { resources, termOfCall, term: termOfCall, fencingToken, reason });
          }
        },
      );
    } catch (error) {
      const lost = reason === 'lost' && error instanceof LockLostError;
      if (!lost || !recampaign || signal?.aborted) throw error;
    }
  }
}

/** @internal Checks lead()'s arguments; reads its options from their own properties. */
export function validateLead(
  name: unknown,
  work: unknown,
  options: unknown,
): LeadOptions & { recampaign: boolean } {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidArgumentError(
      `lead() needs the name of the leadership as a non-empty string (e.g. 'scheduler'), got ${describe(name)}.`,
    );
  }
  if (typeof work !== 'function') {
    throw new InvalidArgumentError(
      `lead() needs the work to run while leading, as a function (lease) => Promise, got ${describe(work)}.`,
    );
  }
  // Read once, own keys only, into a null-prototype record: a polluted Object.prototype adds nothing.
  const read = readMethodOptions(options, LEAD_OPTION_KEYS, 'lead() option', LEAD_EXAMPLE) as LeadOptions;
  const { ttl, signal } = read;
  const recampaign = 'recampaign' in read ? read.recampaign : true;
  if (typeof recampaign !== 'boolean') {
    throw new InvalidArgumentError(
      `lead() option recampaign must be true or false, got ${describe(recampaign)}.` +
        `${textHint(recampaign, 'boolean')} Default: true (campaign again after a lost lease).`,
    );
  }
  // ttl and signal are checked with the term's options, before any traffic (resolveCallOptions).
  return { ttl, recampaign, signal };
}

/** lead()'s options, as an example in its messages. */
const LEAD_EXAMPLE = '{ ttl: 10000, recampaign: true } (leave them out for the defaults)';
