import { ioredis } from '../script-node';

/**
 * Options ioredis reads that have no default (so are missing from `Redis.defaultOptions`), as of ioredis 5:
 * the address, TLS, sentinel credentials, timeouts that are off unless set, and internals tests pass.
 */
const WITHOUT_DEFAULTS = [
  'host',
  'port',
  'path',
  'family',
  'tls',
  'username',
  'password',
  'db',
  'keyPrefix',
  'showFriendlyErrorStack',
  'commandTimeout',
  'socketTimeout',
  'blockingTimeout',
  'blockingTimeoutGrace',
  'sentinels',
  'name',
  'role',
  'natMap',
  'preferredSlaves',
  'sentinelUsername',
  'sentinelPassword',
  'sentinelTLS',
  'sentinelCommandTimeout',
  'scripts',
  'monitor',
  'offlineQueue',
  'commandQueue',
  'Connector',
];

let known: ReadonlySet<string> | undefined;

/**
 * The option names the installed ioredis accepts: those it has defaults for (read from ioredis itself, so a
 * newer version's additions are known) plus {@link WITHOUT_DEFAULTS}.
 */
export function ioredisOptionKeys(): ReadonlySet<string> {
  known ??= new Set([
    ...Object.keys((ioredis().default as unknown as { defaultOptions?: object }).defaultOptions ?? {}),
    ...WITHOUT_DEFAULTS,
  ]);
  return known;
}
