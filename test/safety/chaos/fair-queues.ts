import { DEFAULT_OPTIONS } from '../../../lib/core';
import type { RedisNodes } from '../../support';
import type { QueueKey } from '../checkers/tickets';
import type { PhaseAnalysis } from './analysis';
import type { PhaseRun } from './cluster';

/**
 * How long a fair waiter's ticket lives unless renewed: the intent's ttl, max(200 ms, 4 × `maxRetryDelay`)
 * (lib/core/instance.ts; the chaos clients keep the default `maxRetryDelay`).
 */
export const TICKET_TTL = Math.max(200, 4 * DEFAULT_OPTIONS.maxRetryDelay);

/**
 * Every key of fair waiting (`<lock key>:queue`, `:queue:live`, `:queue:turn`, lib/redis/scripts/fair-queue.ts)
 * and every writer's intent (`:intent`) on the running, resumed nodes, with its PTTL and its number of tickets.
 */
export async function queueKeysOnNodes(nodes: RedisNodes): Promise<QueueKey[]> {
  const found = await Promise.all(
    nodes.nodes.map(async (node, index): Promise<QueueKey[]> => {
      if (!node.running || node.paused) return [];
      const admin = node.redis();
      try {
        const keys: string[] = [];
        for (const pattern of ['*:queue*', '*:intent']) {
          let cursor = '0';
          do {
            const [next, batch] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
            keys.push(...batch);
            cursor = next;
          } while (cursor !== '0');
        }
        return await Promise.all(
          keys.map(async (key) => {
            const [pttl, type] = await Promise.all([admin.pttl(key), admin.type(key)]);
            const tickets = type === 'zset' ? await admin.zcard(key) : undefined;
            return { node: index, key, pttl, ...(tickets === undefined ? {} : { tickets }) };
          }),
        );
      } finally {
        admin.disconnect();
      }
    }),
  );
  return found.flat();
}

/** The most tickets any one queue held on any node (0: none found). */
export function longestQueue(keys: readonly QueueKey[]): number {
  return Math.max(0, ...keys.filter((k) => k.key.endsWith(':queue')).map((k) => k.tickets ?? 0));
}

/** What the fair-waiters phase exercised, from the clients' `waiting` events, sections and the fault log. */
export interface FairFigures {
  /** `waiting` events per client. */
  readonly waitingEvents: number[];
  /** The furthest-back place any event gave. */
  readonly maxPlace: number;
  /** Sections whose acquisition had learnt a place ≥ 2 (it was queued behind another waiter, then granted). */
  readonly grantedAfterQueueing: number;
  /**
   * Waiters stopped (SIGSTOP) while queued: the client, its resource, how long, and the sections others began on
   * that resource meanwhile: in all, and once its tickets had expired (a ticket's ttl after it stopped).
   */
  readonly waiterPauses: {
    client: number;
    resource: string;
    ms: number;
    othersGranted: number;
    afterExpiry: number;
  }[];
  /**
   * Grants that went to a later arrival while an earlier waiter for the same resource (its process not stopped)
   * went on waiting: how far the order held under the faults (reported, not asserted: nodes that lost their
   * queues, or answer late, may order differently, and a turn that runs out falls back to the race).
   */
  readonly overtakes: number;
  /**
   * The longest time a resource went without a holder while a waiter (its process not stopped) waited for it,
   * from the end of one section to the start of the next, ms: how long the queue stood still.
   */
  readonly longestStall: number;
}

export function fairFigures(run: PhaseRun, analysis: PhaseAnalysis): FairFigures {
  const pauses: FairFigures['waiterPauses'] = [];
  run.events.forEach((pause, i) => {
    if (pause.kind !== 'client-pause') return;
    const client = pause.client!;
    const resume = run.events.slice(i).find((e) => e.kind === 'client-resume' && e.client === client);
    const to = resume?.t ?? run.to;
    // The resource it was queued for: its last `waiting` event before it stopped.
    const resource = run.reports[client].waitings.filter((w) => w.t <= pause.t).pop()?.resource ?? '?';
    const others = analysis.sections.filter(
      (s) => s.client !== client && s.resource === resource && s.start >= pause.t && s.start <= to,
    );
    const afterExpiry = others.filter((s) => s.start > pause.t + TICKET_TTL).length;
    pauses.push({
      client,
      resource,
      ms: Math.round(to - pause.t),
      othersGranted: others.length,
      afterExpiry,
    });
  });
  const waitings = run.reports.map((report) => report.waitings);
  const stopped = (client: number, from: number, to: number) =>
    run.events.some((e) => e.client === client && e.kind === 'client-pause' && e.t >= from && e.t <= to);
  // Every acquisition with when it came and when it ended: granted (its section began) or given up.
  const waits = [
    ...analysis.sections.map((s) => ({
      client: s.client,
      resource: s.resource,
      came: s.acqStart,
      to: s.start,
    })),
    ...analysis.failures.map((f) => ({
      client: f.client,
      resource: f.resource,
      came: f.acqStart,
      to: f.acqEnd,
    })),
  ];
  let longestStall = 0;
  for (const resource of new Set(analysis.sections.map((s) => s.resource))) {
    const held = analysis.sections.filter((s) => s.resource === resource).sort((a, b) => a.start - b.start);
    let freeFrom = -Infinity;
    for (const section of held) {
      const waiting = waits.some(
        (w) =>
          w.resource === resource &&
          w.came <= freeFrom &&
          w.to >= section.start &&
          !stopped(w.client, freeFrom, section.start),
      );
      if (waiting) longestStall = Math.max(longestStall, section.start - freeFrom);
      freeFrom = Math.max(freeFrom, Math.min(section.end, section.deadline));
    }
  }
  const overtakes = analysis.sections.filter((grant) =>
    waits.some(
      (earlier) =>
        earlier.resource === grant.resource &&
        earlier.came < grant.acqStart &&
        earlier.to > grant.start &&
        !stopped(earlier.client, earlier.came, earlier.to),
    ),
  ).length;
  return {
    waitingEvents: waitings.map((list) => list.length),
    maxPlace: Math.max(0, ...waitings.flat().map((w) => w.position)),
    grantedAfterQueueing: analysis.sections.filter((s) => (s.place ?? 0) >= 2).length,
    waiterPauses: pauses,
    overtakes,
    longestStall: Math.round(longestStall),
  };
}
