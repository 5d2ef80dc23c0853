import { type AcquireReply, ForeignDataError, type KeyReading, type NodeReading } from '../../core';

/**
 * A node answered a lock script with something the script cannot return: not a Redis server running this
 * library's scripts, or a hostile one. The answer is that node's error vote, never a lock or a token.
 */
export class UnexpectedReplyError extends Error {
  constructor(node: string, operation: string, reply: unknown, problem: string) {
    super(
      `${node} answered ${operation} with ${showReply(reply)}: ${problem}. Counted as this node's error; ` +
        'check that it is a Redis server (not a proxy or another service) and that it can be trusted.',
    );
    this.name = 'UnexpectedReplyError';
  }
}

const ACQUIRED_UNFENCED: AcquireReply = Object.freeze({ outcome: 'acquired', token: 0 });

/**
 * The acquire script's reply (scripts.ts: `1`, `{1, token}`, `{0, holderPttl}`, `{4, readersMs}`,
 * `{2, uptimeMs}`, `{3, dataAgeMs}`), checked field by field: a token that is not a positive safe integer would
 * be written back to honest nodes' fence counters, and a NaN ttl or uptime would end up in waits and messages.
 * `{5, key, type}` (a restart-guard marker holding another application's data) throws ForeignDataError: that
 * node's error vote, naming the key.
 */
export function acquireReplyOf(node: string, raw: unknown, fencing: boolean): AcquireReply {
  const fail = (problem: string): never => {
    throw new UnexpectedReplyError(node, 'the acquire script', raw, problem);
  };
  if (raw === 1) return fencing ? fail('a fencing token was asked for and none came') : ACQUIRED_UNFENCED;
  if (Array.isArray(raw) && raw[0] === 5) throw foreignMarkerOf(node, raw, fail);
  if (!Array.isArray(raw) || raw.length !== 2) return fail('expected 1 or a pair {code, value}');
  const [code, value] = raw as unknown[];
  switch (code) {
    case 1: {
      const token = integerOf(value);
      if (token === undefined || token <= 0) return fail('the fencing token is not a positive safe integer');
      return { outcome: 'acquired', token };
    }
    case 0: {
      const holderTtl = integerOf(value);
      if (holderTtl === undefined || holderTtl < -2) return fail("the holder's ttl is not a PTTL reply");
      return { outcome: 'busy', holderTtl };
    }
    case 4: {
      const holderTtl = integerOf(value);
      if (holderTtl === undefined || holderTtl < 0)
        return fail("the readers' ttl is not a whole number of ms ≥ 0");
      return { outcome: 'busy', holderTtl, readers: true };
    }
    case 2:
    case 3: {
      const uptime = integerOf(value);
      if (uptime === undefined || uptime < 0) return fail('the uptime is not a whole number of ms ≥ 0');
      return { outcome: 'refused', uptime, basis: code === 3 ? 'data-age' : 'uptime' };
    }
    default:
      return fail('unknown reply code (expected 0 to 5)');
  }
}

/** `{5, key, type}`: a restart-guard marker key holds data that is not the library's (scripts.ts). */
function foreignMarkerOf(node: string, raw: unknown[], fail: (problem: string) => never): ForeignDataError {
  const [, key, found] = raw;
  if (
    raw.length !== 3 ||
    typeof key !== 'string' ||
    key.length === 0 ||
    typeof found !== 'string' ||
    !/^[a-z][a-z-]{0,30}$/.test(found)
  ) {
    return fail('a foreign-marker reply that is not {5, key, type}');
  }
  return new ForeignDataError(node, key, found);
}

/** The fence and extend scripts answer 1 (done) or 0 (not the owner), nothing else. */
export function flagReplyOf(node: string, operation: string, raw: unknown): boolean {
  if (raw === 1 || raw === 0) return raw === 1;
  throw new UnexpectedReplyError(node, operation, raw, 'expected 0 or 1');
}

/** The batched extend script answers one 0 or 1 per lock of its call. */
export function flagsReplyOf(node: string, raw: unknown, count: number): boolean[] {
  if (Array.isArray(raw) && raw.length === count && raw.every((flag) => flag === 0 || flag === 1)) {
    return raw.map((flag) => flag === 1);
  }
  throw new UnexpectedReplyError(node, 'the batched extend script', raw, `expected ${count} flags of 0 or 1`);
}

/** The limit script answers the recorded number of permits, or −1 for a value that is not a number. */
export function limitReplyOf(node: string, raw: unknown): number {
  const limit = integerOf(raw);
  if (limit !== undefined && limit >= -1) return limit;
  throw new UnexpectedReplyError(node, 'the limit script', raw, 'expected a whole number ≥ −1');
}

/** The release script answers how many of the `count` keys it deleted. */
export function releaseReplyOf(node: string, raw: unknown, count: number): number {
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= count) return raw;
  throw new UnexpectedReplyError(node, 'the release script', raw, `expected a count from 0 to ${count}`);
}

/** A Redis integer, as ioredis gives it (a number) or as a script returns a large one (decimal digits). */
function integerOf(value: unknown): number | undefined {
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^-?\d{1,16}$/.test(value)
        ? Number(value)
        : NaN;
  return Number.isSafeInteger(number) ? number : undefined;
}

/** A reply for a message: JSON-like, at most 100 characters. */
function showReply(reply: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(reply) ?? String(reply);
  } catch {
    text = String(reply);
  }
  return text.length > 100 ? `${text.slice(0, 100)}…(${text.length} chars)` : text;
}

/** The inspect script's reply (scripts.ts): the clock, then one entry per key, checked field by field. */
export function inspectReplyOf(node: string, raw: unknown, count: number): NodeReading {
  const fail = (problem: string): never => {
    throw new UnexpectedReplyError(node, 'the inspect script', raw, problem);
  };
  if (!Array.isArray(raw) || raw.length !== count + 1) return fail(`expected the clock and ${count} entries`);
  const time = integerOf(raw[0]);
  if (time === undefined || time < 0) return fail('the clock is not a whole number of ms');
  const keys = raw.slice(1).map((entry: unknown): KeyReading => {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') return fail('an entry is not {type, ...}');
    const [type, ...rest] = entry as [string, ...unknown[]];
    if (type === 'none') return { type: 'none' };
    if (type === 'string') {
      const pttl = integerOf(rest[1]);
      if (typeof rest[0] !== 'string' || pttl === undefined)
        return fail('a string entry is not {value, pttl}');
      return { type: 'string', value: rest[0], pttl };
    }
    if (type === 'zset') {
      const pttl = integerOf(rest[0]);
      const size = integerOf(rest[1]);
      if (pttl === undefined || size === undefined || rest.length % 2 !== 0)
        return fail('a bad sorted-set entry');
      const members: [string, number][] = [];
      for (let i = 2; i < rest.length; i += 2) {
        const score = Number(rest[i + 1]);
        if (typeof rest[i] !== 'string' || !Number.isFinite(score)) return fail('a bad sorted-set member');
        members.push([rest[i] as string, score]);
      }
      return { type: 'zset', pttl, count: size, members };
    }
    return { type: 'other', name: type };
  });
  return { time, keys };
}

/** The revoke script answers how many of the `count` keys it deleted. */
export function revokeReplyOf(node: string, raw: unknown, count: number): number {
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= count) return raw;
  throw new UnexpectedReplyError(node, 'the revoke script', raw, `expected a count from 0 to ${count}`);
}
