/**
 * What every reply parser shares: the error for a reply a script cannot return, reading a Redis integer, and the
 * 0/1 flag that FENCE, READ_FENCE, EXTEND and READ_EXTEND answer.
 */

/**
 * A node answered a lock script with something the script cannot return: not a Redis server running this
 * library's scripts, or a hostile one. The answer is that node's error vote, never a lock or a token.
 */
export class UnexpectedReplyError extends Error {
  constructor(node: string, operation: string, reply: unknown, problem: string) {
    super(
      `${node} answered ${operation} with ${showReply(reply)}: ${problem}. Counted as this node's error; ` +
        'check that it is a Redis server (not a proxy or another service) and that it can be trusted.',
    );
    this.name = 'UnexpectedReplyError';
  }
}

/** A Redis integer, as ioredis gives it (a number) or as a script returns a large one (decimal digits). */
export function integerOf(value: unknown): number | undefined {
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^-?\d{1,16}$/.test(value)
        ? Number(value)
        : NaN;
  return Number.isSafeInteger(number) ? number : undefined;
}

/** A reply for a message: JSON-like, at most 100 characters. */
export function showReply(reply: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(reply) ?? String(reply);
  } catch {
    text = String(reply);
  }
  return text.length > 100 ? `${text.slice(0, 100)}…(${text.length} chars)` : text;
}

/** The fence and extend scripts answer 1 (done) or 0 (not the owner), nothing else. */
export function flagReplyOf(node: string, operation: string, raw: unknown): boolean {
  if (raw === 1 || raw === 0) return raw === 1;
  throw new UnexpectedReplyError(node, operation, raw, 'expected 0 or 1');
}
