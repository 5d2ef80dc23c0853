import { Redis } from 'ioredis';
import type { StartedTestContainer } from 'testcontainers';
import { freePort } from './free-port';
import { ADMIN_CLIENT_OPTIONS, type RedisNodeHandle } from './types';

// testcontainers is loaded lazily (it is large, and only needed when there is no redis-server) and
// never at module load, so a machine without Docker never pays for it or hangs on it.
type Testcontainers = typeof import('testcontainers');

const DETECT_TIMEOUT_MS = 3000;
const IMAGE = 'redis:7';
let detection: Promise<Testcontainers | undefined> | undefined;

/** The testcontainers module if a container runtime answers within ~3 s, else undefined. Memoised. */
export function detectDocker(): Promise<Testcontainers | undefined> {
  detection ??= (async () => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const tc: Testcontainers = require('testcontainers');
      // Runtime detection can hang (e.g. a dead DOCKER_HOST), so bound it ourselves.
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), DETECT_TIMEOUT_MS);
        timer.unref();
      });
      const probe = tc.getContainerRuntimeClient();
      probe.catch(() => undefined); // a late rejection after the timeout must not go unhandled
      await Promise.race([probe, timeout]);
      return tc;
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  })();
  return detection;
}

/** A node running in a redis:7 container, pinned to one host port so start() after kill() keeps it. */
export class DockerRedisNode implements RedisNodeHandle {
  readonly pid = undefined;
  private container: StartedTestContainer | undefined;
  private isPaused = false;

  private constructor(
    readonly index: number,
    readonly port: number,
    private readonly tc: Testcontainers,
    private readonly args: string[],
  ) {}

  static async create(index: number, tc: Testcontainers, extraArgs: string[] = []): Promise<DockerRedisNode> {
    const args = ['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction', ...extraArgs];
    const node = new DockerRedisNode(index, await freePort(), tc, args);
    await node.start();
    return node;
  }

  get host(): string {
    return this.container?.getHost() ?? '127.0.0.1';
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  get running(): boolean {
    return this.container !== undefined;
  }

  get paused(): boolean {
    return this.running && this.isPaused;
  }

  async start(): Promise<void> {
    if (this.container) throw new Error(`docker node ${this.index} is already running`);
    this.container = await new this.tc.GenericContainer(IMAGE)
      .withExposedPorts({ container: 6379, host: this.port })
      .withCommand(['redis-server', ...this.args])
      .withWaitStrategy(this.tc.Wait.forLogMessage('Ready to accept connections'))
      .start();
    this.isPaused = false;
  }

  async kill(): Promise<void> {
    const container = this.container;
    if (!container) return;
    if (this.isPaused) await this.resume();
    this.container = undefined;
    await container.stop({ timeout: 0, remove: true });
  }

  async restartEmpty(): Promise<void> {
    await this.kill();
    await this.start();
  }

  async pause(): Promise<void> {
    await (await this.dockerContainer('pause')).pause();
    this.isPaused = true;
  }

  async resume(): Promise<void> {
    await (await this.dockerContainer('resume')).unpause();
    this.isPaused = false;
  }

  redis(): Redis {
    return new Redis({ host: this.host, port: this.port, ...ADMIN_CLIENT_OPTIONS });
  }

  private async dockerContainer(op: string) {
    if (!this.container) throw new Error(`cannot ${op} docker node ${this.index}: it is not running`);
    const client = await this.tc.getContainerRuntimeClient();
    return client.container.getById(this.container.getId());
  }
}
