/**
 * The candidate closest to `word` by edit distance (case-insensitive), when it is close enough to be a
 * likely misspelling: at most 2 edits, and fewer than half the word's length. Otherwise undefined.
 */
export function nearestName(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(2, Math.ceil(word.length / 2) - 1);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= limit ? best : undefined;
}

/** Levenshtein distance, with an adjacent swap counted as one edit (`hsot` → `host`). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0].push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, rows[i - 2][j - 2] + 1);
      }
      rows[i].push(distance);
    }
  }
  return rows[a.length][b.length];
}
