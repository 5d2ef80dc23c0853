/** Somebody subscribed to the release announcements of some keys, through one connection. */
export interface Subscription {
  active: boolean;
  /** Delivers a pushed message to the subscriber (in a simulation, through the network: late or lost). */
  push(event: 'released' | 'lost'): void;
}

/**
 * A model node's pub/sub: release announcements watched by key (PUBLISH `<key>:released`, what `watch` hears)
 * and plain channels (the revocation channel). Messages go out synchronously, inside the script that publishes:
 * the subscriber decides when it hears them.
 */
export class PubSub {
  private readonly watchers = new Map<string, Set<Subscription>>();
  private readonly channels = new Map<string, Set<(message: string) => void>>();

  /** SUBSCRIBE to the release announcements of `keys`; returns the unsubscribe function. */
  watch(keys: readonly string[], subscription: Subscription): () => void {
    for (const key of keys) {
      let set = this.watchers.get(key);
      if (!set) this.watchers.set(key, (set = new Set()));
      set.add(subscription);
    }
    return () => {
      subscription.active = false;
      for (const key of keys) this.watchers.get(key)?.delete(subscription);
    };
  }

  /** SUBSCRIBE `channel`; returns the unsubscribe function. */
  subscribe(channel: string, onMessage: (message: string) => void): () => void {
    let set = this.channels.get(channel);
    if (!set) this.channels.set(channel, (set = new Set()));
    // A function subscribed twice is two subscriptions: wrapped so each can go on its own.
    const subscriber = (message: string) => onMessage(message);
    set.add(subscriber);
    return () => void this.channels.get(channel)?.delete(subscriber);
  }

  /** PUBLISH `<key>:released` '1': to the watchers of `key` and to subscribers of that channel. */
  announceRelease(key: string): void {
    const watchers = this.watchers.get(key);
    if (watchers)
      for (const subscription of [...watchers]) if (subscription.active) subscription.push('released');
    this.publish(`${key}:released`, '1');
  }

  /** PUBLISH `channel` `message`. */
  publish(channel: string, message: string): void {
    const set = this.channels.get(channel);
    if (set) for (const subscriber of [...set]) subscriber(message);
  }

  /** The connections dropped (a crash): every watcher hears `'lost'` and is gone. */
  dropWatchers(): void {
    for (const set of this.watchers.values()) {
      for (const subscription of set) {
        if (subscription.active) subscription.push('lost');
        subscription.active = false;
      }
    }
    this.watchers.clear();
  }
}
