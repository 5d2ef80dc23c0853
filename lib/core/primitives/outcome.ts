import type { AcquisitionResult } from '../acquire';
import type { RedlockEvents } from '../events';
import type { LockGrant } from '../lock';
import type { AcquireRequest } from '../nodes';
import type { CallSettings } from '../options';
import type { PermitResult } from './permits';

/**
 * What an acquisition hands out and says: the grant of the Lock it won, and the event (`acquired`, `busy`,
 * `unavailable`) that reports how it ended.
 */

/** @internal What the `Lock` of a won acquisition holds: the winning attempt's keys, owner value, deadline and token. */
export function grantOf(
  result: Extract<PermitResult, { kind: 'acquired' }>,
  request: AcquireRequest,
  resources: readonly string[],
  settings: CallSettings,
): LockGrant {
  return {
    resources,
    keys: result.keys ?? request.keys,
    permit: result.permit,
    mode: settings.mode,
    readerKeys: request.readerKeys,
    fenceKeys: request.fenceKeys,
    value: result.owner,
    ttl: settings.ttl,
    deadline: result.attempt.deadline,
    attempts: result.attempts,
    fencingToken: result.attempt.token,
  };
}

/** Emits `acquired`, `busy` or `unavailable` for how one acquisition ended (built only when listened to). */
export function announceOutcome(
  events: RedlockEvents,
  result: AcquisitionResult,
  resources: readonly string[],
  settings: CallSettings,
  elapsed: number,
  retryAfter: number | undefined,
): void {
  const kind = { mode: settings.mode, permits: settings.permits };
  if (result.kind === 'acquired') {
    if (!events.has('acquired')) return;
    const { attempts } = result;
    events.emit('acquired', { resources, attempts, elapsed, fencingToken: result.attempt.token, ...kind });
  } else if (result.attempt.kind === 'busy') {
    if (events.has('busy')) {
      events.emit('busy', { resources, attempts: result.attempts, waited: result.elapsed, ...kind });
    }
  } else if (events.has('unavailable')) {
    const waited = result.elapsed;
    events.emit('unavailable', { resources, attempts: result.attempts, waited, retryAfter, ...kind });
  }
}
