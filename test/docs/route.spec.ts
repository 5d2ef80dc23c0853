import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { ListedStep, listedRoute, routeMismatch } from './route/listed-route';
import type { RouteRecording } from './route/one-call';
import { recordRoute } from './route/record';

/**
 * docs/DESIGN.md §0 lists the route of one uncontended `@Locked('order:<0>')` call: the lib/ files whose
 * functions run, in order of first entry. This records it (`route/one-call.ts`, in a child process over a copy
 * of lib/ whose every function says it was entered: `route/instrument.ts`) and fails when it is not the list,
 * printing the recorded list to paste into §0. V8's precise coverage of the same call checks that the hook
 * misses no file that ran. Negative controls: the list of what ran with two files swapped, or one left out,
 * and a call whose body enters one more lib/ file, do not match.
 */
const REPO = path.resolve(__dirname, '..', '..');
const DESIGN = path.join(REPO, 'docs', 'DESIGN.md');

let recording: RouteRecording;
let listed: ListedStep[];

beforeAll(() => {
  listed = listedRoute(fs.readFileSync(DESIGN, 'utf8'));
  recording = recordRoute();
}, 60_000);

describe('docs/DESIGN.md §0: the route of one uncontended @Locked call', () => {
  it('is the list in §0: the lib/ files whose functions ran, in order of first entry', () => {
    expect(recording.call.value).toBe('paid 42');
    const mismatch = routeMismatch(listed, recording.call);
    if (mismatch !== undefined) throw new Error(mismatch);
  });

  it('misses no file that ran: V8 saw functions run only in the route and in barrels (their re-exports)', () => {
    const { route, covered } = recording.call;
    expect(route.filter((file) => !covered.includes(file))).toEqual([]);
    // An index.ts of only `export ... from` has no function of its own; its compiled re-export getters run.
    const others = covered.filter((file) => !route.includes(file));
    expect(others.filter((file) => !isBarrel(file))).toEqual([]);
  });

  // Against the list that matches what ran (so they hold whether §0 is up to date or not).
  describe('negative controls', () => {
    const asRan = (): ListedStep[] => recording.call.route.map((file) => ({ file, does: 'does' }));

    it('the list of what ran matches; with two files swapped, or one left out, it does not', () => {
      const matching = asRan();
      expect(routeMismatch(matching, recording.call)).toBeUndefined();
      const swapped = asRan();
      [swapped[3], swapped[4]] = [swapped[4], swapped[3]];
      expect(routeMismatch(swapped, recording.call)).toContain(
        `First difference at item 4: listed ${matching[4].file}, ran ${matching[3].file}.`,
      );
      const shorter = matching.filter((_, i) => i !== 10);
      expect(routeMismatch(shorter, recording.call)).toContain(`Run, not listed: ${matching[10].file}\n`);
    });

    it('a call whose body also runs code of lib/core/errors.ts does not match the list of what ran', () => {
      const { planted, call } = recording;
      expect(planted.value).toBe('paid 42');
      expect(planted.route.filter((file) => file !== 'lib/core/errors.ts')).toEqual(call.route);
      const mismatch = routeMismatch(asRan(), planted);
      expect(mismatch).toContain('Run, not listed: lib/core/errors.ts\n');
      expect(mismatch).toContain('. `lib/core/errors.ts` — TODO: what it does in the call');
    });
  });
});

/** An index.ts whose every statement re-exports from another module. */
function isBarrel(file: string): boolean {
  if (path.basename(file) !== 'index.ts') return false;
  const source = fs.readFileSync(path.join(REPO, file), 'utf8');
  const parsed = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022);
  return parsed.statements.every(
    (statement) => ts.isExportDeclaration(statement) && statement.moduleSpecifier,
  );
}
