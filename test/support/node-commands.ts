import type { Redis } from 'ioredis';
import type { RedisNodeHandle } from './types';

/** One command a node ran, as MONITOR reports it: its name (lower case) and arguments. */
export type RanCommand = readonly string[];
/** Picks commands out of a node's MONITOR stream. */
export type CommandMatch = (command: RanCommand) => boolean;

/** An EVAL or EVALSHA (a lock script) whose keys or arguments name `key`. */
export const scriptOn =
  (key: string): CommandMatch =>
  ([name, ...args]) =>
    /^eval(sha)?(_ro)?$/.test(name) && args.includes(key);

/** A SUBSCRIBE or SSUBSCRIBE of `channel`. */
export const subscribeTo =
  (channel: string): CommandMatch =>
  ([name, ...args]) =>
    /^s?subscribe$/.test(name) && args.includes(channel);

/**
 * What a set of nodes runs, as their MONITOR streams report it (Redis feeds a command to its monitors as it
 * runs it: once seen, it has run, and a command sent to that node afterwards runs after it). For tests that
 * must act once a client reached a given step on the nodes — a waiter subscribed and asleep, a subscription
 * retried — instead of sleeping for it. Open it before the step can happen; close it at the end.
 */
export class NodeCommands {
  private readonly seen: RanCommand[][];
  private readonly changed = new Set<() => void>();

  private constructor(private readonly monitors: Redis[]) {
    this.seen = monitors.map(() => []);
    monitors.forEach((monitor, i) => {
      monitor.on('monitor', (_time: string, args: string[]) => {
        this.seen[i].push([String(args[0]).toLowerCase(), ...args.slice(1).map(String)]);
        for (const check of [...this.changed]) check();
      });
    });
  }

  /** Starts monitoring `nodes`; resolves once every monitor is active (later commands are all seen). */
  static async open(nodes: readonly RedisNodeHandle[]): Promise<NodeCommands> {
    const monitors = await Promise.all(
      nodes.map(async (node) => {
        const admin = node.redis();
        try {
          const monitor = await admin.monitor();
          monitor.on('error', () => undefined);
          return monitor;
        } finally {
          admin.disconnect();
        }
      }),
    );
    return new NodeCommands(monitors);
  }

  /**
   * Resolves once every node ran commands matching `steps`, in that order (others may come between), since
   * the monitors opened: e.g. a waiter's SUBSCRIBE, then its next attempt.
   */
  ran(...steps: CommandMatch[]): Promise<void> {
    const done = () =>
      this.seen.every((commands) => {
        let step = 0;
        for (const command of commands) if (step < steps.length && steps[step](command)) step++;
        return step === steps.length;
      });
    if (done()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        this.changed.delete(check);
        resolve();
      };
      this.changed.add(check);
    });
  }

  /** Forgets the commands seen so far: {@link ran} and {@link commands} count from here. */
  forget(): void {
    for (const commands of this.seen) commands.length = 0;
  }

  /** The commands node `i` ran so far that match `match`. */
  commands(i: number, match: CommandMatch = () => true): RanCommand[] {
    return this.seen[i].filter(match);
  }

  close(): void {
    for (const monitor of this.monitors) monitor.disconnect();
  }
}
