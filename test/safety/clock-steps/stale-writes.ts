import type { SectionRecord } from '../chaos/protocol';

/**
 * Stale writes the fenced store accepted: per fenced resource, the store accepts strictly rising tokens, so the
 * accepted writes in token order are the writes in the order they landed. A write that landed after the write
 * of a holder granted later (a later section start) is an older holder's write over a newer one's: the stale
 * write fencing exists to turn down. Two holders that did not overlap cannot produce one (the older wrote
 * before its section ended, before the newer began), so each one found is an overlap fencing failed to order.
 */
export function staleWritesAccepted(sections: readonly SectionRecord[]): SectionRecord[] {
  const byResource = new Map<string, SectionRecord[]>();
  for (const section of sections) {
    if (section.fenceAccepted !== true) continue;
    const resource =
      section.permit === undefined ? section.resource : `${section.resource}#${section.permit}`;
    byResource.set(resource, [...(byResource.get(resource) ?? []), section]);
  }
  const stale: SectionRecord[] = [];
  for (const list of byResource.values()) {
    let newestStart = -Infinity;
    for (const section of [...list].sort((a, b) => a.token - b.token)) {
      if (section.start < newestStart) stale.push(section);
      newestStart = Math.max(newestStart, section.start);
    }
  }
  return stale;
}
