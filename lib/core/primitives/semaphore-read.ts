import { askNodes, callNode, type LockNode, type PermitsReading } from '../nodes';
import type { AcquirePlan } from '../acquire';
import { PermitCountMismatchError } from '../errors';
import { conflictingPermits, describe } from '../messages';

/**
 * A semaphore's read over the nodes (docs/DESIGN.md §14): the number of permits each node records, checked
 * against the caller's, and which permits a quorum holds nothing at.
 */

/** The key where each node records a semaphore's number of permits: `<lock key>#permits`. */
export function limitKey(lockKey: string): string {
  return `${lockKey}#permits`;
}

/** One node's answer to a semaphore read: its recorded limit, and the free permits when it can tell. */
interface SemaphoreReading {
  readonly limit: number;
  readonly free?: readonly boolean[];
}

/**
 * A semaphore read over the nodes: the permits a quorum read free (undefined when fewer than a quorum could
 * tell); `skipped`: some node left them out because the permit asked about (`next`) was free there.
 */
export interface SemaphoreRead {
  readonly free: Set<number> | undefined;
  readonly skipped: boolean;
}

/**
 * Reads the semaphore on every node in one call each (`readPermits`; `limit` and `inspect` from a node
 * without it), until a quorum answered with this number: records the number of permits where none is recorded,
 * refuses the call when a node that answered had another one recorded (callers that disagree would otherwise
 * each admit their own number of holders; the record lives at least as long as the last acquisition's ttl),
 * and answers which permits the answers read free — a round
 * tries those first, so that one busy permit after another is not tried in vain. A hint only: a permit read
 * free may be taken before the attempt, which decides as always (`free` undefined when fewer than a quorum could
 * tell). With `next`, the permit the first round tries alongside: a node that holds no key there skips the rest.
 */
export async function readSemaphore(
  plan: AcquirePlan,
  base: string,
  slots: readonly string[],
  permits: number,
  ttl: number,
  resources: readonly string[],
  next?: number,
): Promise<SemaphoreRead> {
  const key = limitKey(base);
  const result = await askNodes<SemaphoreReading, PermitsReading | SemaphoreReading>(
    plan,
    'acquire',
    (node) =>
      node.readPermits
        ? callNode(node, 'readPermits', () => node.readPermits!(key, slots, permits, ttl, next))
        : readApart(node, key, slots, permits, ttl),
    // A quorum of nodes with this number suffices: two callers with different numbers cannot both find their
    // own on a quorum (quorums intersect, and a node keeps the first number recorded while it is used).
    { needed: plan.quorum, isYes: (reading) => reading.limit === permits },
    (node, reading) => checkedReading(node, reading, slots.length),
  );
  const reads: (readonly boolean[])[] = [];
  let skipped = false;
  result.answers.forEach((answer, index) => {
    if (answer.status !== 'value') return;
    if (answer.value.limit !== permits) {
      throw new PermitCountMismatchError(
        conflictingPermits(resources, permits, answer.value.limit, plan.nodes[index].name, key),
        resources,
        permits,
        answer.value.limit,
      );
    }
    if (answer.value.free) reads.push(answer.value.free);
    else if (next !== undefined && plan.nodes[index].readPermits) skipped = true;
  });
  if (reads.length < plan.quorum) return { free: undefined, skipped };
  const free = new Set<number>();
  slots.forEach((_, slot) => {
    if (reads.every((read) => read[slot])) free.add(slot);
  });
  return { free, skipped };
}

/** A semaphore read from a node without `readPermits`: its `limit` (if any) and its `inspect` (if any). */
async function readApart(
  node: LockNode,
  key: string,
  slots: readonly string[],
  permits: number,
  ttl: number,
): Promise<SemaphoreReading> {
  const [limit, reading] = await Promise.all([
    node.limit ? callNode(node, 'limit', () => node.limit!(key, permits, ttl)) : permits,
    node.inspect ? callNode(node, 'inspect', () => node.inspect!(slots)) : undefined,
  ]);
  if (reading === undefined) return { limit, free: undefined };
  if (!Array.isArray(reading?.keys) || reading.keys.length !== slots.length)
    throw new Error(
      `${node.name}: LockNode.inspect() resolved ${describe(reading)} for ${slots.length} keys`,
    );
  return { limit, free: reading.keys.map((one) => one?.type === 'none') };
}

/** A node's semaphore reading, checked: a limit ≥ −1 and one flag per permit; another shape is its error. */
function checkedReading(node: LockNode, reading: SemaphoreReading, count: number): SemaphoreReading {
  const { limit, free } = (reading ?? {}) as Partial<SemaphoreReading>;
  // A node without readPermits answered through limit(): its value is what a wrong answer shows.
  const [method, shown] = node.readPermits ? ['readPermits', reading] : ['limit', limit];
  const limitOk = typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= -1;
  const flagsOk = free === undefined || (Array.isArray(free) && free.length === count && free.every(isFlag));
  if (!limitOk || !flagsOk) throw new Error(`${node.name}: LockNode.${method}() resolved ${describe(shown)}`);
  return { limit: limit!, free };
}

const isFlag = (flag: unknown): flag is boolean => typeof flag === 'boolean';
