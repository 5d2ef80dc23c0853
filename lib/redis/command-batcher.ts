import type { ChainableCommander, Redis } from 'ioredis';
import type { LuaScript } from './scripts';
import { isClusterClient } from './cluster-slots';
import { explainClusterReply } from './cluster-member';

interface Queued {
  readonly script: LuaScript;
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Below this many commands in flight on the connection, calls go out at once: the few in flight are then
 * stragglers (answers not needed for a quorum, or a previous caller's), and waiting to batch would only add
 * latency to sequential use.
 */
const BATCH_FROM_IN_FLIGHT = 8;

/**
 * Sends script calls to one node: straight away while the connection is nearly idle (no added latency for
 * sequential use), and under load coalesced into one pipeline per event-loop turn (flushed on
 * `setImmediate`, so the calls that the answers of every node's socket set off in one turn share a write).
 * ioredis' own auto-pipelining defers every command to the next `setImmediate`, which doubles the client
 * CPU and adds latency when calls are sequential.
 * Each call is EVALSHA, re-sent as EVAL when the node answers NOSCRIPT (its script cache was flushed).
 */
export class CommandBatcher {
  private inFlight = 0;
  private queue: Queued[] = [];
  /** Commands re-sent after NOSCRIPT whose answers may not have been handled yet (see {@link reordering}). */
  private resent = 0;

  constructor(
    private readonly client: Redis,
    private readonly batching: boolean,
  ) {}

  call(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    // Once something is queued, later calls queue behind it: a node must run them in the order sent.
    if (!this.batching || (this.inFlight < BATCH_FROM_IN_FLIGHT && this.queue.length === 0))
      return this.direct(script, keys, args);
    return new Promise((resolve, reject) => {
      this.queue.push({ script, keys, args, resolve, reject });
      if (this.queue.length === 1) setImmediate(() => this.flush());
    });
  }

  /**
   * True while a command re-sent after NOSCRIPT is in flight or its answer is being handled: it ran after
   * commands that were sent later, so send order no longer says what order the node ran them in.
   */
  get reordering(): boolean {
    return this.resent > 0;
  }

  /** Not an async function: one promise and no extra microtask hops on the hot path. */
  private direct(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    this.inFlight++;
    return send(this.client, script, keys, args).then(
      (value) => {
        this.inFlight--;
        return value;
      },
      (error: unknown) => {
        this.inFlight--;
        if (!isNoScript(error)) throw this.explained(error);
        return this.resend(script, keys, args);
      },
    );
  }

  /** A plain client's cluster replies (MOVED, CROSSSLOT, ...) say that the node is a cluster member. */
  private explained(error: unknown): unknown {
    if (isClusterClient(this.client)) return error;
    const { host = 'localhost', port = 6379 } = this.client.options ?? {};
    return explainClusterReply({ host, port }, error);
  }

  /** EVAL with the full source, after the node answered NOSCRIPT. */
  private resend(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    this.inFlight++;
    this.resent++;
    return send(this.client, script, keys, args, true).finally(() => {
      this.inFlight--;
      // Counted until the callers' handlers of this answer (microtasks) have run.
      setImmediate(() => this.resent--);
    });
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 1) {
      const [only] = batch;
      this.direct(only.script, only.keys, only.args).then(only.resolve, only.reject);
      return;
    }
    const pipeline = this.client.pipeline();
    for (const { script, keys, args } of batch) send(pipeline, script, keys, args);
    this.inFlight += batch.length;
    pipeline.exec().then(
      (results) => {
        this.inFlight -= batch.length;
        batch.forEach((queued, i) => {
          const [error, value] = results?.[i] ?? [new Error('no reply in the pipeline'), undefined];
          if (!error) queued.resolve(value);
          else if (isNoScript(error))
            this.resend(queued.script, queued.keys, queued.args).then(queued.resolve, queued.reject);
          else queued.reject(this.explained(error));
        });
      },
      (error: unknown) => {
        this.inFlight -= batch.length;
        for (const queued of batch) queued.reject(error);
      },
    );
  }
}

/** What {@link send} calls: a client (resolves the reply) or a pipeline (queues the command). */
interface ScriptTarget {
  evalsha(...flat: unknown[]): unknown;
  eval(...flat: unknown[]): unknown;
}

/**
 * EVALSHA, or EVAL with the full source when `inFull` (the re-send after NOSCRIPT), with the keys
 * and arguments passed as two arrays: ioredis flattens its arguments one level anyway, so this skips
 * spreading them into the call (its typings only list flat arguments).
 */
function send(
  target: Redis | ChainableCommander,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
  inFull = false,
): Promise<unknown> {
  const commands = target as unknown as ScriptTarget;
  return (
    inFull
      ? commands.eval(script.source, keys.length, keys, args)
      : commands.evalsha(script.sha, keys.length, keys, args)
  ) as Promise<unknown>;
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
