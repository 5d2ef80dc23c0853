import * as v8 from 'node:v8';
import * as vm from 'node:vm';

/**
 * A full garbage collection, without restarting node with --expose-gc: the flag is set at run time and the
 * `gc` function taken from a fresh context (where V8 installs it). Undefined when the runtime refuses.
 */
function exposeGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === 'function') return existing;
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

const gcFunction = exposeGc();

export const gcAvailable = gcFunction !== undefined;

/** Collects until the heap settles (finalizers and weak callbacks run between passes). */
export async function fullGc(): Promise<void> {
  if (!gcFunction) return;
  for (let i = 0; i < 2; i++) {
    gcFunction();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Heap used after a full GC, in bytes. */
export async function settledHeap(): Promise<number> {
  await fullGc();
  return process.memoryUsage().heapUsed;
}
