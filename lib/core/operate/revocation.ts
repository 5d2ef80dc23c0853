import { InvalidArgumentError, LockLostError, LockRevokedError } from '../errors';
import type { Timer } from '../clock';
import type { RedlockEvents } from '../events';
import { type NodeGroup, type LockNode, callNode } from '../nodes';
import type { Lock } from '../lock';
import * as messages from '../messages';
import { largestLimit, readAll } from './inspection';
import { operatorCall } from './operator-call';
import { limitKey, permitKey } from '../primitives';
import { intentKey, lockKey, readersKey } from '../resources';
import { readMethodOptions, type RedlockLogger } from '../options';
import type { HeldLockRegistry } from '../hold';

/** Options of `revoke()`. */
export interface RevokeOptions {
  /** Why: written in the log line, the `revoked` event and the holder's `LockRevokedError` (up to 500 characters). */
  reason: string;
}

/** Options of `holders()`. */
export interface HoldersOptions {
  /** Only resources whose name starts with this (default: every resource under the instance's key prefix). */
  prefix?: string;
  /** The most locks listed (default 100, at most 10 000): scanning stops once that many were found. */
  limit?: number;
}

/** What `revoke()` did. */
export interface RevokeOutcome {
  readonly resource: string;
  /** On how many nodes it deleted something (the lock, a permit, readers or a writer's intent). */
  readonly revokedOn: number;
  /** Nodes that could not be asked, with why. */
  readonly errors: readonly { readonly node: string; readonly error: string }[];
}

/** What revocation needs of its instance. */
export interface RevocationContext {
  readonly group: NodeGroup;
  readonly keyPrefix: string;
  readonly events: RedlockEvents;
  readonly logger: RedlockLogger | undefined;
  /** A held lock declared lost: counted and announced once (`lost`). */
  readonly countLost: (lock: Lock, error: LockLostError) => void;
  /** The locks this instance holds: a revocation heard reaches them. */
  readonly held: HeldLockRegistry;
  /** Counts one revocation made by this instance (`stats.revocations`). */
  readonly counted: () => void;
}

/** The longest reason a revocation may give. */
const MAX_REASON = 500;

/**
 * The revocations of one instance (docs/DESIGN.md §16): it revokes locks on every node, and it learns of the
 * revocation of locks it holds — one subscription per node to the instance's revocation channel
 * (`<key prefix>!revoked`), made when it first holds a lock — and aborts their signal with a
 * `LockRevokedError`. Where a message cannot arrive, the holder still learns it at its next renewal (the keys
 * are gone) or its deadline.
 */
/** How many times a node's subscription to the revocation channel is tried, and how far apart (ms). */
const LISTEN_ATTEMPTS = 6;
const LISTEN_RETRY_MS = 1_000;

export class Revocations {
  /** The subscriptions to the revocation channel, once started. */
  private listening: Promise<void> | undefined;
  /** Retries of failed subscriptions, waiting; cancelled by {@link close}. */
  private readonly retries = new Set<Timer>();
  /** How to end each confirmed subscription: called by close(). */
  private readonly unsubscribes: (() => void)[] = [];
  private closed = false;
  private readonly channel: string;

  constructor(private readonly context: RevocationContext) {
    this.channel = `${context.keyPrefix}!revoked`;
  }

  /** Called for each lock handed out: it will hear of its revocation (the first one starts the subscriptions). */
  track(lock: Lock): void {
    if (!this.listening) void this.listen();
    this.context.held.track(lock);
  }

  /**
   * Deletes `resource`'s lock on every node whoever holds it (its writer, readers, permits and a writer's
   * intent; never its fence counter) and announces it; logs a line and emits `revoked`.
   */
  async revoke(resource: string, options: RevokeOptions): Promise<RevokeOutcome> {
    const reason = validReason(options);
    const { group, keyPrefix } = this.context;
    const key = lockKey(keyPrefix, resource);
    const permits = await this.recordedPermits(key);
    const lockKeys = [key, ...Array.from({ length: permits }, (_, slot) => permitKey(key, slot))];
    const request = {
      keys: [...lockKeys, readersKey(key), intentKey(key)],
      lockKeys: lockKeys.length,
      channel: this.channel,
      message: JSON.stringify({ resource, reason }),
    };
    const answers = await Promise.all(
      group.nodes
        .map((node) => {
          if (!node.revoke)
            return Promise.reject(new Error(`${node.name} cannot revoke (its LockNode has no revoke())`));
          return operatorCall(group, node, 'revoke', () => node.revoke!(request), 'revocation');
        })
        .map((answer, index) =>
          answer.then(
            (deleted) => ({ deleted, error: undefined }),
            (error: unknown) => ({
              deleted: 0,
              error: `${group.nodes[index].name}: ${(error as Error)?.message ?? error}`,
            }),
          ),
        ),
    );
    const revokedOn = answers.filter((answer) => answer.deleted > 0).length;
    const errors = answers.flatMap((answer, index) =>
      answer.error ? [{ node: group.nodes[index].name, error: answer.error }] : [],
    );
    // Locks of this very instance learn it at once, without waiting for the message.
    this.heard(resource, reason);
    this.context.counted();
    this.context.logger?.warn(messages.revocationLine(resource, reason, revokedOn, group.nodes.length));
    const { events } = this.context;
    if (events.has('revoked')) events.emit('revoked', { resource, reason, revokedOn });
    return { resource, revokedOn, errors };
  }

  /** The largest number of permits any node records for the lock key (0: not a semaphore, or unknown). */
  private async recordedPermits(key: string): Promise<number> {
    return largestLimit(await readAll(this.context.group, [limitKey(key)]), 0);
  }

  /**
   * Subscribes to the revocation channel on every node that can (once per instance; `connect()` waits for it, a
   * first lock without `connect()` starts it). Resolves when every node answered; never rejects: without the
   * subscription a holder learns of a revocation at its next renewal or its deadline.
   */
  listen(): Promise<void> {
    this.listening ??= Promise.all(this.context.group.nodes.map((node) => this.subscribeOn(node, 0))).then(
      () => undefined,
    );
    return this.listening;
  }

  /**
   * One node's subscription. A failed one (a confirmation that came too late on a loaded host, a node that was
   * down) is tried again in the background, a few times, so the instance does not stay deaf to revocations;
   * only the first attempt is waited for. After `quit()` ({@link close}) no retry is left waiting.
   */
  private subscribeOn(node: LockNode, attempt: number): Promise<void> {
    if (!node.subscribeToChannel) return Promise.resolve();
    return callNode(node, 'subscribeToChannel', () =>
      node.subscribeToChannel!(this.channel, (message) => this.onMessage(message)),
    ).then(
      (unsubscribe) => {
        // A node shared by several instances (in-memory nodes, a LockNode of your own) outlives this one.
        if (typeof unsubscribe !== 'function') return;
        if (this.closed) unsubscribe();
        else this.unsubscribes.push(unsubscribe);
      },
      () => {
        if (this.closed || attempt + 1 >= LISTEN_ATTEMPTS) return;
        const retry = this.context.group.clock.setTimeout(() => {
          this.retries.delete(retry);
          void this.subscribeOn(node, attempt + 1);
        }, LISTEN_RETRY_MS);
        this.retries.add(retry);
      },
    );
  }

  /** `quit()`: no more subscriptions are tried; retries still waiting are cancelled. */
  close(): void {
    this.closed = true;
    for (const retry of this.retries) retry.cancel();
    this.retries.clear();
    for (const unsubscribe of this.unsubscribes.splice(0)) {
      try {
        unsubscribe();
      } catch {
        // A node's own unsubscribe that throws: its connection closes next anyway.
      }
    }
  }

  private onMessage(message: string): void {
    const parsed = parseMessage(message);
    if (parsed) this.heard(parsed.resource, parsed.reason);
  }

  /** A revocation of `resource` was announced: every lock of this instance on it is lost. */
  private heard(resource: string, reason: string): void {
    for (const lock of this.context.held.take(resource)) {
      if (lock.isReleased) continue;
      const error = new LockRevokedError(lock.resources, reason);
      if (lock.markLost(error)) this.context.countLost(lock, error);
    }
  }
}

function validReason(options: unknown): string {
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError(
      `revoke() takes options { reason: string }, got ${messages.describe(options)}: say why the lock is revoked.`,
    );
  }
  const { reason } = readMethodOptions(options, REVOKE_OPTION_KEYS, 'revoke() option', REVOKE_EXAMPLE);
  if (typeof reason !== 'string' || reason.trim().length === 0 || reason.length > MAX_REASON) {
    throw new InvalidArgumentError(
      `revoke() needs a reason: a non-empty string of at most ${MAX_REASON} characters, got ` +
        `${messages.describe(reason)}. It is logged and handed to the holder. ` +
        "Example: revoke('order:42', { reason: 'worker 7 stuck, freed by ops' }).",
    );
  }
  return reason;
}

const REVOKE_OPTION_KEYS: ReadonlySet<string> = new Set(['reason']);
/** revoke()'s options, as an example in its messages. */
const REVOKE_EXAMPLE = "{ reason: 'worker 7 stuck, freed by ops' }";

function parseMessage(message: string): { resource: string; reason: string } | undefined {
  try {
    const parsed = JSON.parse(message) as { resource?: unknown; reason?: unknown };
    if (typeof parsed.resource === 'string' && typeof parsed.reason === 'string') {
      return { resource: parsed.resource, reason: parsed.reason };
    }
  } catch {
    // Not one of ours: someone else published on the channel.
  }
  return undefined;
}
