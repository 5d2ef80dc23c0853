import { IoredisLockNode, LockNode } from './node';

/** A node's connection state after {@link waitUntilReady}. */
export interface ReadyState {
  readonly node: string;
  readonly ready: boolean;
  /** Why it is not ready, when it is not. */
  readonly error?: Error;
}

/**
 * Waits until each ioredis-backed node is connected, at most `timeout` ms, starting lazy clients. Never
 * rejects. Nodes that are not ioredis clients count as ready.
 */
export async function waitUntilReady(nodes: readonly LockNode[], timeout: number): Promise<ReadyState[]> {
  return Promise.all(
    nodes.map(async (node): Promise<ReadyState> => {
      if (!(node instanceof IoredisLockNode)) return { node: node.name, ready: true };
      const client = node.client;
      if (client.status === 'ready') return { node: node.name, ready: true };
      return new Promise<ReadyState>((resolve) => {
        let lastError: Error | undefined;
        const onReady = () => settle({ node: node.name, ready: true });
        const onError = (error: Error) => {
          lastError = error;
        };
        const timer = setTimeout(
          () =>
            settle({
              node: node.name,
              ready: false,
              error: lastError ?? new Error(`not connected after ${timeout} ms (status "${client.status}")`),
            }),
          timeout,
        );
        const settle = (state: ReadyState) => {
          clearTimeout(timer);
          client.off('ready', onReady);
          client.off('error', onError);
          resolve(state);
        };
        client.on('ready', onReady);
        client.on('error', onError);
        if (client.status === 'wait') client.connect().catch(() => undefined);
      });
    }),
  );
}
