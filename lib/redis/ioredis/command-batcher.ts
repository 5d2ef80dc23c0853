import type { Command, Redis } from 'ioredis';
import { type LuaScript, firstCallOf } from '../scripts';
import { isClusterClient, explainClusterReply, ioredis } from '../script-node';
import { respOf } from './resp-command';

/**
 * Below this many commands in flight on the connection, calls go out at once: the few in flight are then
 * stragglers (answers not needed for a quorum, or a previous caller's), and waiting to batch would only add
 * latency to sequential use.
 */
const BATCH_FROM_IN_FLIGHT = 8;

/**
 * While corked, the buffered calls are written once they reach this many bytes (a few hundred lock calls), so
 * a long turn's calls reach the node while the turn still runs.
 */
const CORKED_BYTES = 64 * 1024;

/** A socket as the batcher corks it. */
interface CorkableStream {
  cork(): void;
  uncork(): void;
  /** Bytes buffered and not yet handed to the system (Node's Writable). */
  readonly writableLength: number;
}

/**
 * Captured when this module loads: fake timers a test installs later (Jest fakes `setImmediate`) must not keep
 * a socket corked, which would hold back every write on it.
 */
const nextTurn = setImmediate;
const endOfTick = process.nextTick;

/**
 * Sends script calls to one node: straight away while the connection is nearly idle (no added latency for
 * sequential use), and under load written together: the first call of an event-loop turn made while many are
 * in flight corks the socket until `setImmediate`, so the calls that the answers of every node's socket set off
 * in one turn share a write (one system call per 64 KiB). No pipeline object is built for them: each call is the same
 * command it would be alone, and its promise settles as the node's answer arrives.
 * ioredis' own auto-pipelining defers every command to the next `setImmediate`, which doubles the client
 * CPU and adds latency when calls are sequential.
 * Each script's first call is an EVAL (it loads the script), every later one EVALSHA, re-sent as EVAL when the
 * node answers NOSCRIPT (its script cache was flushed).
 */
export class CommandBatcher {
  private inFlight = 0;
  /** The socket corked until the next `setImmediate` (calls of this turn share its write), if any. */
  private corked: CorkableStream | undefined;
  /** Commands re-sent after NOSCRIPT whose answers may not have been handled yet (see {@link reordering}). */
  private resent = 0;

  /** How script calls are put on the wire: {@link prebuiltSender} where it can, else {@link send}. */
  private readonly send: Sender;

  /**
   * The scripts (by SHA) this batcher has sent in full ({@link firstCallOf}): its first renewal batch is not
   * answered NOSCRIPT and encoded a second time either.
   */
  private readonly sentInFull = new Set<string>();

  constructor(
    private readonly client: Redis,
    private readonly batching: boolean,
  ) {
    // Only the library's own clients (batching): a client passed in keeps its own methods (a subclass may
    // override them) and never makes the library load ioredis.
    this.send = (batching && prebuiltSender(client)) || send;
  }

  call(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const { corked } = this;
    if (corked) {
      // A long turn (thousands of releases at once) must not hold its calls back until it ends: the nodes
      // then start on them only after every call's node timeout has run, and each would count as timed out.
      if (corked.writableLength >= CORKED_BYTES) {
        corked.uncork();
        corked.cork();
      }
    } else if (this.batching && this.inFlight >= BATCH_FROM_IN_FLIGHT) this.corkForTurn();
    return this.direct(script, keys, args);
  }

  /**
   * {@link call}, written to the socket together with the calls made after it in this turn of the event loop
   * (and its microtasks): one system call for all instead of one each. For a call the core sends with others.
   */
  callWithTurn(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    const stream = this.corkable();
    if (stream) {
      stream.cork();
      endOfTick(() => stream.uncork());
    }
    return this.call(script, keys, args);
  }

  /** The client's socket while commands written now go to it (not to ioredis' offline queue). */
  private corkable(): CorkableStream | undefined {
    if (!this.batching || this.client.status !== 'ready') return undefined;
    const stream = (this.client as { stream?: Partial<CorkableStream> }).stream;
    return stream?.cork && stream.uncork && typeof stream.writableLength === 'number'
      ? (stream as CorkableStream)
      : undefined;
  }

  /** Corks the socket until the next `setImmediate`: the calls of this turn leave together ({@link CORKED_BYTES}). */
  private corkForTurn(): void {
    const stream = this.corkable();
    if (!stream) return;
    this.corked = stream;
    stream.cork();
    nextTurn(() => {
      this.corked = undefined;
      stream.uncork();
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
    return this.send(this.client, script, keys, args, firstCallOf(this.sentInFull, script)).then(
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
    return this.send(this.client, script, keys, args, true).finally(() => {
      this.inFlight--;
      // Counted until the callers' handlers of this answer (microtasks) have run.
      nextTurn(() => this.resent--);
    });
  }
}

/** Sends one script call to a client; resolves its reply. */
type Sender = (
  target: Redis,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
  inFull?: boolean,
) => Promise<unknown>;

/** What {@link send} calls on a client. */
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
  target: Redis,
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

/** What {@link prebuiltSender} calls: a client of the same ioredis module as its Command. */
interface CommandTarget {
  sendCommand(command: Command): unknown;
}

type CommandClass = typeof Command;

const NO_ARGS: never[] = [];

/**
 * A sender that builds ioredis' Command itself, with its arguments already flat and as strings: ioredis'
 * own command methods copy every argument through `Array.prototype.flat`, which costs about 0.12 µs per
 * argument — for a batched renewal (5 arguments per lock and node) more than a quarter of the client's
 * CPU per renewed lock (docs/BENCHMARKS.md, held locks). Only for a plain client of the ioredis module this
 * library loads (the one it creates its clients with: its Command class is then the client's own) without
 * `keyPrefix` (the Command constructor would prefix keys), `showFriendlyErrorStack` or auto-pipelining; any other client
 * (iovalkey, another copy of ioredis, a Cluster) keeps {@link send}. The Command is what ioredis' `evalsha`
 * and `eval` build (same name, arguments, reply encoding), so the bytes on the wire are the same.
 */
function prebuiltSender(client: Redis): Sender | undefined {
  let CommandOf: CommandClass;
  try {
    const module = ioredis();
    if (Object.getPrototypeOf(client) !== module.Redis.prototype || typeof module.Command !== 'function')
      return undefined;
    CommandOf = module.Command;
  } catch {
    return undefined;
  }
  const options = (client as unknown as { options?: Record<string, unknown> }).options;
  // keyPrefix: the constructor prefixes keys; the other two change how ioredis' own methods send.
  if (!options || options.keyPrefix || options.showFriendlyErrorStack || options.enableAutoPipelining)
    return undefined;
  const ScriptCommand = scriptCommandOf(CommandOf);
  return (target, script, keys, args, inFull = false) => {
    const command = new ScriptCommand(inFull ? 'eval' : 'evalsha', NO_ARGS, { replyEncoding: 'utf8' });
    if (!inFull && keys.length >= SHARED_BYTES_FROM) {
      const built = sharedCall(script, keys, args);
      command.args = built.flat;
      command.bytes = built.bytes;
    } else {
      // Set after construction: the constructor would flatten (and stringify) them again.
      command.args = flatArgs(script, keys, args, inFull);
    }
    (target as unknown as CommandTarget).sendCommand(command);
    return command.promise as Promise<unknown>;
  };
}

/** ioredis' Command as the library sends a script call: its bytes built once for all nodes, or by respOf. */
type ScriptCommandClass = new (
  ...args: ConstructorParameters<CommandClass>
) => Command & { bytes: Buffer | undefined };

/** The subclass made for each ioredis Command class: one class (one object shape) for every client. */
const scriptCommands = new WeakMap<CommandClass, ScriptCommandClass>();

/** ioredis' Command, written as one flat string ({@link respOf}) instead of a chain of concatenations. */
function scriptCommandOf(CommandOf: CommandClass): ScriptCommandClass {
  let made = scriptCommands.get(CommandOf);
  if (!made) {
    made = class ScriptCommand extends CommandOf {
      /** The call's bytes when built once and shared by every node ({@link sharedCall}). */
      bytes: Buffer | undefined = undefined;
      override toWritable(): string | Buffer {
        return this.bytes ?? respOf(this.name, this.args as string[]);
      }
    };
    scriptCommands.set(CommandOf, made);
  }
  return made;
}

/** A script call's arguments for ioredis' Command: the script (SHA, or source), the key count, keys, args. */
function flatArgs(
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
  inFull: boolean,
): string[] {
  const flat = new Array<string>(2 + keys.length + args.length);
  flat[0] = inFull ? script.source : script.sha;
  flat[1] = String(keys.length);
  let k = 2;
  for (let i = 0; i < keys.length; i++) flat[k++] = keys[i];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    flat[k++] = typeof arg === 'string' ? arg : String(arg);
  }
  return flat;
}

/**
 * From this many keys, an EVALSHA's bytes are built once per call object and shared by every node it is sent
 * to: a batched renewal sends the same call (the same `keys` and `args` arrays, `renewal-batches.ts`) to each
 * node, and ioredis would otherwise build and encode its 500-odd arguments again for each one — the largest
 * share of an instance's CPU while it holds thousands of locks.
 */
const SHARED_BYTES_FROM = 32;

/** An EVALSHA built once: its arguments for ioredis' Command and its bytes as Command.toWritable writes them. */
interface SharedCall {
  readonly keys: readonly string[];
  readonly sha: string;
  readonly flat: string[];
  readonly bytes: Buffer;
}

/** The calls built so far, by their `args` array: the same array sent again (with the same keys) is the same call. */
const sharedCalls = new WeakMap<readonly (string | number)[], SharedCall>();

/** The EVALSHA of `script` with `keys` and `args`, built on its first node and reused for the others. */
export function sharedCall(
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): SharedCall {
  const known = sharedCalls.get(args);
  if (known && known.keys === keys && known.sha === script.sha) return known;
  const flat = flatArgs(script, keys, args, false);
  const built = { keys, sha: script.sha, flat, bytes: Buffer.from(respOf('evalsha', flat), 'utf8') };
  sharedCalls.set(args, built);
  return built;
}
