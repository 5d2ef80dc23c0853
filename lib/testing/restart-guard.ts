import { type AcquireReply, type AcquireRequest, ForeignDataError } from '../core';
import type { Keyspace } from './keyspace';
import { formatInteger, luaNumber } from './lua-values';

/** What the client sends with an acquire beside the request (ARGV[6] and ARGV[7] of the script). */
export interface GuardArgs {
  /** The server's run_id as the client learnt it ('' if unknown). */
  readonly runId: string;
  /** The client knows INFO is not readable here (portable mode). */
  readonly noInfo: boolean;
}

/** What the guard reads of its node; the three `how`s are where negative controls plant a wrong guard. */
export interface GuardHost {
  readonly name: string;
  readonly keyspace: Keyspace;
  readonly runId: string;
  readonly infoReadable: boolean;
  /** The node's `TIME` in ms. */
  wallMs(): number;
  /** INFO's `uptime_in_seconds`. */
  reportedUptimeSeconds(): number;
  /** The uptime the script takes from INFO's whole seconds, in ms (shipped: a second taken off). */
  uptimeOf(reportedSeconds: number): number;
  /** When a data-age marker found missing counts from (shipped: now). */
  firstSeenAt(now: number, window: number): number;
  /** Whether markers holding another application's data are taken as no marker (shipped: never). */
  readonly overwritesForeign: boolean;
}

/**
 * The restart guard of the acquire script (docs/DESIGN.md §6): precise mode (INFO's uptime, a second taken
 * off, and the boot marker `run_id:start`) or portable mode (the data-age marker `<guard key>:since`); markers
 * holding another application's data are left alone and named (`ForeignDataError`). A refusal, or undefined
 * to go on.
 */
export function guardReply(
  host: GuardHost,
  request: AcquireRequest,
  args: GuardArgs,
): AcquireReply | undefined {
  const boot = request.guardKey;
  const since = `${request.guardKey}:since`;
  const now = host.wallMs();
  if (!args.noInfo) {
    // A boot marker of another type or form is another application's data: left alone, named (ForeignDataError).
    const value = markerValue(host, boot);
    const marker = /^(\w+):(\d+)$/.exec(value ?? '');
    if (value !== undefined && !marker && !/^\w+$/.test(value) && !host.overwritesForeign) {
      throw new ForeignDataError(host.name, boot, 'string');
    }
    if (marker && args.runId !== '' && marker[1] === args.runId) {
      const up = now - Number(marker[2]);
      if (up < request.guardWindow) return { outcome: 'refused', uptime: Math.max(0, up), basis: 'uptime' };
      return undefined;
    }
  }
  const recorded = markerValue(host, since);
  if (recorded !== undefined && !/^\d+$/.test(recorded) && !host.overwritesForeign) {
    throw new ForeignDataError(host.name, since, 'string');
  }
  // INFO from inside the script: readable only in precise mode, and only asked when the client did not say no.
  if (!args.noInfo && host.infoReadable) {
    const uptime = host.uptimeOf(host.reportedUptimeSeconds());
    if (uptime < request.guardWindow) return { outcome: 'refused', uptime, basis: 'uptime' };
    host.keyspace.set(boot, `${host.runId}:${formatInteger(now - uptime)}`);
    if (luaNumber(recorded) === undefined) host.keyspace.set(since, formatInteger(now - uptime));
    return undefined;
  }
  let first = luaNumber(recorded);
  if (first === undefined) {
    first = host.firstSeenAt(now, request.guardWindow);
    host.keyspace.set(since, formatInteger(first));
  }
  if (now - first < request.guardWindow) {
    return { outcome: 'refused', uptime: Math.max(0, now - first), basis: 'data-age' };
  }
  return undefined;
}

/** A restart-guard marker's string, or undefined; a sorted set there is another application's data. */
function markerValue(host: GuardHost, key: string): string | undefined {
  if (host.keyspace.getSet(key) && !host.overwritesForeign)
    throw new ForeignDataError(host.name, key, 'zset');
  return host.keyspace.get(key)?.value;
}
