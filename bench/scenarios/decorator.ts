import 'reflect-metadata';
import { Injectable, INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redlock } from '../../lib';
import { interleavedCycles, medianOverRounds } from '../rounds';
import { Samples } from '../stats';
import { now } from '../timing';
import { NestLayer, loadNestLayer } from './nest-layer';
import { BenchContext, DECORATOR_ROWS, Metric, Scenario, ScenarioResult } from './types';
import { CYCLE_BLOCK } from './uncontended';

const TITLE = 'Decorator overhead: @Locked vs RedlockService.using() vs the core';
const { core: CORE, service: SERVICE, locked: LOCKED } = DECORATOR_ROWS;

const METRICS: readonly Metric[] = [
  { key: 'cycleP50', label: 'call p50', unit: 'ms', better: 'lower' },
  { key: 'cycleP99', label: 'call p99', unit: 'ms', better: 'lower' },
  { key: 'cpuPerCall', label: 'client CPU per call', unit: 'µs', better: 'lower' },
];

interface Variant {
  readonly name: string;
  call(): Promise<unknown>;
}

/** The same (empty) work behind each face of the library. */
const work = async (): Promise<number> => 1;

/** Calls of every variant after a warm-up, the variants taking turns in blocks (see `interleavedCycles`). */
async function measure(
  variants: readonly Variant[],
  warmup: number,
  iterations: number,
): Promise<Record<string, Record<string, number>>> {
  for (const variant of variants) for (let i = 0; i < warmup; i++) await variant.call();
  const samples = new Map(variants.map((variant) => [variant.name, new Samples(iterations)]));
  const cpu = await interleavedCycles(variants, iterations, CYCLE_BLOCK, async (variant) => {
    const t0 = now();
    await variant.call();
    samples.get(variant.name)!.push(now() - t0);
  });
  return Object.fromEntries(
    variants.map((variant) => {
      const own = samples.get(variant.name)!;
      return [variant.name, { cycleP50: own.p(50), cycleP99: own.p(99), cpuPerCall: cpu.get(variant.name)! }];
    }),
  );
}

/** A Nest application context with RedlockModule and one service whose method is @Locked. */
async function createNestApp(
  nest: NestLayer,
  urls: string[],
  ttl: number,
): Promise<{ app: INestApplicationContext; call(): Promise<unknown>; service: () => Promise<unknown> }> {
  const Locked = nest.Locked;

  @Injectable()
  class BenchWork {
    @Locked('s6:locked:<0>', { ttl })
    async run(_id: string): Promise<number> {
      return work();
    }
  }

  @Module({ imports: [nest.RedlockModule.forRoot(urls, { ttl }) as never], providers: [BenchWork] })
  class BenchModule {}

  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  await app.init();
  const target = app.get(BenchWork);
  const service = app.get(nest.RedlockService as never) as InstanceType<NestLayer['RedlockService']>;
  return {
    app,
    call: () => target.run('x'),
    service: () => service.using('s6:service', { ttl }, work),
  };
}

function skipped(reason: string): ScenarioResult {
  return {
    id: 'decorator',
    number: 6,
    title: TITLE,
    status: 'skipped',
    reason,
    baseline: CORE,
    metrics: METRICS,
    rows: {},
    notes: [],
  };
}

/** Scenario 6: what the Nest layer adds on top of the core for the same locked work. */
export const decorator: Scenario = {
  id: 'decorator',
  number: 6,
  title: TITLE,
  async run({ scale, urls, log }: BenchContext): Promise<ScenarioResult> {
    const nest = loadNestLayer();
    if ('missing' in nest) return skipped(`skipped: Nest layer not available — ${nest.missing}`);
    const { warmup, iterations } = scale.decorator;
    const core = new Redlock([...urls], { logger: false, ttl: scale.ttl });
    let app: INestApplicationContext | undefined;
    try {
      await core.connect(5_000);
      let nestApp: Awaited<ReturnType<typeof createNestApp>>;
      try {
        nestApp = await createNestApp(nest, [...urls], scale.ttl);
      } catch (error) {
        return skipped(`skipped: Nest layer not usable — ${(error as Error).message.split('\n')[0]}`);
      }
      app = nestApp.app;
      const variants: Variant[] = [
        { name: CORE, call: () => core.using('s6:core', { ttl: scale.ttl }, work) },
        { name: SERVICE, call: nestApp.service },
        { name: LOCKED, call: nestApp.call },
      ];
      const rows = await medianOverRounds(variants, scale.rounds, (round) => {
        log(`  6 decorator · round ${round + 1}`);
        return measure(variants, warmup, iterations);
      });
      return {
        id: 'decorator',
        number: 6,
        title: TITLE,
        status: 'ok',
        baseline: CORE,
        metrics: METRICS,
        rows,
        notes: [
          `${urls.length} nodes, ${iterations} sequential calls per round after ${warmup} warm-up calls (the ` +
            `variants take turns every ${CYCLE_BLOCK} calls; median of ${scale.rounds} rounds), each ` +
            'acquiring, running an empty async function and releasing; ratios are to the core. The Nest ' +
            'layer uses the clients RedlockModule.forRoot(urls) creates.',
        ],
      };
    } finally {
      await app?.close().catch(() => undefined);
      await core.quit();
    }
  },
};
