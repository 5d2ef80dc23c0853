import type { ChaosCluster } from './cluster';
import { TICKET_TTL } from './fair-queues';
import type { Random } from './random';
import { delay as sleep } from '../../support/waits';

/** The kinds of fault window the main run draws from, with their weights. */
export const WINDOW_KINDS = [
  ['calm', 1],
  ['kill', 3],
  ['pause', 3],
  ['partition', 2],
  ['latency', 2],
  ['mixed', 2],
  ['bare-quorum-restart', 2],
  ['double-restart', 1],
  ['no-quorum', 1],
] as const;

/** The kinds above, and `waiter-pause` (fair waiting: a queued waiter's process stops), run by {@link runWindows}. */
export type WindowKind = (typeof WINDOW_KINDS)[number][0] | 'waiter-pause';

/**
 * A section that began this long after a cut was granted by an attempt sent after the cut (an attempt lasts
 * at most two per-node timeouts, 150 ms each here), so the cut nodes hold none of its keys.
 */
const FRESH_AFTER_CUT = 400;

/**
 * The main run's fault scheduler: back-to-back windows until `until` (ms on the cluster clock). Each window
 * draws a kind and its parameters from `random`, logs itself, injects its faults on schedule and ends with
 * everything healed (killed nodes started empty, paused ones resumed, links healed, latency removed).
 * A majority stays up in most kinds; `no-quorum` pauses three nodes, `bare-quorum-restart` and
 * `double-restart` leave only a bare majority for a while.
 */
export async function runFaultWindows(
  cluster: ChaosCluster,
  random: Random,
  ttl: number,
  until: number,
): Promise<void> {
  while (cluster.now() < until) {
    const kind = random.weighted(WINDOW_KINDS);
    await runWindow(cluster, random, kind, ttl);
  }
}

/** Windows of the given kinds, one after the other, each as {@link runFaultWindows} runs it. */
export async function runWindows(
  cluster: ChaosCluster,
  random: Random,
  ttl: number,
  kinds: readonly WindowKind[],
): Promise<void> {
  for (const kind of kinds) await runWindow(cluster, random, kind, ttl);
}

async function runWindow(
  cluster: ChaosCluster,
  random: Random,
  kind: WindowKind,
  ttl: number,
): Promise<void> {
  const nodes = Array.from({ length: cluster.nodeCount }, (_, i) => i);
  const clients = Array.from({ length: cluster.clientCount }, (_, i) => i);
  const start = cluster.now();
  const at = (offset: number) => sleep(start + offset - cluster.now());
  const randomLink = () => ({ client: random.pick(clients), node: random.pick(nodes) });
  let duration = random.int(1_200, 2_400);
  const windowEvent = () => cluster.log('window', { note: kind, ms: duration });

  switch (kind) {
    case 'calm':
      windowEvent();
      break;
    case 'kill': {
      windowEvent();
      const node = random.pick(nodes);
      await cluster.kill(node);
      await at(random.int(50, Math.min(900, duration - 300)));
      await cluster.start(node);
      break;
    }
    case 'pause': {
      windowEvent();
      const node = random.pick(nodes);
      await cluster.pause(node);
      await at(random.int(100, duration - 50));
      await cluster.resume(node);
      break;
    }
    case 'partition': {
      windowEvent();
      const links = Array.from({ length: random.int(1, 3) }, randomLink);
      for (const link of links) {
        await at(random.int(0, 300));
        if (!cluster.isCut(link.client, link.node)) cluster.cut(link.client, link.node);
      }
      if (random.chance(0.5)) {
        await at(random.int(400, duration - 100));
        for (const link of links)
          if (cluster.isCut(link.client, link.node)) cluster.heal(link.client, link.node);
      }
      break;
    }
    case 'latency': {
      windowEvent();
      for (let i = random.int(1, 4); i > 0; i--) {
        const link = randomLink();
        const ms = random.chance(0.6) ? random.int(5, 40) : random.int(60, 300);
        cluster.latency(link.client, link.node, ms);
        await at(random.int(0, 300));
      }
      break;
    }
    case 'mixed': {
      windowEvent();
      const [killed, paused] = random.sample(nodes, 2);
      const cutLink = randomLink();
      const slowLink = randomLink();
      await cluster.kill(killed);
      cluster.cut(cutLink.client, cutLink.node);
      cluster.latency(slowLink.client, slowLink.node, random.int(20, 250));
      await at(random.int(0, 400));
      await cluster.pause(paused);
      await at(random.int(400, 900));
      await cluster.start(killed);
      await at(random.int(900, duration - 50));
      await cluster.resume(paused);
      break;
    }
    case 'bare-quorum-restart': {
      // Two nodes cut off from everyone: new locks land on exactly the other three. Once the locks taken
      // before the cut have expired, the next holder to enter is the target: one of its three nodes restarts
      // empty and the two come back. Only the restart guard now stands between that holder and a second
      // grant through {restarted node + the two}.
      const [isolatedA, isolatedB, restarted] = random.sample(nodes, 3);
      windowEvent();
      cluster.isolate(isolatedA);
      cluster.isolate(isolatedB);
      const isolatedAt = cluster.now();
      await at(ttl + 50);
      const target = await cluster.waitForEntry((entry) => entry.start > isolatedAt + FRESH_AFTER_CUT, ttl);
      if (target) cluster.log('note', { note: `target: client ${target.client} on ${target.resource}` });
      for (const node of [isolatedA, isolatedB]) for (const c of clients) cluster.heal(c, node);
      await cluster.restartEmpty(restarted);
      duration = cluster.now() - start + ttl + random.int(200, 600);
      break;
    }
    case 'double-restart': {
      windowEvent();
      const [first, second] = random.sample(nodes, 2);
      await cluster.restartEmpty(first);
      await at(random.int(0, 600));
      await cluster.restartEmpty(second);
      break;
    }
    case 'waiter-pause': {
      // A fair waiter queued behind others stops (SIGSTOP), and a node with it: it stops renewing its tickets.
      // It stays stopped for longer than they live, and until another client has been granted its resource
      // after they expired (or for a ttl more): the queue goes on without it (docs/DESIGN.md §18).
      const pausedFor = random.int(1_300, 1_700);
      const node = random.pick(nodes);
      windowEvent();
      const queued = await cluster.waitForWaiting((w) => w.position >= 3, 2 * ttl);
      const pausedAt = cluster.now();
      const passed =
        queued &&
        cluster.waitForEntry(
          (e) =>
            e.resource === queued.resource && e.client !== queued.client && e.start > pausedAt + TICKET_TTL,
          pausedFor + ttl,
        );
      if (queued)
        cluster.pauseClient(queued.client, `queued at place ${queued.position} on ${queued.resource}`);
      await cluster.pause(node);
      await at(pausedAt - start + pausedFor);
      if (queued) {
        await passed;
        cluster.resumeClient(queued.client);
      }
      await cluster.resume(node);
      duration = cluster.now() - start + random.int(200, 500);
      break;
    }
    case 'no-quorum': {
      const pausedFor = random.int(300, 1_500);
      duration = pausedFor + random.int(400, 1_000);
      windowEvent();
      const paused = random.sample(nodes, 3);
      for (const node of paused) await cluster.pause(node);
      await at(pausedFor);
      for (const node of paused) await cluster.resume(node);
      break;
    }
  }
  await at(duration);
  await cluster.healAll();
}

/**
 * Negative control 1 (restart guard off): the pattern every peer failed in DESIGN §6. Nodes d and e are cut
 * off from everyone, so the locks taken meanwhile sit on exactly {a, b, c}; once the `lockKeys` taken before
 * the cut are gone from d and e (expired: nobody reaches them to renew), as soon as a holder enters
 * after the cut, d and e come back and a restarts empty — and a second client gets a majority {a, d, e}
 * while the first still works under its lock. Runs `cycles.min` cycles, then more (up to `cycles.max`) until
 * `found()` says the checker has something: a starved host can make a cycle miss its moment.
 */
export async function bareQuorumRestarts(
  cluster: ChaosCluster,
  ttl: number,
  lockKeys: readonly string[],
  cycles: { readonly min: number; readonly max: number },
  found: () => boolean,
): Promise<void> {
  for (let cycle = 0; cycle < cycles.max && (cycle < cycles.min || !found()); cycle++) {
    const [a, , , d, e] = Array.from(
      { length: cluster.nodeCount },
      (_, i) => (i + cycle) % cluster.nodeCount,
    );
    cluster.log('window', { note: 'nc-bare-quorum-restart' });
    cluster.isolate(d);
    cluster.isolate(e);
    const isolatedAt = cluster.now();
    await cluster.keysGoneFrom([d, e], lockKeys); // every lock taken before the cut has expired on d and e
    // The next holder to enter acquired after the cut: its lock sits on exactly {a, b, c}.
    const target = await cluster.waitForEntry((entry) => entry.start > isolatedAt + FRESH_AFTER_CUT, 2 * ttl);
    if (target) cluster.log('note', { note: `target: client ${target.client} on ${target.resource}` });
    for (let c = 0; c < cluster.clientCount; c++) {
      cluster.heal(c, d);
      cluster.heal(c, e);
    }
    await cluster.restartEmpty(a);
    // A second client may now get {a, d, e} while the target still works: until the checker sees the overlap
    // in the reported sections, at most ttl + 200 ms (by then the target's section has ended).
    await cluster.waitForSections(found, ttl + 200);
    await cluster.healAll();
  }
}

/**
 * Negative control 2 (validity check skipped): every link of the `victims` gets `latency` ms each way, so
 * their quorum (acquire + fencing write-back: two round trips) arrives after the ttl has run out. The
 * others take the lock as soon as the victim's keys expire, while the victim still trusts its lock. Lasts
 * `duration.min` ms, longer (up to `duration.max`) until `found()`.
 */
export async function slowVictims(
  cluster: ChaosCluster,
  victims: readonly number[],
  latency: number,
  duration: { readonly min: number; readonly max: number },
  found: () => boolean,
): Promise<void> {
  cluster.log('window', { note: 'nc-slow-victims' });
  for (const client of victims) {
    for (let node = 0; node < cluster.nodeCount; node++) cluster.latency(client, node, latency);
  }
  const start = cluster.now();
  await sleep(duration.min);
  // Then on until the checker finds an overlap in the sections reported (each report re-checks it).
  await cluster.waitForSections(found, duration.max - (cluster.now() - start));
  await cluster.healAll();
}
