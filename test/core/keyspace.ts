import type { RedisNodes } from '../support';

/**
 * Waiting for a state of the nodes themselves through keyspace notifications (`notify-keyspace-events`), not
 * by polling: each helper subscribes before it returns, and its `stop()` unsubscribes and turns the
 * notifications off again.
 */

const KEYSPACE = '__keyspace@0__:';

async function setNotifications(nodes: RedisNodes, flags: string): Promise<void> {
  await Promise.all(
    nodes.nodes.map(async (node) => {
      const admin = node.redis();
      try {
        await admin.config('SET', 'notify-keyspace-events', flags);
      } finally {
        admin.disconnect();
      }
    }),
  );
}

/**
 * `written` resolves once `key` was written (SET) on a majority of the nodes: e.g. a waiting writer's intent
 * key, which it writes on each node that refused it (lead(), a write lock with a wait).
 */
export async function keyWrittenOnQuorum(
  nodes: RedisNodes,
  key: string,
): Promise<{ written: Promise<void>; stop: () => Promise<void> }> {
  const seen = new Set<number>();
  let reached!: () => void;
  const written = new Promise<void>((resolve) => (reached = resolve));
  await setNotifications(nodes, 'K$'); // string commands (SET)
  const subscribers = await Promise.all(
    nodes.nodes.map(async (node, index) => {
      const subscriber = node.redis();
      subscriber.on('message', (_channel: string, event: string) => {
        if (event !== 'set') return;
        seen.add(index);
        if (seen.size * 2 > nodes.nodes.length) reached();
      });
      await subscriber.subscribe(`${KEYSPACE}${key}`);
      return subscriber;
    }),
  );
  return {
    written,
    stop: async () => {
      for (const subscriber of subscribers) subscriber.disconnect();
      await setNotifications(nodes, '');
    },
  };
}

/**
 * The ends of the `redlock:*` keys on every node: `of(key)` resolves, per node, how that key's next life there
 * ends — `'del'` (deleted) or `'expired'` — once it was written. Call `of` before the write.
 */
export async function watchKeyEnds(nodes: RedisNodes): Promise<{
  of: (key: string) => Promise<string>[];
  stop: () => Promise<void>;
}> {
  const waiting = nodes.nodes.map(() => new Map<string, { written: boolean; end: (how: string) => void }>());
  await setNotifications(nodes, 'K$gx'); // SET, DEL and expiry events
  const subscribers = await Promise.all(
    nodes.nodes.map(async (node, index) => {
      const subscriber = node.redis();
      subscriber.on('pmessage', (_pattern: string, channel: string, event: string) => {
        const watch = waiting[index].get(channel.slice(KEYSPACE.length));
        if (!watch) return;
        if (event === 'set') watch.written = true;
        else if (watch.written && (event === 'del' || event === 'expired')) watch.end(event);
      });
      await subscriber.psubscribe(`${KEYSPACE}redlock:*`);
      return subscriber;
    }),
  );
  return {
    of: (key) =>
      waiting.map(
        (watches) =>
          new Promise<string>((resolve) =>
            watches.set(key, {
              written: false,
              end: (how) => {
                watches.delete(key);
                resolve(how);
              },
            }),
          ),
      ),
    stop: async () => {
      for (const subscriber of subscribers) subscriber.disconnect();
      await setNotifications(nodes, '');
    },
  };
}
