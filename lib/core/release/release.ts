import { Answer, NodeGroup, askNodes, votesOf, type LockNode, checkedCount } from '../nodes';
import type { ReleaseOutcome, ReleaseResult } from '../lock';
import { NOT_OWNER, RELEASED } from '../votes';

/**
 * Deletes `owner`'s keys on every node (owner-checked: another owner's keys are never touched) and waits for
 * every answer or the node timeout. Never rejects: what each node did is in the result. Used for the keys of
 * an acquisition's failed attempts (each attempt's owner value is its own: docs/DESIGN.md §7).
 */
export async function releaseOnAll(
  group: NodeGroup,
  keys: readonly string[],
  owner: string,
  readers?: readonly string[],
): Promise<ReleaseOutcome> {
  const { nodes } = group;
  const result = await askNodes(
    group,
    'release',
    (node) => node.release(keys, owner, readers),
    RELEASE_PLAN[nodes.length] ?? { needed: nodes.length, isYes: always, waitForAll: true },
    checkedCount,
  );
  return outcomeOf(nodes, result.answers);
}

/**
 * The same delete on every node, resolved as soon as a quorum has deleted the keys: the lock can then no
 * longer be held by anyone's quorum of this owner, and nobody waits for the slowest node. The answers still
 * to come arrive on `settled` (and node errors on the `node-error` event). When no quorum deletes them (the
 * lock had expired on some nodes, or nodes fail), it resolves once every node answered or timed out.
 */
export function releaseOnQuorum(
  group: NodeGroup,
  keys: readonly string[],
  owner: string,
  readers?: readonly string[],
): Promise<ReleaseResult> {
  const { nodes, quorum } = group;
  return new Promise((resolve) => {
    const seen: Answer<number>[] = new Array(nodes.length).fill(NOT_YET);
    let deleted = 0;
    let early = false;
    const settled: Promise<ReleaseOutcome> = askNodes(
      group,
      'release',
      (node) => node.release(keys, owner, readers),
      {
        needed: nodes.length,
        isYes: always,
        waitForAll: true,
        onAnswer(index, answer) {
          seen[index] = answer;
          if (answer.status === 'value' && answer.value > 0 && ++deleted === quorum) {
            early = true;
            resolve({ ...outcomeOf(nodes, seen), settled });
          }
        },
      },
      checkedCount,
    ).then((result) => outcomeOf(nodes, result.answers));
    void settled.then((outcome) => {
      if (!early) resolve({ ...outcome, settled });
    });
  });
}

function outcomeOf(nodes: readonly LockNode[], answers: readonly Answer<number>[]): ReleaseOutcome {
  const votes = votesOf(nodes, answers, (deleted) => (deleted > 0 ? RELEASED : NOT_OWNER));
  let releasedOn = 0;
  for (const vote of votes) if (vote.outcome === 'released') releasedOn++;
  return { releasedOn, votes };
}

function always(): boolean {
  return true;
}

/** A node that had not answered when the release resolved. */
const NOT_YET: Answer<never> = Object.freeze({ status: 'pending' });

/** The (stateless) decision of a release for each node count, built once. */
const RELEASE_PLAN = Array.from({ length: 64 }, (_, total) =>
  Object.freeze({ needed: total, isYes: always, waitForAll: true }),
);
