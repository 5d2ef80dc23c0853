import type { CallRecording } from './one-call';

/** The line that opens the route's list in docs/DESIGN.md §0. */
export const ROUTE_INTRO = "The route of one uncontended `@Locked('order:<0>')` call, file by file";

/** One line of the list: `12. \`lib/core/lock.ts\` — what it does in the call`. */
const ITEM = /^\d+\. `(lib\/[^`]+)`(?: — (.*))?$/;

/** The route as DESIGN §0 lists it: each file (`lib/...`) with what it does there, in the listed order. */
export interface ListedStep {
  readonly file: string;
  readonly does: string;
}

/**
 * The numbered list after the paragraph that opens with {@link ROUTE_INTRO}: its lines from the first
 * numbered one to the next blank line (their numbers are not read). Throws when there is none, or when a
 * line of it is no item (the list must be what the spec reads).
 */
export function listedRoute(design: string): ListedStep[] {
  const lines = design.split('\n');
  const intro = lines.findIndex((line) => line.startsWith(ROUTE_INTRO));
  if (intro < 0) throw new Error(`docs/DESIGN.md has no paragraph starting "${ROUTE_INTRO}"`);
  let first = intro + 1;
  while (first < lines.length && !/^\d+\. /.test(lines[first])) {
    if (lines[first].startsWith('#')) throw new Error('docs/DESIGN.md: the route paragraph has no list');
    first++;
  }
  const steps: ListedStep[] = [];
  for (let i = first; i < lines.length && lines[i].trim() !== ''; i++) {
    const match = ITEM.exec(lines[i]);
    if (!match)
      throw new Error(`docs/DESIGN.md line ${i + 1}: expected "N. \`lib/...\` — ...", got "${lines[i]}"`);
    steps.push({ file: match[1], does: match[2] ?? '' });
  }
  if (steps.length === 0) throw new Error('docs/DESIGN.md: the route paragraph has no list');
  return steps;
}

/**
 * Undefined when the recorded route is the listed one (same files, same order); otherwise what differs,
 * then the recorded route as the list DESIGN §0 holds, ready to paste: the words of files still listed are
 * kept, new files say TODO.
 */
export function routeMismatch(listed: readonly ListedStep[], recorded: CallRecording): string | undefined {
  const files = listed.map((step) => step.file);
  const { route, entries } = recorded;
  if (files.length === route.length && files.every((file, i) => file === route[i])) return undefined;
  const missing = files.filter((file) => !route.includes(file));
  const extra = route.filter((file) => !files.includes(file));
  const at = files.findIndex((file, i) => file !== route[i]);
  const first = at < 0 ? files.length : at; // the listed route is a prefix of the recorded one
  const does = new Map(listed.map((step) => [step.file, step.does]));
  return [
    'The route of one uncontended @Locked call is not the one docs/DESIGN.md §0 lists.',
    ...(missing.length > 0 ? [`Listed, not run: ${missing.join(', ')}`] : []),
    ...(extra.length > 0 ? [`Run, not listed: ${extra.join(', ')}`] : []),
    `First difference at item ${first + 1}: listed ${files[first] ?? '(nothing)'}, ran ${route[first] ?? '(nothing)'}.`,
    '',
    'The route that ran (paste it into §0; [n×]: how many function entries, not for the list):',
    ...route.map(
      (file, i) => `${i + 1}. \`${file}\` — ${does.get(file) || 'TODO: what it does in the call'}`,
    ),
    '',
    route.map((file, i) => `${file} [${entries[i]}×]`).join(' → '),
  ].join('\n');
}
