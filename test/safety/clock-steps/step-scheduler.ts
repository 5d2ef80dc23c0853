import type { NodeClock } from '../../support/clock-shim';
import { delay as sleep } from '../../support/waits';
import type { ChaosCluster } from '../chaos/cluster';
import type { Random } from '../chaos/random';

/** A schedule of wall-clock steps on running nodes. */
export interface StepPlan {
  /** How many nodes step together: 1 (a minority) or 3 (a majority of five). */
  readonly nodes: number;
  /** The size of a step, in multiples of `ttl` (0.5–3). */
  readonly size: readonly [number, number];
  /** How long the stepped clocks stay off before they step back, ms. */
  readonly hold: readonly [number, number];
  /** Steps of different groups in a row aimed at one holder (each group stepped and back before the next). */
  readonly burst: readonly [number, number];
  /** Aim at holders with at least this much validity left when they enter, ms. */
  readonly aimRemaining: number;
  /** The chance that a node steps backward first (and then forward, back to the true time). */
  readonly backwardFirst: number;
  /**
   * Step back only once every client's Redlock instance reported the step of every stepped node (its
   * `clock-step` event), or once `ttl` ms passed (every lock the step could cut short has expired by then): the
   * steps the detection is documented to see. Otherwise: after `hold`.
   */
  readonly returnWhenSeen: boolean;
  /** The longest ttl of the clients. */
  readonly ttl: number;
  /** At least `min` ms of steps, then on up to `max` ms until `done()` says the checkers have what they need. */
  readonly ms: { readonly min: number; readonly max: number };
}

/**
 * Resolves once every client reported a step of `sign` on each node of `group` (to be called before the step:
 * a report of an earlier step back has the other sign, as the plans that wait for it step forward first).
 */
function seenByEveryClient(cluster: ChaosCluster, group: readonly number[], sign: number): Promise<void> {
  const pending = new Set(
    cluster.clients.flatMap((client) => group.map((node) => `${client.index}/${node}`)),
  );
  return new Promise((resolve) => {
    for (const client of cluster.clients) {
      client.onClockStep = (node, step) => {
        if (Math.sign(step) === sign) pending.delete(`${client.index}/${node}`);
        if (pending.size === 0) resolve();
      };
    }
  });
}

/** The note of a step in the fault log (`node` and `ms` say which node stepped, how far). */
export const STEP_NOTE = 'clock step';

/**
 * Steps clocks one group at a time: waits for a holder to enter (its lock is fresh on the nodes and the others
 * poll for the resource, so a key that a step expires early is wanted at once), then, a burst of times, steps
 * `plan.nodes` running nodes (other ones each time) forward (or backward) by 0.5–3 ttl, lets them run off for a
 * while and steps them back to the true time. A burst of single-node steps takes the holder's keys off one
 * node after another: never more than one clock off at once, yet a waiter can find a majority free. Every step
 * is confirmed on the node (NodeClock) and logged. Returns the number of steps.
 */
export async function runClockSteps(
  cluster: ChaosCluster,
  clocks: readonly NodeClock[],
  random: Random,
  plan: StepPlan,
  done: () => boolean = () => true,
): Promise<number> {
  const start = cluster.now();
  const nodes = clocks.map((_, i) => i);
  const elapsed = () => cluster.now() - start;
  let steps = 0;
  const step = async (group: readonly number[], ms: number) => {
    await Promise.all(group.map((node) => clocks[node].step(ms)));
    for (const node of group) cluster.log('note', { node, ms, note: STEP_NOTE });
    steps += group.length;
  };
  while (elapsed() < plan.ms.min || (!done() && elapsed() < plan.ms.max)) {
    await cluster.waitForEntry((entry) => entry.remaining >= plan.aimRemaining, plan.ttl);
    let left = [...nodes];
    for (let burst = random.int(plan.burst[0], plan.burst[1]); burst > 0; burst--) {
      if (left.length < plan.nodes) left = [...nodes];
      const group = random.sample(left, plan.nodes);
      left = left.filter((node) => !group.includes(node));
      const size = plan.size[0] + random.next() * (plan.size[1] - plan.size[0]);
      const ms = Math.round(plan.ttl * size) * (random.chance(plan.backwardFirst) ? -1 : 1);
      const holdMs = random.int(plan.hold[0], plan.hold[1]);
      const seen = plan.returnWhenSeen ? seenByEveryClient(cluster, group, Math.sign(ms)) : undefined;
      await step(group, ms);
      // The stepped clocks run off: real time is the point.
      const held = sleep(plan.returnWhenSeen ? plan.ttl : holdMs);
      if (seen) {
        const outcome = await Promise.race([
          seen.then(() => 'seen by every client'),
          held.then(() => 'unseen'),
        ]);
        cluster.log('note', { note: `${STEP_NOTE} ${outcome}` });
      } else await held;
      await step(group, -ms);
    }
  }
  for (const client of cluster.clients) client.onClockStep = undefined;
  return steps;
}
