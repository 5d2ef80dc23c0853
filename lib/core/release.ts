import { NodeGroup, askNodes, votesOf } from './fan-out';
import type { ReleaseResult } from './lock';
import { NOT_OWNER, RELEASED } from './messages';
import { checkedCount } from './node-contract';

/**
 * Deletes `owner`'s keys on every node (owner-checked: another owner's keys are never touched) and waits for
 * every answer or the node timeout. Never rejects: what each node did is in the result.
 */
export async function releaseOnAll(
  group: NodeGroup,
  keys: readonly string[],
  owner: string,
): Promise<ReleaseResult> {
  const { nodes } = group;
  const result = await askNodes(
    group,
    'release',
    (node) => node.release(keys, owner),
    RELEASE_PLAN[nodes.length] ?? { needed: nodes.length, isYes: always, waitForAll: true },
    checkedCount,
  );
  const votes = votesOf(nodes, result.answers, (deleted) => (deleted > 0 ? RELEASED : NOT_OWNER));
  let releasedOn = 0;
  for (const vote of votes) if (vote.outcome === 'released') releasedOn++;
  return { releasedOn, votes };
}

function always(): boolean {
  return true;
}

/** The (stateless) decision of a release for each node count, built once. */
const RELEASE_PLAN = Array.from({ length: 64 }, (_, total) =>
  Object.freeze({ needed: total, isYes: always, waitForAll: true }),
);
