import { nestjsRedlock, nestjsRedlockFair, nestjsRedlockGuardOff } from './nestjs-redlock.adapter';
import {
  nestjsRedlockIoredisPassedIn,
  nestjsRedlockIovalkey,
  nestjsRedlockNodeRedis,
  nestjsRedlockNodeRedisCreated,
} from './nestjs-redlock-clients.adapter';
import { nodeRedlock } from './node-redlock.adapter';
import {
  rawFloor,
  rawFloorAutoPipelining,
  rawFloorScripts,
  rawFloorScriptsAutoPipelining,
} from './raw-floor.adapter';
import { redlockUniversal } from './redlock-universal.adapter';
import { sesamecareRedlock } from './sesamecare-redlock.adapter';
import type { ScenarioId } from '../scenarios/types';
import type { Implementation } from './types';

export type { BenchLock, ImplName, Implementation, SetupOptions } from './types';

/** Every implementation a default run measures, nestjs-redlock first (the baseline of every ratio). */
export const IMPLEMENTATIONS: readonly Implementation[] = [
  nestjsRedlock,
  nestjsRedlockGuardOff,
  nestjsRedlockFair,
  nodeRedlock,
  sesamecareRedlock,
  redlockUniversal,
  rawFloor,
  rawFloorScripts,
  rawFloorAutoPipelining,
  rawFloorScriptsAutoPipelining,
];

/**
 * nestjs-redlock over the other clients it accepts (scenarios 1–3 only): what a client costs. Not in a default
 * run (each adds about 33 s to it); named in BENCH_IMPLS, or all four with `clients`. Informational: no target
 * reads them (the targets are about nestjs-redlock, i.e. `new Redlock(urls)` over its own ioredis clients).
 */
export const CLIENT_VARIANTS: readonly Implementation[] = [
  nestjsRedlockNodeRedis,
  nestjsRedlockNodeRedisCreated,
  nestjsRedlockIovalkey,
  nestjsRedlockIoredisPassedIn,
];

/** Everything that can be measured (a child process of scenarios 7 and 8 finds its implementation here). */
export const ALL_IMPLEMENTATIONS: readonly Implementation[] = [...IMPLEMENTATIONS, ...CLIENT_VARIANTS];

export const BASELINE = nestjsRedlock.name;

/** Group names BENCH_IMPLS accepts beside implementation names. */
const GROUPS: Record<string, readonly Implementation[]> = {
  default: IMPLEMENTATIONS,
  clients: CLIENT_VARIANTS,
};

/**
 * `BENCH_IMPLS=nestjs-redlock,floor` narrows a run (for profiling); nestjs-redlock is always kept. Names may
 * also be the client variants (`nestjs-redlock (node-redis)`, ...) or the groups `default` (every
 * implementation of a default run) and `clients` (the four client variants): `BENCH_IMPLS=default,clients` is
 * a default run plus the client rows.
 */
export function selectImplementations(filter = process.env.BENCH_IMPLS): readonly Implementation[] {
  if (!filter) return IMPLEMENTATIONS;
  // Commas inside parentheses belong to a name: `nestjs-redlock (node-redis, created)`.
  const wanted = new Set(filter.split(/,(?![^(]*\))/).map((name) => name.trim()));
  const known = new Set([...ALL_IMPLEMENTATIONS.map((impl) => impl.name as string), ...Object.keys(GROUPS)]);
  const unknown = [...wanted].filter((name) => name !== '' && !known.has(name));
  // A mistyped name must not silently leave a row out of a long run.
  if (unknown.length > 0)
    throw new Error(`BENCH_IMPLS: unknown ${unknown.join(', ')}; known: ${[...known].join(', ')}`);
  for (const [group, members] of Object.entries(GROUPS))
    if (wanted.has(group)) for (const impl of members) wanted.add(impl.name);
  // The client variants right after nestjs-redlock, whose rows they are read beside.
  return [
    nestjsRedlock,
    ...CLIENT_VARIANTS,
    ...IMPLEMENTATIONS.filter((impl) => impl !== nestjsRedlock),
  ].filter((impl) => impl.name === BASELINE || wanted.has(impl.name));
}

/** Whether `impl` takes part in the scenario `id`. */
export function runsIn(impl: Implementation, id: ScenarioId): boolean {
  return impl.scenarios === undefined || impl.scenarios.includes(id);
}
