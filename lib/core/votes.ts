import type { NodeVote } from './errors';
import type { LockNode } from './node';
import type { Answer } from './quorum';

/** Per-node votes for messages and results, aligned with `nodes`; `vote` says what a value means. */
export function votesOf<T>(
  nodes: readonly LockNode[],
  answers: readonly Answer<T>[],
  vote: (value: T) => Omit<NodeVote, 'node'>,
): NodeVote[] {
  return answers.map((answer, index): NodeVote => {
    const node = nodes[index].name;
    switch (answer.status) {
      case 'value':
        return { node, ...vote(answer.value) };
      case 'error':
        return { node, outcome: 'error', error: answer.error };
      default:
        return { node, outcome: answer.status };
    }
  });
}
