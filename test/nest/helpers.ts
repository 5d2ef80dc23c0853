import { INestApplication, LoggerService, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { RedisNodes } from '../support';

export { delay, eventually, valuesOnNodes } from '../support';

/**
 * Module options for the tests: silent; a per-node timeout that survives a loaded machine (the default
 * 50 ms is for production networks; here a late answer would turn contention into unavailability); and
 * the restart guard off, since the harness's nodes are seconds old and would (rightly) refuse for a ttl.
 */
export const TEST_OPTIONS = Object.freeze({ logger: false as const, nodeTimeout: 500, restartGuard: false });

/** Applications created by a test file, closed by {@link closeApps}. */
const apps = new Set<INestApplication>();

/** A Nest application (HTTP adapter included, not listening) around `metadata`, initialised. */
export async function createApp(metadata: ModuleMetadata): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  apps.add(app);
  await app.init();
  return app;
}

/** Closes `app` now (and forgets it). */
export async function closeApp(app: INestApplication): Promise<void> {
  apps.delete(app);
  await app.close();
}

export async function closeApps(): Promise<void> {
  await Promise.all([...apps].map((app) => closeApp(app)));
}

/** The Redis key of a resource under the default prefix. */
export const keyOf = (resource: string): string => `redlock:{${resource}}`;

/** The names of the clients connected to each node (`CLIENT LIST`), the asking connection excluded. */
export async function clientsOnNodes(nodes: RedisNodes): Promise<string[][]> {
  return Promise.all(
    nodes.nodes.map(async (node) => {
      const client = node.redis();
      try {
        const [id, list] = await Promise.all([client.client('ID'), client.client('LIST') as Promise<string>]);
        return list
          .split('\n')
          .filter((line) => line.length > 0 && !line.startsWith(`id=${id} `))
          .map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '');
      } finally {
        client.disconnect();
      }
    }),
  );
}

/** A promise with its resolve function, to hold a handler open until the test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A `LoggerService` that records lines, for assertions on what the module logs. */
export class RecordingLogger implements LoggerService {
  readonly lines: { level: string; message: string; context?: string }[] = [];
  log(message: string, context?: string) {
    this.lines.push({ level: 'log', message, context });
  }
  error(message: string, context?: string) {
    this.lines.push({ level: 'error', message, context });
  }
  warn(message: string, context?: string) {
    this.lines.push({ level: 'warn', message, context });
  }
  debug(message: string, context?: string) {
    this.lines.push({ level: 'debug', message, context });
  }
  messages(level: string): string[] {
    return this.lines.filter((line) => line.level === level).map((line) => line.message);
  }
}
