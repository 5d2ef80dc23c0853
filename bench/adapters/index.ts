import { nestjsRedlock } from './nestjs-redlock.adapter';
import { nodeRedlock } from './node-redlock.adapter';
import {
  rawFloor,
  rawFloorAutoPipelining,
  rawFloorScripts,
  rawFloorScriptsAutoPipelining,
} from './raw-floor.adapter';
import { redlockUniversal } from './redlock-universal.adapter';
import { sesamecareRedlock } from './sesamecare-redlock.adapter';
import type { Implementation } from './types';

export type { BenchLock, ImplName, Implementation, SetupOptions } from './types';

/** Every implementation measured, nestjs-redlock first (the baseline of every ratio). */
export const IMPLEMENTATIONS: readonly Implementation[] = [
  nestjsRedlock,
  nodeRedlock,
  sesamecareRedlock,
  redlockUniversal,
  rawFloor,
  rawFloorScripts,
  rawFloorAutoPipelining,
  rawFloorScriptsAutoPipelining,
];

export const BASELINE = nestjsRedlock.name;

/** `BENCH_IMPLS=nestjs-redlock,floor` narrows a run (for profiling); nestjs-redlock is always kept. */
export function selectImplementations(filter = process.env.BENCH_IMPLS): readonly Implementation[] {
  if (!filter) return IMPLEMENTATIONS;
  const wanted = new Set(filter.split(',').map((name) => name.trim()));
  return IMPLEMENTATIONS.filter((impl) => impl.name === BASELINE || wanted.has(impl.name));
}
