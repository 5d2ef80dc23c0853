import { InvalidArgumentError, UnknownOptionError, describe } from '../core';
import { ioredisOptionKeys } from './ioredis';

/**
 * Where a node is, checked before a client is made from it (docs/DESIGN.md §11): ioredis would take a bad
 * port or host as it is — `TypeError: Invalid URL` from deep inside, `'6379x'` read as 6379, port 0, a
 * `'host:port'` host looked up as a name — and the node would only show up as "not connected" at the first
 * lock. Each message names the node's position, the field, the rule and the fix.
 */

const URL_FORM = 'redis://[username:password@]host:port[/db] (rediss:// for TLS), e.g. redis://10.0.0.1:6379';

/**
 * A `redis://` / `rediss://` connection string. Its query keys are ioredis options for a client of `kind`
 * ioredis; node-redis takes none (and its applications may not have ioredis installed at all).
 */
export function checkNodeUrl(url: string, index: number, kind: 'ioredis' | 'node-redis' = 'ioredis'): void {
  const where = `nodes[${index}] (${redacted(url)})`;
  const bad = (problem: string) => new InvalidArgumentError(`${where}: ${problem}`);
  // The parts as written, so a port WHATWG refuses is named as such rather than as an "Invalid URL".
  const written = /^rediss?:\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#[\]]*)(?::([^/?#]*))?(?=[/?#]|$)/i.exec(url);
  if (written?.[1] === '') throw bad(`the URL has no host. Write it as ${URL_FORM}.`);
  if (written && written[2] !== undefined && written[2] !== '') {
    const problem = portProblem(written[2], written[2]);
    if (problem !== undefined) throw bad(`the port ${problem} Fix it in the URL: ${URL_FORM}.`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad(`not a valid URL. Write it as ${URL_FORM}.`);
  }
  if (parsed.hostname === '') throw bad(`the URL has no host. Write it as ${URL_FORM}.`);
  if (parsed.port === '0') throw bad(`the port ${portProblem(0)!} Fix it in the URL: ${URL_FORM}.`);
  if (!/^\/?(\d+)?$/.test(parsed.pathname)) {
    throw bad(
      `the path ${JSON.stringify(parsed.pathname)} is not a database number: after the address, a URL may only ` +
        `name the database, as a whole number (redis://10.0.0.1:6379/2).`,
    );
  }
  if (kind === 'node-redis') {
    const key = [...parsed.searchParams.keys()][0];
    if (key !== undefined) {
      throw bad(
        `node-redis takes no options in the URL's query (found ${JSON.stringify(key)}): pass them as ` +
          "{ url, socket: { ... } } with client: 'node-redis', or leave the query out.",
      );
    }
    return;
  }
  const known = ioredisOptionKeys();
  for (const key of parsed.searchParams.keys()) {
    if (!known.has(key))
      throw new UnknownOptionError(`ioredis option in the query of nodes[${index}]`, key, known);
  }
}

/** ioredis options: the address fields, where given (`path`, a Unix socket, replaces host and port). */
export function checkNodeOptions(options: Readonly<Record<string, unknown>>, index: number): void {
  checkAddress(options, `nodes[${index}]`, 6379);
  const { path, db, sentinels } = options;
  if (path !== undefined && (typeof path !== 'string' || path.length === 0)) {
    throw new InvalidArgumentError(
      `nodes[${index}].path must be the path of a Unix socket (a non-empty string), got ${describe(path)}. ` +
        "Example: { path: '/run/redis/redis.sock' }, or host and port instead.",
    );
  }
  if (db !== undefined && !(typeof db === 'number' ? Number.isSafeInteger(db) && db >= 0 : isDigits(db))) {
    throw new InvalidArgumentError(
      `nodes[${index}].db must be a database number, a whole number ≥ 0, got ${describe(db)}. Example: { db: 0 }.`,
    );
  }
  if (sentinels !== undefined) {
    if (!Array.isArray(sentinels) || sentinels.length === 0) {
      throw new InvalidArgumentError(
        `nodes[${index}].sentinels must be a non-empty array of { host, port }, got ${
          Array.isArray(sentinels) ? 'an empty array' : describe(sentinels)
        }. ` + "Example: { sentinels: [{ host: '10.0.0.1', port: 26379 }], name: 'mymaster' }.",
      );
    }
    sentinels.forEach((sentinel: unknown, at) => {
      const where = `nodes[${index}].sentinels[${at}]`;
      if (sentinel === null || typeof sentinel !== 'object') {
        throw new InvalidArgumentError(`${where} must be { host, port }, got ${describe(sentinel)}.`);
      }
      checkAddress(sentinel as Record<string, unknown>, where, 26379);
    });
  }
}

/** `host` and `port` of an options object, where given. */
function checkAddress(options: Readonly<Record<string, unknown>>, where: string, usual: number): void {
  const { host, port } = options;
  if (host !== undefined) {
    const problem = hostProblem(host, usual);
    if (problem !== undefined) throw new InvalidArgumentError(`${where}.host ${problem}`);
  }
  if (port !== undefined) {
    const problem = portProblem(port);
    if (problem !== undefined) {
      throw new InvalidArgumentError(
        `${where}.port ${problem} Example: { host: '10.0.0.1', port: ${usual} }.`,
      );
    }
  }
}

/**
 * What is wrong with a port, or undefined: a whole number from 1 to 65535, or a string of its digits (ioredis
 * reads one with parseInt, which would take '6379x' as 6379). `shown`: the port as written in a URL.
 */
function portProblem(port: unknown, shown = describe(port)): string | undefined {
  const number = typeof port === 'number' ? port : isDigits(port) ? Number(port) : NaN;
  if (Number.isInteger(number) && number >= 1 && number <= 65535) return undefined;
  return `must be a whole number from 1 to 65535, got ${shown}.`;
}

/** What is wrong with a host option, or undefined. */
function hostProblem(host: unknown, usual: number): string | undefined {
  if (typeof host !== 'string' || host.trim() === '') {
    return (
      `must be a host name or IP address (a non-empty string), got ${describe(host)}. Example: ` +
      `{ host: '10.0.0.1', port: ${usual} }.`
    );
  }
  if (/^rediss?:\/\//i.test(host)) {
    return `${JSON.stringify(host)} is a URL, not a host: pass the URL itself as the node ('${redacted(host)}').`;
  }
  if (/\s/.test(host)) return `${JSON.stringify(host)} holds whitespace: a host name or IP address has none.`;
  const hostPort = /^([^:]+):(\d*)$/.exec(host);
  if (hostPort) {
    return (
      `${JSON.stringify(host)} holds a port: ioredis would look the whole string up as a host name. Give them ` +
      `apart: { host: '${hostPort[1]}', port: ${hostPort[2] || usual} }.`
    );
  }
  return undefined;
}

function isDigits(value: unknown): boolean {
  return typeof value === 'string' && /^\d{1,16}$/.test(value);
}

/** The URL without its password (in the user part or the query), for messages. */
function redacted(url: string): string {
  return url
    .replace(/^(rediss?:\/\/)([^@/?#]*)@/i, (_, scheme: string, user: string) => {
      const colon = user.indexOf(':');
      return `${scheme}${colon >= 0 ? `${user.slice(0, colon)}:***` : '***'}@`;
    })
    .replace(/([?&]password=)[^&#]*/gi, '$1***');
}
