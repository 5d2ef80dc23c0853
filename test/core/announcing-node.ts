import type { ReleaseListener } from '../../lib/core';
import { MemoryNode } from './virtual-nodes';

/**
 * A {@link MemoryNode} with release announcements, as a Redis node's pub/sub gives them: `announce(key)` tells
 * every waiter watching `key` that it was released (true or not). Takes writer intents back as a no-op.
 */
export class AnnouncingNode extends MemoryNode {
  private readonly watchers = new Map<string, Set<ReleaseListener>>();
  watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void> {
    for (const key of keys) {
      const set = this.watchers.get(key) ?? new Set();
      set.add(listener);
      this.watchers.set(key, set);
    }
    return Promise.resolve(() => keys.forEach((key) => this.watchers.get(key)?.delete(listener)));
  }
  announce(key: string): void {
    for (const listener of [...(this.watchers.get(key) ?? [])]) listener('released');
  }
  clearIntent(): Promise<number> {
    return Promise.resolve(0);
  }
}
