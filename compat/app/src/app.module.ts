import { Injectable, Module } from '@nestjs/common';
import { Locked, RedlockModule, RedlockService } from 'nestjs-redlock';
import { nodes, valuesOf } from './clients.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One @Locked section as seen from inside: did current() have the lock, was it in Redis, when did it run. */
export interface Section {
  readonly id: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly currentHeld: boolean;
  readonly resources: readonly string[];
  /** On how many nodes the lock key held this lock's owner value while the section ran. */
  readonly keyOnNodes: number;
}

/**
 * Reads a lock's key on every node with fresh clients of the app's own kind (src/clients.ts, one of
 * compat/app/clients/): a second copy of the library's view.
 */
async function nodesHolding(key: string, value: string): Promise<number> {
  const values = await valuesOf(key);
  return values.filter((v) => v === value).length;
}

@Injectable()
export class CompatService {
  active = 0;
  maxActive = 0;

  constructor(readonly redlock: RedlockService) {}

  @Locked('compat:locked:<0>', { ttl: 5000 })
  async locked(id: string, ms: number): Promise<Section> {
    const startedAt = Date.now();
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      const lock = this.redlock.current();
      const keyOnNodes = lock ? await nodesHolding(`redlock:{compat:locked:${id}}`, lock.value) : 0;
      await sleep(ms);
      return {
        id,
        startedAt,
        endedAt: Date.now(),
        currentHeld: lock !== undefined && !lock.isExpired && lock.resources.includes(`compat:locked:${id}`),
        resources: lock?.resources ?? [],
        keyOnNodes,
      };
    } finally {
      this.active--;
    }
  }

  async viaUsing(): Promise<{
    value: string;
    sameAsCurrent: boolean;
    fencingToken: number | undefined;
    keyOnNodes: number;
  }> {
    return this.redlock.using('compat:using', { ttl: 5000, fencing: true }, async (lock) => ({
      value: 'using-result',
      sameAsCurrent: this.redlock.current() === lock,
      fencingToken: lock.fencingToken,
      keyOnNodes: await nodesHolding('redlock:{compat:using}', lock.value),
    }));
  }
}

@Module({
  // The nodes as the app's client kind passes them (URLs, node-redis or iovalkey clients). The nodes were
  // just started: the restart guard (on by default) would refuse them for a ttl.
  imports: [RedlockModule.forRoot(nodes(), { restartGuard: false })],
  providers: [CompatService],
})
export class AppModule {}
