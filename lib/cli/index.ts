#!/usr/bin/env node
/**
 * The package's command (`bin` in package.json), for development only; not part of the library's exports:
 *
 *   npx nestjs-redlock dev-redis                  3 nodes on localhost:6379, :6380, :6381 (the README's)
 *   npx nestjs-redlock dev-redis --nodes 5 --port 7000
 *   npx nestjs-redlock inspect order:42 --nodes redis://a:6379,redis://b:6379,redis://c:6379
 *   npx nestjs-redlock holders --prefix order: --nodes redis://a:6379,redis://b:6379,redis://c:6379
 *
 * dev-redis starts redis-server processes from the PATH, prints the `RedlockModule.forRoot([...])` line, restarts
 * one empty on `restart <n>` typed on stdin (to see the restart guard refuse), and stops them on Ctrl-C (the
 * repository's `npm run dev:redis` prints the same through the test harness, without the command).
 * inspect and holders print, read-only, how locks are held on an application's nodes.
 */
import { serveNodes, startLocalNodes } from './dev-redis';
import { OPERATE_USAGE, operate, parseOperateArgs } from './operate';

export { banner, serveNodes, startLocalNodes } from './dev-redis';
export type { DevNodes } from './dev-redis';

const USAGE = `Usage: nestjs-redlock dev-redis [--nodes <n>] [--port <first port>]

Starts <n> (default 3) local Redis nodes without persistence, from redis-server on the PATH, on ports
<first port> (default 6379), <first port> + 1, ... (--port 0: free ports), prints the
RedlockModule.forRoot([...]) line for them and waits; Ctrl-C stops them.

While it runs, type a command and Enter (read from stdin; at its end the nodes keep running):
  restart <n>, r <n>   restart node <n> (1 is the first port) empty, on the same port: as after a crash that
                       lost its data, it refuses locks for the restart guard window (the larger of the ttl
                       and the call's ttl, 10 s at the defaults) while the other nodes still make a quorum
  help                 the commands
In the background (&) it reads no commands on Linux; elsewhere give it < /dev/null there.

${OPERATE_USAGE}`;

/** `--nodes 5 --port 7000` → { nodes: 5, port: 7000 }; throws with the rule and the usage on anything else. */
function parseDevRedisArgs(args: readonly string[]): { nodes: number; port: number } | undefined {
  if (args.includes('--help') || args.includes('-h')) return undefined;
  const fail = (problem: string): never => {
    throw new Error(`nestjs-redlock dev-redis: ${problem}\n\n${USAGE}`);
  };
  const whole = (flag: string, value: string, min: number, max: number): number => {
    const number = Number(value);
    if (!/^\d+$/.test(value) || number < min || number > max)
      fail(`${flag} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return number;
  };
  const parsed = { nodes: 3, port: 6379 };
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i], args[i + 1]];
    if ((flag === '--nodes' || flag === '--port') && (value === undefined || value.startsWith('--')))
      fail(`${flag} needs a value`);
    if (flag === '--nodes') parsed.nodes = whole(flag, value, 1, 9);
    else if (flag === '--port') parsed.port = whole(flag, value, 0, 65535 - 9);
    else fail(`unexpected ${flag}${value === undefined ? '' : ` ${value}`}`);
  }
  return parsed;
}

async function main(argv: readonly string[]): Promise<void> {
  const [command, ...args] = argv;
  if (command === 'inspect' || command === 'holders') {
    const parsed = parseOperateArgs(command, args);
    process.stdout.write(parsed ? await operate(command, parsed) : `${OPERATE_USAGE}\n`);
    return;
  }
  if (command !== 'dev-redis') {
    if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    throw new Error(
      `nestjs-redlock: unknown command ${JSON.stringify(command)} (commands: dev-redis, inspect, holders)\n\n${USAGE}`,
    );
  }
  const parsed = parseDevRedisArgs(args);
  if (!parsed) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { nodes, port } = parsed;
  await serveNodes(
    'nestjs-redlock dev-redis',
    () => startLocalNodes(nodes, port),
    (started) => `${started.urls.length} Redis node(s), redis-server from the PATH`,
  );
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
