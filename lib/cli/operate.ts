import type { LockHolder, LockInspection } from '../core';
import { Redlock } from '../redis';

/** What `inspect` and `holders` are given on the command line. */
export interface OperateArgs {
  readonly nodes: readonly string[];
  readonly keyPrefix: string | undefined;
  /** `holders`: only resources starting with this. */
  readonly prefix: string;
  readonly limit: number;
  /** `inspect`: the resource. */
  readonly resource: string | undefined;
}

export const OPERATE_USAGE = `Usage: nestjs-redlock inspect <resource> --nodes <url,url,...> [--key-prefix <prefix>]
       nestjs-redlock holders [--prefix <start of resource names>] [--limit <n>] --nodes <url,url,...> [--key-prefix <prefix>]

inspect: how <resource> is held on every node (owner, since when, ttl left, mode, permit, fencing token) and on
the quorum. holders: the locks held under the key prefix (SCAN, at most --limit resources, default 100).
--nodes: the application's nodes, comma-separated (redis://host:port, rediss://user:pass@host:port, ...).
--key-prefix: the application's keyPrefix (default redlock:). Read-only: nothing is written.`;

/**
 * `inspect r --nodes a,b,c` / `holders --prefix order: --nodes a,b,c` → the arguments (undefined for `--help`);
 * throws with the usage, naming the argument and the rule.
 */
export function parseOperateArgs(
  command: 'inspect' | 'holders',
  args: readonly string[],
): OperateArgs | undefined {
  const fail = (problem: string): never => {
    throw new Error(`nestjs-redlock ${command}: ${problem}\n\n${OPERATE_USAGE}`);
  };
  if (args.includes('--help') || args.includes('-h')) return undefined;
  let nodes: string[] | undefined;
  let keyPrefix: string | undefined;
  let prefix = '';
  let limit = 100;
  let resource: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (!flag.startsWith('--')) {
      if (command !== 'inspect' || resource !== undefined) fail(`unexpected ${JSON.stringify(flag)}`);
      if (flag === '') fail('the resource must be a non-empty string: nestjs-redlock inspect <resource> ...');
      resource = flag;
      continue;
    }
    // Never echo what follows '=': it may be a URL with a password.
    if (flag.includes('='))
      fail(`unknown option ${flag.split('=')[0]}=…: write ${flag.split('=')[0]} <value>, with a space`);
    const value = args[++i];
    if (value === undefined || value.startsWith('--')) fail(`${flag} needs a value`);
    if (flag === '--nodes') nodes = value.split(',').filter(Boolean);
    else if (flag === '--key-prefix') keyPrefix = value;
    else if (flag === '--prefix' && command === 'holders') prefix = value;
    else if (flag === '--limit' && command === 'holders') {
      limit = Number(value);
      if (!/^\d+$/.test(value) || !Number.isInteger(limit) || limit < 1 || limit > 10_000)
        fail(`--limit must be a whole number from 1 to 10000, got ${JSON.stringify(value)}`);
    } else fail(`unknown option ${flag}`);
  }
  if (!nodes || nodes.length === 0) fail('--nodes is required: the Redis nodes the application locks on');
  if (command === 'inspect' && resource === undefined)
    fail('which resource? nestjs-redlock inspect <resource> ...');
  return { nodes: nodes!, keyPrefix, prefix, limit, resource };
}

/** The instance `inspect`/`holders` read through; the core's refusal of --nodes or --key-prefix names the flag. */
function operatorOn(command: 'inspect' | 'holders', args: OperateArgs): Redlock {
  try {
    return new Redlock(args.nodes, {
      logger: false,
      restartGuard: false,
      nodeTimeout: 500,
      owner: 'nestjs-redlock-cli',
      ...(args.keyPrefix !== undefined ? { keyPrefix: args.keyPrefix } : {}),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const flag = message.startsWith('keyPrefix') ? '--key-prefix' : '--nodes';
    throw new Error(`nestjs-redlock ${command}: ${flag}: ${message}\n\n${OPERATE_USAGE}`);
  }
}

/** Runs `inspect` or `holders` against the nodes and returns the table to print. */
export async function operate(command: 'inspect' | 'holders', args: OperateArgs): Promise<string> {
  const redlock = operatorOn(command, args);
  try {
    const states = await redlock.connect(5_000);
    const down = states
      .filter((state) => !state.ready)
      .map((state) => `${state.node}: ${state.error?.message}`);
    const warning = down.length > 0 ? `not connected: ${down.join('; ')}\n` : '';
    if (command === 'inspect') return warning + formatInspection(await redlock.inspect(args.resource!));
    const held = await redlock.holders({ prefix: args.prefix, limit: args.limit });
    return warning + formatHolders(held, args.prefix, args.limit);
  } finally {
    await redlock.quit();
  }
}

/** One resource: its state, then a row per holder on the quorum, then a row per node. */
export function formatInspection(inspection: LockInspection, now = Date.now()): string {
  const head =
    `${inspection.resource}: ${inspection.state}` +
    (inspection.fencingToken !== undefined ? `, fencing token ${inspection.fencingToken}` : '') +
    (inspection.permits !== undefined ? `, ${inspection.permits} permits` : '') +
    (inspection.waiting
      ? `, ${inspection.waiting.count} waiting (the longest for ${inspection.waiting.oldestWait} ms)`
      : '');
  const holders = table(
    ['owner', 'id', 'mode', 'permit', 'ttl', 'held for', 'nodes'],
    inspection.holders.map((holder) => holderRow(holder, now)),
  );
  const nodes = table(
    ['node', 'holders', 'writer waiting', 'waiters in order', 'fencing token', 'error'],
    inspection.nodes.map((node) => [
      node.node,
      node.holders.map((holder) => holder.owner ?? holder.id).join(', ') || '-',
      node.writerWaiting ? 'yes' : '-',
      node.waiters?.map((waiter) => waiter.owner ?? waiter.id).join(', ') || '-',
      node.fencingToken === undefined ? '-' : String(node.fencingToken),
      node.error ?? node.foreign ?? '',
    ]),
  );
  return `${head}\n\n${inspection.holders.length > 0 ? `${holders}\n\n` : ''}${nodes}\n`;
}

/** The held locks, a row per holder. */
export function formatHolders(held: readonly LockInspection[], prefix: string, limit: number): string {
  const rows = held.flatMap((inspection) =>
    inspection.holders.length > 0
      ? inspection.holders.map((holder) => [inspection.resource, inspection.state, ...holderRow(holder)])
      : [[inspection.resource, inspection.state, '-', '-', '-', '-', '-', '-', '-']],
  );
  const scope = prefix ? `resources starting with ${JSON.stringify(prefix)}` : 'all resources';
  if (rows.length === 0) return `no locks held (${scope})\n`;
  const more = held.length >= limit ? ` (the first ${limit}; --limit for more)` : '';
  return `${held.length} lock(s) held, ${scope}${more}\n\n${table(
    ['resource', 'state', 'owner', 'id', 'mode', 'permit', 'ttl', 'held for', 'nodes'],
    rows,
  )}\n`;
}

function holderRow(holder: LockHolder, now = Date.now()): string[] {
  return [
    holder.owner ?? '?',
    holder.id,
    holder.mode,
    holder.permit === undefined ? '-' : String(holder.permit),
    holder.ttl < 0 ? 'no expiry' : `${holder.ttl} ms`,
    holder.since === undefined ? '?' : duration(Math.max(0, now - holder.since)),
    String(holder.nodes),
  ];
}

function duration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** Columns padded to their widest cell. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}
