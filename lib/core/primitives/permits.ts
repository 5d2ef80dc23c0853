import {
  AcquirePlan,
  AcquisitionResult,
  acquireWithRetries,
  holderDelay,
  throwIfAborted,
  ReleaseWaiter,
  backoffDelay,
} from '../acquire';
import type { AcquireRequest } from '../nodes';
import { releaseOnAll } from '../release';
import { nextOwnerValue } from '../lock';
import { type SemaphoreRead, readSemaphore } from './semaphore-read';

/**
 * The key of permit `slot` of a semaphore: `<lock key>#<slot>`. Same hash tag as the resource's lock and
 * fence keys (one Redis Cluster slot); never a lock key, since lock keys end in `}`.
 */
export function permitKey(lockKey: string, slot: number): string {
  return `${lockKey}#${slot}`;
}

/** A permit acquisition's result: the mutex's, with the slot it holds and the key of that slot. */
export type PermitResult = AcquisitionResult & {
  readonly permit?: number;
  readonly keys?: readonly string[];
};

/**
 * A counting semaphore over the quorum (docs/DESIGN.md §14): `permits` slots, each an exclusive lock of its
 * own (`acquireWithRetries`, one attempt per slot per round, each with its own owner value), so at most
 * `permits` holders exist at once for the same reason the mutex has at most one. The first round sends the
 * semaphore's read together with an attempt on the slot this instance won last (else a random one); a round
 * then tries one slot the read found free (from a random one), and when it is busy every other slot at once:
 * one more round trip, not one per busy slot. Slots won beyond the first are released (owner-checked). When
 * every slot is taken the acquisition waits for a release announcement on any slot, or the shortest holder
 * ttl, or a backoff, within `wait`.
 */
export async function acquirePermit(
  plan: AcquirePlan,
  resources: readonly string[],
  request: AcquireRequest,
  permits: number,
  wait: number,
  signal: AbortSignal | undefined,
): Promise<PermitResult> {
  const { clock } = plan;
  const began = clock.now();
  const base = request.keys[0];
  const slots = Array.from({ length: permits }, (_, slot) => permitKey(base, slot));
  const read = (next?: number) => readSemaphore(plan, base, slots, permits, request.ttl, resources, next);
  let waiter: ReleaseWaiter | undefined;
  const shared: SlotTries = { plan, resources, request, slots, signal, tries: { attempts: 0 } };
  const { tries } = shared;
  // The first read goes out with an attempt on the permit this instance won last (or a random one): one round
  // trip when that permit is free, which is what a process looping on a semaphore finds.
  const guess = guessedPermit(plan, base, permits);
  const opening = await firstRound(shared, guess, read);
  const granted = (won: NonNullable<SlotsOutcome['won']>): PermitResult => {
    rememberPermit(plan, base, won.slot);
    const wakes = wakesOf(waiter);
    return { ...won.result, attempts: tries.attempts, permit: won.slot, keys: [slots[won.slot]], ...wakes };
  };
  // The permit tried with the read was free: nothing else to order or try.
  if (opening.outcome.won) return granted(opening.outcome.won);
  // Too few nodes said which permits are free, since some found the guess free and skipped the rest: read them
  // all before trying those.
  let free = opening.free === undefined && opening.skipped ? (await read()).free : opening.free;
  try {
    for (let round = 1; ; round++) {
      if (round > 1) free = (await read()).free;
      const order = roundOrder(permits, free, plan.random);
      const opened = round === 1 ? { ...opening, guess, free } : undefined;
      const { won, busy, failure, holderTtl } = await roundOutcome(shared, order, opened);
      const attempts = tries.attempts;
      if (won) return granted(won);
      // Every permit is held (busy wins over unavailable: a quorum answered for those slots).
      const last = busy ?? failure!;
      const elapsed = clock.now() - began;
      const budget = wait - elapsed;
      if (budget <= 0) return { ...last, attempts, elapsed, ...wakesOf(waiter) };
      waiter ??= new ReleaseWaiter(plan.nodes, clock, slots);
      waiter.failedAttempt(Math.max(5, plan.retryDelay), plan.maxRetryDelay, holderTtl);
      const subscribed = busy !== undefined && (await waiter.subscribe());
      const jitter = plan.random() * Math.min(plan.retryDelay, 5);
      let delay: number;
      if (subscribed && waiter.justSubscribed) delay = 0;
      else if (subscribed && waiter.announced) delay = Math.max(waiter.quietFor, jitter);
      else if (subscribed) delay = holderDelay(holderTtl, plan);
      else delay = backoffDelay(round, plan.retryDelay, plan.maxRetryDelay, plan.random);
      waiter.announced = false;
      await waiter.sleep(Math.min(budget, delay), signal, subscribed);
      throwIfAborted(signal, resources);
    }
  } finally {
    waiter?.close();
  }
}

/**
 * A round's outcome; in the first (whose opening did not win), the opening's attempt on `guess` counts as its
 * first permit tried.
 */
function roundOutcome(
  shared: SlotTries,
  order: readonly number[],
  opening: { guess: number; free: Set<number> | undefined; outcome: SlotsOutcome } | undefined,
): Promise<SlotsOutcome> {
  if (!opening) return tryRound(shared, order, undefined, true);
  // Nothing read free: the guess was this round's random first, so every other permit at once.
  const others = order.filter((slot) => slot !== opening.guess);
  return tryRound(shared, others, opening.outcome, opening.free !== undefined);
}

/** What every attempt of one permit acquisition shares. */
interface SlotTries {
  readonly plan: AcquirePlan;
  readonly resources: readonly string[];
  readonly request: AcquireRequest;
  readonly slots: readonly string[];
  readonly signal: AbortSignal | undefined;
  readonly tries: { attempts: number };
}

/**
 * One round over `order`: its first permit alone (`firstAlone`), then, unless that won, every other one at once
 * (one more round trip, not one per busy permit). `before`: what an attempt earlier in the round gave.
 */
async function tryRound(
  { plan, resources, request, slots, signal, tries }: SlotTries,
  order: readonly number[],
  before: SlotsOutcome | undefined,
  firstAlone: boolean,
): Promise<SlotsOutcome> {
  if (order.length === 0) return before!;
  if (!firstAlone)
    return merged(before, await trySlots(plan, resources, request, order, slots, signal, tries));
  const [first, ...others] = order;
  let outcome = merged(before, await trySlots(plan, resources, request, [first], slots, signal, tries));
  if (outcome.won === undefined && others.length > 0)
    outcome = merged(outcome, await trySlots(plan, resources, request, others, slots, signal, tries));
  return outcome;
}

/** A later outcome of the same round, with the earlier one's busy answer and shortest ttl kept. */
function merged(earlier: SlotsOutcome | undefined, later: SlotsOutcome): SlotsOutcome {
  if (!earlier || later.won) return later;
  return {
    ...later,
    busy: later.busy ?? earlier.busy,
    failure: later.failure ?? earlier.failure,
    holderTtl: minTtl(earlier.holderTtl, later.holderTtl),
  };
}

/**
 * The first round: the semaphore's read and an attempt on `guess`, sent together. A permit won there is kept
 * only once the read found the same number of permits recorded: when it did not, the permit is released
 * (owner-checked) before the call fails with the read's error — it was never handed out.
 */
async function firstRound(
  { plan, resources, request, slots, signal, tries }: SlotTries,
  guess: number,
  read: (next: number) => Promise<SemaphoreRead>,
): Promise<SemaphoreRead & { outcome: SlotsOutcome }> {
  const [reading, tried] = await Promise.allSettled([
    read(guess),
    trySlots(plan, resources, request, [guess], slots, signal, tries),
  ]);
  if (reading.status === 'rejected') {
    if (tried.status === 'fulfilled' && tried.value.won) {
      const { result } = tried.value.won;
      result.claim.abandoned = true;
      await releaseOnAll(plan, [slots[guess]], result.owner);
    }
    throw reading.reason;
  }
  if (tried.status === 'rejected') throw tried.reason;
  return { ...reading.value, outcome: tried.value };
}

/** The permit each instance won last, per semaphore (its permit-0 key): a hint, at most this many kept. */
const lastWon = new WeakMap<AcquirePlan, Map<string, number>>();
const HINTS_KEPT = 1_024;

/** The permit to try with the first read: the one this instance won last, else one at random. */
function guessedPermit(plan: AcquirePlan, base: string, permits: number): number {
  const last = lastWon.get(plan)?.get(base);
  return last !== undefined && last < permits ? last : Math.floor(plan.random() * permits);
}

function rememberPermit(plan: AcquirePlan, base: string, slot: number): void {
  let hints = lastWon.get(plan);
  if (!hints) lastWon.set(plan, (hints = new Map()));
  hints.delete(base);
  hints.set(base, slot);
  // The oldest hint goes first (a Map keeps insertion order).
  if (hints.size > HINTS_KEPT) hints.delete(hints.keys().next().value!);
}

/**
 * The order of one round: the permits a quorum read free, from a random one round, then the others from a
 * random one round (a random start spreads contenders over the permits).
 */
function roundOrder(permits: number, free: ReadonlySet<number> | undefined, random: () => number): number[] {
  const start = Math.floor(random() * permits);
  const all = Array.from({ length: permits }, (_, k) => (start + k) % permits);
  if (!free || free.size === 0 || free.size === permits) return all;
  return [...all.filter((slot) => free.has(slot)), ...all.filter((slot) => !free.has(slot))];
}

type Acquired = Extract<AcquisitionResult, { kind: 'acquired' }>;
type Failed = Extract<AcquisitionResult, { kind: 'failed' }>;

/** What trying some slots at once gave: the one kept, the last busy and failed answers, the shortest ttl. */
interface SlotsOutcome {
  readonly won: { readonly slot: number; readonly result: Acquired } | undefined;
  readonly busy: Failed | undefined;
  readonly failure: Failed | undefined;
  readonly holderTtl: number | undefined;
}

/**
 * Tries `chosen` slots at once, each with an owner value of its own, and keeps the first won in `chosen`'s
 * order that is still valid; the others won are released (owner-checked, their late grants undone) — awaited
 * when none is kept. When an attempt throws (aborted, closed), every slot won is released and the error
 * rethrown.
 */
async function trySlots(
  plan: AcquirePlan,
  resources: readonly string[],
  request: AcquireRequest,
  chosen: readonly number[],
  slots: readonly string[],
  signal: AbortSignal | undefined,
  tries: { attempts: number },
): Promise<SlotsOutcome> {
  const settled = await Promise.allSettled(
    chosen.map((slot) => {
      const owner = tries.attempts++ === 0 ? request.owner : nextOwnerValue(request.owner);
      return acquireWithRetries(plan, resources, { ...request, keys: [slots[slot]], owner }, 0, signal);
    }),
  );
  // Counted as attempts made, beyond the one per slot counted above.
  for (const one of settled) if (one.status === 'fulfilled') tries.attempts += one.value.attempts - 1;
  const wins: { slot: number; result: Acquired }[] = [];
  let busy: Failed | undefined;
  let failure: Failed | undefined;
  let holderTtl: number | undefined;
  settled.forEach((one, index) => {
    if (one.status !== 'fulfilled') return;
    const result = one.value;
    if (result.kind === 'acquired') wins.push({ slot: chosen[index], result });
    else if (result.attempt.kind === 'busy') {
      busy = failure = result;
      holderTtl = minTtl(holderTtl, result.attempt.holderTtl);
    } else failure = result;
  });
  const thrown = settled.find((one) => one.status === 'rejected');
  // The other slots' answers came later than this one's grant: it is kept only while it is still valid.
  const now = plan.clock.now();
  const kept = thrown
    ? undefined
    : wins.find((win) => win.result.attempt.deadline > now || plan.unsafeSkipValidityCheck);
  const extra = wins.filter((win) => win !== kept);
  // Won, but no validity left once the other slots answered: this round ends as an expired grant does.
  if (!kept && !failure && wins.length > 0) failure = expiredWin(wins[0].result, request.ttl, now);
  for (const win of extra) win.result.claim.abandoned = true;
  const releases = Promise.all(extra.map((win) => releaseOnAll(plan, [slots[win.slot]], win.result.owner)));
  // With a permit, its extras are released on the way (owner-checked, §7); without one, before the call ends.
  if (kept) void releases;
  else await releases;
  if (thrown) throw thrown.reason;
  return { won: kept, busy, failure, holderTtl };
}

/** A grant that ran out of validity before it could be kept, as the failed attempt it then is. */
function expiredWin(win: Acquired, ttl: number, now: number): Failed {
  const elapsed = ttl + Math.max(0, now - win.attempt.deadline);
  const { attempts, wokenByRelease, wokenByTimer } = win;
  return {
    kind: 'failed',
    attempt: { kind: 'expired', votes: [], elapsed },
    attempts,
    elapsed,
    wokenByRelease,
    wokenByTimer,
  };
}

/** The shorter of two holder ttls (a negative or missing one is no ttl). */
function minTtl(a: number | undefined, b: number | undefined): number | undefined {
  const valid = [a, b].filter((ttl): ttl is number => ttl !== undefined && ttl >= 0);
  return valid.length === 0 ? undefined : Math.min(...valid);
}

/** How the sleeps between rounds ended (the slot attempts themselves never sleep). */
function wakesOf(waiter: ReleaseWaiter | undefined): { wokenByRelease: number; wokenByTimer: number } {
  return { wokenByRelease: waiter?.wokenByRelease ?? 0, wokenByTimer: waiter?.wokenByTimer ?? 0 };
}
