import type { Interval } from './intervals';

/**
 * A resource that checks fencing tokens, as a database row guarded by `UPDATE ... WHERE last_token < :token`
 * would: a write carrying a token not larger than the last accepted one is rejected.
 */
export class FencedRegister<T> {
  private lastToken = -Infinity;
  value: T | undefined;
  readonly rejected: { token: number; value: T }[] = [];

  /**
   * `sameTokenAgain`: a token equal to the last accepted one is accepted too (`WHERE last_token <= :token`), so
   * a holder may write several times under one token.
   */
  constructor(private readonly sameTokenAgain = false) {}

  write(token: number, value: T): boolean {
    if (!(token > this.lastToken || (this.sameTokenAgain && token === this.lastToken))) {
      this.rejected.push({ token, value });
      return false;
    }
    this.lastToken = token;
    this.value = value;
    return true;
  }
}

/** What the holders' fenced writes to their resources did (see {@link replayFencedWrites}). */
export interface FencedWrites {
  /** Writes made. */
  readonly writes: number;
  /** Writes the register rejected. */
  readonly rejected: number;
  /**
   * Accepted writes that interleave: a holder's write accepted after another holder's, when an earlier write
   * of its own had been accepted before that one — the resource saw two holders take turns (A, B, A).
   */
  readonly interleaved: number;
}

/**
 * Each exclusive holder that has a fencing token writes its resource when granted and when its section ends;
 * the writes of each resource go through one register in true-time order. Overlapping holders make stale
 * writes: a register that ignores tokens (`fenced: false`, the checker's negative control) lets them
 * interleave. A {@link FencedRegister} that lets a holder write again under its token never does while no two
 * holders share a token: the tokens it accepts only rise, so it can never come back to a holder once it took a
 * larger token (a superseded holder's writes are rejected, whichever of the two was granted first).
 */
export function replayFencedWrites(intervals: readonly Interval[], fenced: boolean): FencedWrites {
  const byResource = new Map<string, Interval[]>();
  for (const interval of intervals) {
    if (interval.token === undefined || interval.mode === 'read') continue;
    const list = byResource.get(interval.resource) ?? [];
    list.push(interval);
    byResource.set(interval.resource, list);
  }
  let writes = 0;
  let rejected = 0;
  let interleaved = 0;
  for (const list of byResource.values()) {
    const all = list.flatMap((interval) => [
      { at: interval.start, holder: interval.holder, token: interval.token! },
      { at: interval.end, holder: interval.holder, token: interval.token! },
    ]);
    all.sort((a, b) => a.at - b.at);
    const register = new FencedRegister<string>(true);
    const wrote = new Set<string>();
    let last: string | undefined;
    for (const write of all) {
      writes++;
      if (fenced && !register.write(write.token, write.holder)) {
        rejected++;
        continue;
      }
      if (last !== undefined && last !== write.holder && wrote.has(write.holder)) interleaved++;
      wrote.add(write.holder);
      last = write.holder;
    }
  }
  return { writes, rejected, interleaved };
}
