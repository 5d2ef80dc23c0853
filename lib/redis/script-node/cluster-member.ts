/** Replies only a Redis Cluster member gives to a command for a slot it does not serve (or a cluster down). */
const CLUSTER_REPLY = /^(MOVED|ASK|CROSSSLOT|CLUSTERDOWN|TRYAGAIN)\b/;

/**
 * A reply error of a plain client connected to one member of a Redis Cluster, explained: the node is a cluster
 * member passed as a single address, so every lock whose key hashes to another member's slot fails. Any other
 * error is returned as it is. Only on the error path: nothing is added to a successful call.
 */
export function explainClusterReply(
  address: { readonly host: string; readonly port: number },
  error: unknown,
  client: 'ioredis' | 'node-redis' = 'ioredis',
): unknown {
  if (!(error instanceof Error) || !CLUSTER_REPLY.test(error.message)) return error;
  const { host, port } = address;
  const asCluster =
    client === 'ioredis'
      ? `new Cluster([{ host: '${host}', port: ${port} }]) from ioredis`
      : `createCluster({ rootNodes: [{ url: 'redis://${host}:${port}' }] }) from redis (connected)`;
  const explained = new Error(
    `${error.message} — ${host}:${port} is a member of a Redis Cluster, given as a single address: a lock whose key ` +
      `hashes to another member's slot fails there. Pass the cluster as one node, ${asCluster} (its members are ` +
      'found from there), or use independent Redis servers.',
  );
  explained.name = error.name;
  return explained;
}
