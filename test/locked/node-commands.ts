import type { Redis } from 'ioredis';
import type { RedisNodes } from '../support';

/**
 * Watches the commands every node runs (Redis MONITOR), to act once something reached every node instead of
 * guessing how long it takes: `seenOnEveryNode(match)` resolves when each node has run a command whose
 * arguments satisfy `match` (commands run since {@link watchCommands} resolved). A node runs a command
 * whole before it reads another client's, so what the test sends after that runs after it on every node.
 */
export interface CommandWatch {
  seenOnEveryNode(match: (args: readonly string[]) => boolean): Promise<void>;
  stop(): void;
}

export async function watchCommands(nodes: RedisNodes): Promise<CommandWatch> {
  const seen: string[][][] = nodes.nodes.map(() => []);
  const listeners = new Set<() => void>();
  const monitors: Redis[] = [];
  try {
    for (const [index, node] of nodes.nodes.entries()) {
      const admin = node.redis();
      const monitor = await admin.monitor();
      admin.disconnect();
      monitors.push(monitor);
      monitor.on('monitor', (_time: string, args: string[]) => {
        seen[index].push(args);
        for (const listener of listeners) listener();
      });
    }
  } catch (error) {
    for (const monitor of monitors) monitor.disconnect();
    throw error;
  }
  return {
    seenOnEveryNode(match) {
      const reached = () => seen.every((commands) => commands.some(match));
      return new Promise<void>((resolve) => {
        if (reached()) return resolve();
        const listener = () => {
          if (!reached()) return;
          listeners.delete(listener);
          resolve();
        };
        listeners.add(listener);
      });
    },
    stop() {
      listeners.clear();
      for (const monitor of monitors) monitor.disconnect();
    },
  };
}

/** A script call (EVAL/EVALSHA/FCALL) touching `key` whose arguments do not name `exceptOwner`. */
export const scriptOnKey =
  (key: string, exceptOwner?: string) =>
  (args: readonly string[]): boolean =>
    /^(eval|evalsha|fcall)/i.test(args[0] ?? '') &&
    args.includes(key) &&
    (exceptOwner === undefined || !args.includes(exceptOwner));
