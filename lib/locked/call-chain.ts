import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '../core';

/**
 * The locks held by the current async call chain (`@Locked` methods and `using()` callbacks), innermost
 * first. A frame belongs to one application's `LockedSections` (its `scope`), so two applications in one process, or a
 * chain that crosses from one to the other, never take each other's locks for their own.
 */
interface LockFrame {
  readonly scope: object;
  readonly lock: Lock;
  readonly parent: LockFrame | undefined;
}

/** Which of the requested resources the chain already holds. */
export interface HeldInChain {
  /** The requested resources not held yet, in the order requested. */
  readonly missing: string[];
  /** The innermost lock holding one of the requested resources, if any. */
  readonly holder: Lock | undefined;
  /** The requested resources the chain holds only through read locks (no write lock of its holds them). */
  readonly readOnly: string[];
}

// One store for the whole process: frames carry their scope, so sharing it is safe and cheap.
const storage = new AsyncLocalStorage<LockFrame>();

/**
 * Runs `fn` with `lock` as the innermost lock of the chain. Everything `fn` starts (awaited or scheduled)
 * sees it; calls running concurrently outside `fn` do not — that is what tells a reentrant call from an
 * independent one.
 */
export function runInChain<T>(scope: object, lock: Lock, fn: () => T): T {
  return storage.run({ scope, lock, parent: storage.getStore() }, fn);
}

/**
 * Splits `resources` into those held by the chain in `scope` and the rest. A lock that was released or
 * whose validity ran out holds nothing (e.g. work that outlived the locked section that started it).
 */
export function heldInChain(scope: object, resources: readonly string[]): HeldInChain {
  const wanted = new Set(resources);
  const held = new Set<string>();
  const written = new Set<string>();
  let holder: Lock | undefined;
  for (let frame = storage.getStore(); frame; frame = frame.parent) {
    if (frame.scope !== scope || frame.lock.isExpired) continue;
    for (const resource of frame.lock.resources) {
      if (!wanted.has(resource)) continue;
      if (frame.lock.mode === 'write') written.add(resource);
      if (!held.has(resource)) {
        held.add(resource);
        holder ??= frame.lock;
      }
    }
  }
  return {
    missing: resources.filter((resource) => !held.has(resource)),
    holder,
    readOnly: [...held].filter((resource) => !written.has(resource)),
  };
}

/**
 * The innermost lock of the chain in `scope` not released yet, if any. One whose validity ran out is still
 * returned: the section it guards is running unguarded, and the caller can see that (`isExpired`).
 */
export function currentLock(scope: object): Lock | undefined {
  for (let frame = storage.getStore(); frame; frame = frame.parent) {
    if (frame.scope === scope && !frame.lock.isReleased) return frame.lock;
  }
  return undefined;
}
