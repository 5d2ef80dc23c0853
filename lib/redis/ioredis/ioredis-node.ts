import type { Redis } from 'ioredis';
import { CommandBatcher } from './command-batcher';
import {
  isClusterClient,
  quitClient,
  SentinelWatch,
  waitForReady,
  ioredisChannels,
  NodeChannels,
  ScanTarget,
  ScriptLockNode,
} from '../script-node';
import type { LuaScript, ScriptCall } from '../scripts';

/** The node is not connected, so a command was not sent (rather than queued for a later replay). */
export class NodeNotConnectedError extends Error {
  constructor(status: string, firstConnection = false) {
    super(notConnected(status, firstConnection));
    this.name = 'NodeNotConnectedError';
  }
}

/** Commands are never queued for later (a replay could land on a restarted node), so say how to get ready. */
function notConnected(status: string, firstConnection: boolean): string {
  if (firstConnection && (status === 'connecting' || status === 'connect')) {
    return (
      `not connected yet (client status "${status}": its first connection is still being made); await ` +
      'redlock.connect() before the first lock (RedlockModule connects at start-up)'
    );
  }
  if (status === 'wait') {
    return (
      'not connected yet (client status "wait": a lazyConnect client never started); await redlock.connect() ' +
      'before locking (RedlockModule connects at start-up)'
    );
  }
  if (status === 'end' || status === 'close')
    return `not connected (client status "${status}": the client was closed)`;
  return (
    `not connected (client status "${status}": its client keeps reconnecting); calls are not queued for later ` +
    '(a replay could land on a restarted node), so they fail until the node is back'
  );
}

/**
 * A {@link LockNode} over an ioredis client (or an iovalkey one: the same API): the adapter behind the core's
 * port. Scripts are called by SHA and re-sent in full when the node answers NOSCRIPT (its script cache was
 * flushed or it restarted), so `SCRIPT FLUSH` never breaks locking.
 *
 * Commands are sent only while the client is `ready`. Otherwise ioredis would queue them offline and
 * replay them after reconnecting, possibly onto a restarted node long after the caller gave up.
 */
export class IoredisLockNode extends ScriptLockNode {
  readonly name: string;
  /**
   * True for clients the library creates, except while a command re-sent after NOSCRIPT is pending
   * (docs/DESIGN.md §3). Such clients never replay a command after a reconnect, so an answer can only arrive
   * on the connection that carried its command, before the answer to the release sent after it. A client
   * passed in may resend an unanswered acquire after reconnecting, behind a release that could not be sent
   * then, so its late answers are undone separately.
   */
  get ordered(): boolean {
    // A Cluster resends commands after MOVED/ASK redirections: never ordered.
    return this.owned && !this.cluster && !this.commands.reordering;
  }
  private readonly commands: CommandBatcher;
  /** Ready at least once: before, a call that finds it connecting is told to await connect(). */
  private everReady = false;
  private readonly onReady = () => {
    this.everReady = true;
    this.learnRunId();
  };
  private readonly onClose = () => this.forgetRunId();
  /** A Sentinel-managed client's connections to its sentinels, closed with it (only a client of the library's). */
  private readonly sentinels: SentinelWatch | undefined;

  /**
   * @param owned the library created the client (offline queue and command replay off, ioredis
   *   auto-pipelining off): under load the calls of one event-loop turn then leave in one socket write, the node is
   *   {@link ordered}, and {@link close} quits the client.
   */
  constructor(
    readonly client: Redis,
    name?: string,
    private readonly owned = false,
  ) {
    super(isClusterClient(client));
    this.name = name ?? describeClient(client);
    // A Cluster client has no one socket to cork: its calls go out one by one.
    this.commands = new CommandBatcher(client, owned && !this.cluster);
    // The run_id of the server behind the current connection, for the restart guard's fast path. A new
    // connection (perhaps to a restarted server) forgets it until it has been read again.
    client.on('ready', this.onReady);
    client.on('close', this.onClose);
    if (client.status === 'ready') this.onReady();
    this.sentinels = owned ? SentinelWatch.of(client) : undefined;
  }

  protected info(): Promise<string> {
    const status = this.client.status;
    if (status !== 'ready') return Promise.reject(new NodeNotConnectedError(status, !this.everReady));
    return this.client.info('server');
  }

  protected async ping(): Promise<void> {
    const status = this.client.status;
    if (status !== 'ready') throw new NodeNotConnectedError(status, !this.everReady);
    await this.client.ping();
  }

  protected async scanTargets(): Promise<readonly ScanTarget[]> {
    const status = this.client.status;
    if (status !== 'ready') throw new NodeNotConnectedError(status, !this.everReady);
    const servers = isClusterClient(this.client)
      ? (this.client as unknown as { nodes(role: 'master'): Redis[] }).nodes('master')
      : [this.client];
    return servers.map((server) => ({
      scan: (cursor: string, pattern: string, count: number) =>
        server.scan(cursor, 'MATCH', pattern, 'COUNT', count),
    }));
  }

  protected openChannels(): NodeChannels {
    return ioredisChannels(this.client);
  }

  /** Ready, and the guard mode learnt (INFO read or found unreadable). */
  async connect(timeout: number): Promise<void> {
    await waitForReady(this.client, timeout);
    await this.learning;
  }

  /** Closes the subscriber connection, if one was opened, and — for a client the library created — the client. */
  async close(timeout: number): Promise<void> {
    const channels = this.closeChannels();
    this.client.off('ready', this.onReady);
    this.client.off('close', this.onClose);
    if (this.owned) await quitClient(this.client, timeout, this.sentinels);
    await channels;
  }

  protected run(script: LuaScript, call: ScriptCall): Promise<unknown> {
    return this.send(script, call, false);
  }

  protected override runWithTurn(script: LuaScript, call: ScriptCall): Promise<unknown> {
    return this.send(script, call, true);
  }

  /** Rejects (never throws) when the client is not ready, so callers can rely on a promise. */
  private send(script: LuaScript, call: ScriptCall, withTurn: boolean): Promise<unknown> {
    const status = this.client.status;
    if (status !== 'ready') return Promise.reject(new NodeNotConnectedError(status, !this.everReady));
    return withTurn
      ? this.commands.callWithTurn(script, call.keys, call.args)
      : this.commands.call(script, call.keys, call.args);
  }
}

/** `host:port` of an ioredis client, for messages and duplicate detection. */
export function describeClient(client: Redis): string {
  const startup = (client as { startupNodes?: { host?: string; port?: number }[] }).startupNodes;
  if (isClusterClient(client) && Array.isArray(startup)) {
    return `cluster ${startup.map((n) => `${n.host ?? '127.0.0.1'}:${n.port ?? 6379}`).join(',')}`;
  }
  const options = client.options ?? {};
  if (options.path) return options.path;
  // Behind Sentinel the address changes with failovers: the group name and its sentinels identify it.
  if (options.sentinels && options.sentinels.length > 0) {
    const sentinels = options.sentinels.map((s) => `${s.host ?? '127.0.0.1'}:${s.port ?? 26379}`).join(',');
    return `sentinel ${options.name ?? 'mymaster'}@${sentinels}`;
  }
  return `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}
