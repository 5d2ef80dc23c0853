import { createHash } from 'node:crypto';
import * as net from 'node:net';
import { ACQUIRE_SCRIPT } from '../../lib/redis';
import type { RedisNodeHandle } from './types';

/** One command a node ran, as MONITOR reports it: its name (lower case) and arguments. */
export type RanCommand = readonly string[];
/** Picks commands out of a node's MONITOR stream. */
export type CommandMatch = (command: RanCommand) => boolean;

/** The digest of the script an EVALSHA (`name` lower case) or EVAL names; undefined for any other command. */
export function digestOf(name: string, script: string | undefined): string | undefined {
  if (script === undefined) return undefined;
  if (name === 'evalsha') return script;
  return name === 'eval' ? createHash('sha1').update(script).digest('hex') : undefined;
}

/** An EVAL or EVALSHA (a lock script, any) whose keys or arguments name `key`. */
export const scriptOn =
  (key: string): CommandMatch =>
  ([name, ...args]) =>
    /^eval(sha)?(_ro)?$/.test(name) && args.includes(key);

/**
 * An acquisition attempt on `key`: the acquire script (EVALSHA of its digest, or EVAL of its source) naming it
 * — not the release that undoes a failed attempt, which names the same key.
 */
export const acquireOn =
  (key: string): CommandMatch =>
  ([name, script, ...args]) =>
    args.includes(key) && digestOf(name, script) === ACQUIRE_SCRIPT.sha;

/** A SUBSCRIBE or SSUBSCRIBE of `channel`. */
export const subscribeTo =
  (channel: string): CommandMatch =>
  ([name, ...args]) =>
    /^s?subscribe$/.test(name) && args.includes(channel);

/** The bytes of sdscatrepr's one-letter escapes. */
const ESCAPED_BYTES: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8 };

/** The quoted arguments of a MONITOR line, unescaped as the server escaped them (sdscatrepr). */
function monitorArgs(line: string): string[] {
  const args: string[] = [];
  for (const [, quoted] of line.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
    // Each \xNN is one byte: a character beyond ASCII (a script's source may hold some) is several of them.
    const bytes: number[] = [];
    for (let i = 0; i < quoted.length; i++) {
      if (quoted[i] !== '\\') {
        bytes.push(quoted.charCodeAt(i));
        continue;
      }
      const escape = quoted[++i];
      if (escape === 'x') {
        bytes.push(parseInt(quoted.slice(i + 1, i + 3), 16));
        i += 2;
      } else bytes.push(ESCAPED_BYTES[escape] ?? escape.charCodeAt(0));
    }
    args.push(Buffer.from(bytes).toString('utf8'));
  }
  return args;
}

/**
 * Opens MONITOR on one node over a plain socket (no client library: ioredis' monitor mode can take the first
 * monitored command for a reply and fail); resolves once the server confirmed it, every later command then
 * reaches `onCommand`.
 */
function monitorNode(node: RedisNodeHandle, onCommand: (command: RanCommand) => void): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(node.port, node.host);
    let buffer = '';
    let confirmed = false;
    let oks = new URL(node.url).password ? 2 : 1;
    socket.once('error', reject);
    socket.once('connect', () => {
      const { username, password } = new URL(node.url);
      if (password) {
        const auth = username ? ['AUTH', decodeURIComponent(username)] : ['AUTH'];
        auth.push(decodeURIComponent(password));
        socket.write(
          `*${auth.length}\r\n${auth.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`,
        );
      }
      socket.write('*1\r\n$7\r\nMONITOR\r\n');
    });
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      let end: number;
      while ((end = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (line.startsWith('-')) return reject(new Error(`MONITOR on ${node.url}: ${line.slice(1)}`));
        if (!confirmed) {
          // +OK of AUTH (when sent), then +OK of MONITOR; monitored lines come after it.
          if (line === '+OK' && --oks === 0) {
            confirmed = true;
            socket.off('error', reject);
            socket.on('error', () => undefined);
            resolve(socket);
          }
          continue;
        }
        const [name, ...args] = monitorArgs(line);
        if (name !== undefined) onCommand([name.toLowerCase(), ...args]);
      }
    });
  });
}

/**
 * What a set of nodes runs, as their MONITOR streams report it (Redis feeds a command to its monitors as it
 * runs it: once seen, it has run, and a command sent to that node afterwards runs after it). For tests that
 * must act once a client reached a given step on the nodes — a waiter subscribed and asleep, a subscription
 * retried — instead of sleeping for it. Open it before the step can happen; close it at the end.
 */
export class NodeCommands {
  private readonly seen: RanCommand[][];
  private readonly changed = new Set<() => void>();
  private sockets: net.Socket[] = [];

  private constructor(count: number) {
    this.seen = Array.from({ length: count }, () => []);
  }

  /** Starts monitoring `nodes`; resolves once every monitor is active (later commands are all seen). */
  static async open(nodes: readonly RedisNodeHandle[]): Promise<NodeCommands> {
    const commands = new NodeCommands(nodes.length);
    const opened = await Promise.allSettled(
      nodes.map((node, i) =>
        monitorNode(node, (command) => {
          commands.seen[i].push(command);
          for (const check of [...commands.changed]) check();
        }),
      ),
    );
    commands.sockets = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const failed = opened.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) {
      commands.close();
      throw failed.reason;
    }
    return commands;
  }

  /**
   * Resolves once every node ran commands matching `steps`, in that order (others may come between), since
   * the monitors opened (or {@link forget}): e.g. a waiter's SUBSCRIBE, then its next attempt.
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
    for (const socket of this.sockets) socket.destroy();
  }
}
