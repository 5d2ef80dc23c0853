/**
 * The core's wording in one place: how values, resources and votes appear in messages, the vote constants
 * every operation reports with, and the sentences that say what to do. Errors (errors.ts) are built from these.
 */
import { type NodeVote, formatVotes, hintsFor } from './votes';

/** A short description of a bad value for messages: `"abc" (a string)`, `-1`, `undefined`, `an object`. */
export function describe(value: unknown): string {
  // A long string is cut, as resources are: a 1 MB value never makes a 1 MB message.
  if (typeof value === 'string') return `${shortResource(value)} (a string)`;
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined || value === null) {
    return String(value);
  }
  if (typeof value === 'bigint') return `${value}n (a bigint)`;
  if (typeof value !== 'object') return `a ${typeof value}`;
  try {
    return Array.isArray(value) ? 'an array' : 'an object';
  } catch {
    return 'a revoked Proxy'; // Array.isArray throws on one
  }
}

const TIMER_LIMIT = '2147483647 ms (about 24.8 days), the longest delay a Node timer can wait';

/**
 * For a value of the wrong type that is text looking like the right one — what configuration (environment
 * variables, query strings) gives: how to convert it. Empty otherwise.
 */
export function textHint(value: unknown, expected: 'number' | 'boolean'): string {
  if (typeof value !== 'string') return '';
  if (expected === 'number' && value.trim() !== '' && Number.isFinite(Number(value))) {
    return ' It is text that looks like a number (configuration values arrive as strings): convert it with Number().';
  }
  if (expected === 'boolean' && /^(true|false)$/i.test(value.trim())) {
    return " It is text (configuration values arrive as strings): convert it, e.g. value === 'true'.";
  }
  return '';
}

/** A duration that is not a whole number of ms ≥ `min` (or, where allowed, Infinity). */
export function durationInvalid(name: string, min: number, infinite: boolean, value: unknown): string {
  const range = infinite
    ? `a number of milliseconds ≥ ${min}`
    : min === 1
      ? 'a positive whole number of milliseconds'
      : `a whole number of milliseconds ≥ ${min}`;
  const fraction =
    !infinite && typeof value === 'number' && Number.isFinite(value) && !Number.isInteger(value);
  return (
    `${name} must be ${range}${infinite ? ' or Infinity' : ''}, got ${describe(value)}` +
    `${min === 0 && infinite ? ' (0 = a single attempt, Infinity = no limit)' : ''}.` +
    (fraction ? ` Fractions are refused, not rounded: pass Math.ceil(${value}).` : '') +
    textHint(value, 'number')
  );
}

/** A duration above 2³¹ − 1 ms: Node would fire its timer after 1 ms instead. */
export function durationTooLong(name: string, value: number, infiniteOk: boolean, max: number): string {
  if (max === Number.MAX_SAFE_INTEGER) {
    return (
      `${name} of ${value} ms is beyond what JavaScript keeps exact (Number.MAX_SAFE_INTEGER). Use at most ` +
      `${max}; for a lock that should outlive its holder's work, auto-extension keeps a short ttl alive.`
    );
  }
  return (
    `${name} of ${value} ms is longer than ${TIMER_LIMIT} (a longer one fires after 1 ms). ` +
    `Use at most 2147483647${infiniteOk ? `, or ${name}: Infinity for no limit` : ''}.`
  );
}

/** Longer resources are cut in messages, so a 1 MB resource never makes a 1 MB message. */
const MESSAGE_RESOURCE_CHARS = 100;
/** More resources than this are counted in messages rather than listed. */
const MESSAGE_RESOURCE_COUNT = 10;

/** `"a"` or `["a", "b"]`, for messages; a long resource as `"abc…"…(N chars)`, a long list with a count. */
export function formatResources(resources: readonly string[]): string {
  if (resources.length === 1) return shortResource(resources[0]);
  const shown = resources.slice(0, MESSAGE_RESOURCE_COUNT).map(shortResource);
  const more = resources.length - shown.length;
  return `[${shown.join(',')}${more > 0 ? `, …and ${more} more` : ''}]`;
}

function shortResource(resource: string): string {
  if (resource.length <= MESSAGE_RESOURCE_CHARS) return JSON.stringify(resource);
  let cut = resource.slice(0, MESSAGE_RESOURCE_CHARS);
  // Never end on half a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${JSON.stringify(cut + '…')}…(${resource.length} chars)`;
}

/** A resource with a lone UTF-16 surrogate at `index`. */
export function notWellFormed(resource: string, index: number): string {
  const unit = resource.charCodeAt(index).toString(16).toUpperCase();
  return (
    `resource ${formatResources([resource])} is not well-formed Unicode: it has a lone UTF-16 surrogate ` +
    `(U+${unit} at index ${index}), which reaches Redis as U+FFFD, so different resources would share one ` +
    'key. Pass well-formed strings (encode binary ids as hex or base64).'
  );
}

/** A resource starting with `}`. */
export function hashTagEscape(resource: string): string {
  return (
    `resource ${formatResources([resource])} starts with "}": in its lock key (<prefix>{}…}) the Redis Cluster ` +
    'hash tag would be empty, so Redis would hash the whole key and the lock and fence keys of this resource ' +
    'would land in different slots. Put another character first.'
  );
}

/** A keyPrefix with a brace. */
export function braceInPrefix(prefix: string): string {
  return (
    `keyPrefix ${JSON.stringify(prefix)} contains "{" or "}": each resource is the Redis Cluster hash tag of its ` +
    'keys (<prefix>{resource}), so a brace in the prefix would take its place (an empty "{}" would even hash ' +
    "each whole key, splitting a resource's keys over slots), and instances with different prefixes could write " +
    "the same key for different resources ('a{x}' + 'y' and 'a' + 'x}{y'). Remove the braces from keyPrefix."
  );
}

/** A restart-guard marker key that holds data of another type or form (ForeignDataError). */
export function foreignMarker(key: string, found: string): string {
  const dataAge = key.endsWith(':since');
  const marker = dataAge ? 'data-age marker' : 'boot marker';
  const holds = found === 'string' ? 'a string that is not a marker' : `a ${found}`;
  return (
    `the restart guard's ${marker} ${shortKey(key)} holds ${holds}: data that is not this library's ` +
    '(another application uses that key name), so this node takes no lock rather than overwrite it. Set a ' +
    'keyPrefix that no other application uses, or, if that data is not needed, delete the key on this node' +
    (dataAge
      ? ' (without its data-age marker, the node then refuses locks for one restart-guard window, as after a restart).'
      : '.')
  );
}

/** A key named by a node, for messages: quoted, at most 200 characters. */
function shortKey(key: string): string {
  return JSON.stringify(key.length > 200 ? `${key.slice(0, 200)}…` : key);
}

export function sameServer(first: number, firstName: string, second: number, secondName: string): string {
  return (
    `nodes[${first}] (${firstName}) and nodes[${second}] (${secondName}) are the same Redis server (same run_id): ` +
    'it holds two votes, so a lock held there and on one other node looks like a majority. List each server ' +
    'once — Redlock needs independent nodes.'
  );
}

export function portableGuard(nodes: readonly string[]): string {
  return (
    `INFO is not readable on ${nodes.join(', ')} (ACL without @dangerous, a managed service, or no run_id): the ` +
    'restart guard runs in its portable mode there — a node that lost its data is recognised by a missing ' +
    'marker key and refuses for one window; a node that restored old data from disk but lost its last writes ' +
    'is only recognised where INFO is readable (grant +info to the Redis user for that).'
  );
}

export function guardRefusal(window: number, retryAfter: number | undefined): string {
  return (
    `the restart guard (window ${window} ms) keeps too many nodes from taking locks` +
    (retryAfter !== undefined ? `; a quorum takes part again in ${retryAfter} ms` : '')
  );
}

/** A caller refused because `maxWaiting` callers of the instance already wait for the resources. */
export function queueFull(resources: readonly string[], maxWaiting: number): string {
  return (
    `Lock ${formatResources(resources)} already has ${maxWaiting} caller${maxWaiting === 1 ? '' : 's'} of this ` +
    `instance waiting (maxWaiting: ${maxWaiting}): refused at once instead of waiting too. Try again later, or ` +
    'raise maxWaiting (leave it out for no limit).'
  );
}

export function busy(
  resources: readonly string[],
  votes: readonly NodeVote[],
  attempts: number,
  waitedMs: number,
) {
  const tried = `(${attempts} attempt${attempts === 1 ? '' : 's'} over ${Math.round(waitedMs)} ms)`;
  // Every lock this library writes expires: a key without expiry was written by other code.
  if (votes.some((vote) => vote.outcome === 'busy' && vote.holderTtl === -1)) {
    return (
      `Lock ${formatResources(resources)} cannot be taken: its key holds other data without an expiry, ` +
      `which no lock leaves ${tried}. Nodes: ${formatVotes(votes)}. Other code uses the same keys: set a ` +
      'distinct keyPrefix (or remove that data).'
    );
  }
  return (
    `Lock ${formatResources(resources)} is held by another owner ${tried}. ` +
    `Nodes: ${formatVotes(votes)}. Wait longer (option \`wait\`) or treat the work as already being done elsewhere.`
  );
}

export function unavailable(
  resources: readonly string[],
  votes: readonly NodeVote[],
  attempts: number,
  detail: string,
): string {
  return (
    `Could not lock ${formatResources(resources)}: ${detail}` +
    ` (after ${attempts} attempt${attempts === 1 ? '' : 's'}). Nodes: ${formatVotes(votes)}. ` +
    hintsFor(votes)
  );
}

export function noQuorum(quorum: number, total: number, yes: number): string {
  return `a quorum of ${quorum} of ${total} nodes is needed, ${yes} agreed`;
}

export function expiredAtGrant(elapsed: number, ttl: number, drift: number): string {
  return (
    `the quorum was reached only after ${Math.round(elapsed)} ms, leaving no validity of the ` +
    `${ttl} ms ttl (drift allowance ${drift} ms); use a longer ttl or faster nodes`
  );
}

export function fenceShort(written: number, quorum: number): string {
  return `the fencing token reached only ${written} of the ${quorum} nodes needed`;
}

export function extendUnavailable(quorum: number, total: number, yes: number): string {
  return (
    `could not extend: a quorum of ${quorum} of ${total} nodes is needed, ${yes} agreed; ` +
    'the lock keeps its validity (shortened if the new ttl was shorter)'
  );
}

export function lost(resources: readonly string[], reason: string): string {
  return `Lock ${formatResources(resources)} was lost: ${reason}`;
}

export const LOST_BEFORE_RENEWAL = 'its validity ran out before it could be extended.';

/** Below this ttl, a lock lost before its first renewal is explained by its ttl (ms). */
const SHORT_RENEWED_TTL = 100;

/**
 * Why an auto-extended lock was lost at its deadline. A short ttl never renewed says that the ttl itself is
 * the cause, and what to use instead.
 */
export function lostBeforeRenewal(ttl: number, everRenewed: boolean): string {
  if (everRenewed || ttl >= SHORT_RENEWED_TTL) return LOST_BEFORE_RENEWAL;
  return (
    `its validity ran out before its first renewal: a ${ttl} ms ttl leaves, after the acquisition and the ` +
    'drift allowance, only a few ms for a renewal to reach a quorum of nodes and come back (a round trip plus ' +
    `event-loop delays). With auto-extension use a ttl of at least ${SHORT_RENEWED_TTL} ms (1,000 ms or more ` +
    'is usual; the lock is renewed while the work runs), or autoExtend: false for work that ends within the ttl.'
  );
}
export const LOST_DURING_WORK = 'its validity ran out while the work was running.';
export const LOST_BEFORE_EXTEND = 'its validity ran out before it was extended.';
export const LOST_ALREADY_RELEASED = 'it was already released.';
export const LOST_EXTEND_TOO_SLOW = 'the extension took longer than its ttl.';

export function lostQuorum(votes: readonly NodeVote[]): string {
  return `too few nodes still hold it (${formatVotes(votes)}). Another owner may hold it now.`;
}

export function aborted(resources: readonly string[]): string {
  return `Acquiring ${formatResources(resources)} was aborted by the caller's signal.`;
}

export function closed(operation: string, resources: readonly string[]): string {
  const what = resources.length > 0 ? ` ${formatResources(resources)}` : '';
  return (
    `Cannot ${operation}${what}: this Redlock instance was closed (quit()). Create a new instance for more ` +
    'locks; during shutdown, stop taking work before calling quit().'
  );
}

export function unknownEvent(event: unknown, known: readonly string[], near: string | undefined): string {
  const guess = near === undefined ? '' : ` (did you mean "${near}"?)`;
  return `on()/off(): unknown event ${describe(event)}${guess}. Known ones: ${known.join(', ')}.`;
}

export function notAListener(event: string, listener: unknown): string {
  return `on("${event}", listener): the listener must be a function, got ${describe(listener)}.`;
}

/** Reading the logger's warn or debug threw (a getter or a Proxy trap). */
export function unreadableLogger(error: unknown): string {
  return (
    `logger could not be read: reading its warn or debug method threw (${errorText(error)}). Pass an object ` +
    'with plain methods, e.g. { warn: (message) => log.warn(message) }, or false for silence.'
  );
}

export function errorText(error: unknown): string {
  try {
    return error instanceof Error ? `${error.name}: ${error.message}` : describe(error);
  } catch {
    return 'an unreadable error';
  }
}

export function unknownOption(what: string, key: string, known: readonly string[], near?: string): string {
  const guess = near === undefined ? '' : ` (did you mean "${near}"?)`;
  return `Unknown ${what} "${key}"${guess}. Known ones: ${known.join(', ')}.`;
}

export function evenNodeCount(count: number, quorum: number): string {
  return (
    `${count} nodes: an even count tolerates no more failures than ${count - 1} ` +
    `would, and still needs ${quorum}. Use an odd number of nodes.`
  );
}

export function workUnprotected(message: string): string {
  return `${message} Work still running under it is no longer protected.`;
}

export function finishedAfterLoss(message: string): string {
  return `${message} The work finished anyway (onLockLost: 'warn').`;
}

export function notALock(operation: string, value: unknown): string {
  return `${operation}() needs a Lock returned by acquire(), got ${describe(value)}.`;
}

export function foreignLock(operation: string, resources: readonly string[]): string {
  return (
    `${operation}(): this lock on ${formatResources(resources)} was acquired through another Redlock ` +
    'instance (other nodes or key prefix); call it on the instance that acquired it.'
  );
}

/** A semaphore call with another number of permits than the one recorded for the resource. */
export function conflictingPermits(
  resources: readonly string[],
  permits: number,
  recorded: number,
  node: string,
  key: string,
): string {
  const found =
    recorded === -1 ? `the key ${key} there holds something else` : `${recorded} permits are recorded there`;
  return (
    `Cannot take one of ${permits} permits of ${formatResources(resources)}: on ${node} ${found}. Every ` +
    `caller of one resource must use the same number of permits (or another resource name); otherwise each ` +
    `would admit its own number of holders. The record expires once nobody acquires with it for its ttl.`
  );
}

/** `permits` asked for several resources at once. */
export function permitsOfSeveral(resources: readonly string[], permits: number): string {
  return (
    `permits: ${permits} takes one resource, got ${formatResources(resources)}. A semaphore limits the ` +
    `holders of one resource; take each in a call of its own.`
  );
}

/** Why a revoked lock was lost (`LockRevokedError`). */
export function revoked(reason: string): string {
  return `it was revoked (${JSON.stringify(reason)}): revoke() deleted it on the nodes. Another owner may hold it now.`;
}

/** The log line of every revocation this instance makes. */
export function revocationLine(resource: string, reason: string, deletedOn: number, nodes: number): string {
  return `Revoked the lock on ${JSON.stringify(resource)} (${JSON.stringify(reason)}): deleted on ${deletedOn} of ${nodes} nodes.`;
}

/** A node's wall clock stepped (docs/DESIGN.md §17). */
export function clockStepped(node: string, step: number): string {
  return (
    `${node}: its wall clock stepped ${step > 0 ? 'forward' : 'back'} by about ${Math.abs(step)} ms between two ` +
    'of its answers. Redis expires keys by that clock, so locks there may have ended early: its grants do not ' +
    'count for one restart-guard window. Make NTP slew the clock instead of stepping it (chrony: no makestep ' +
    'after start-up; ntpd: -x).'
  );
}
