import { Redis } from 'ioredis';
import { ADMIN_CLIENT_OPTIONS, type RedisNodeHandle } from './types';

/** A node given through REDLOCK_TEST_NODES: we did not start it, so we may not fault it. */
export class ExternalRedisNode implements RedisNodeHandle {
  readonly host: string;
  readonly port: number;
  readonly pid = undefined;
  readonly running = true;
  readonly paused = false;

  constructor(
    readonly index: number,
    readonly url: string,
  ) {
    const parsed = new URL(url);
    this.host = parsed.hostname;
    this.port = Number(parsed.port || 6379);
  }

  kill(): Promise<void> {
    return this.refuse('kill');
  }
  pause(): Promise<void> {
    return this.refuse('pause');
  }
  resume(): Promise<void> {
    return this.refuse('resume');
  }
  start(): Promise<void> {
    return this.refuse('start');
  }
  restartEmpty(): Promise<void> {
    return this.refuse('restartEmpty');
  }

  redis(): Redis {
    return new Redis(this.url, { ...ADMIN_CLIENT_OPTIONS });
  }

  private async refuse(op: string): Promise<never> {
    throw new Error(
      `${op}() is not possible on node ${this.index} (${this.url}): external nodes from REDLOCK_TEST_NODES ` +
        'cannot be faulted. Unset REDLOCK_TEST_NODES to let the harness spawn its own redis-server processes.',
    );
  }
}

/** Parse REDLOCK_TEST_NODES ("redis://a:6379,redis://b:6379"); undefined when unset or empty. */
export function externalNodeUrls(env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  const urls = (env.REDLOCK_TEST_NODES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return urls.length > 0 ? urls : undefined;
}
