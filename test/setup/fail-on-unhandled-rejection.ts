/**
 * Any unhandled promise rejection during a test fails that test: the library promises never to cause one,
 * and a listener here also stops Node from silently crashing the worker instead.
 */
const seen: unknown[] = [];
const onRejection = (reason: unknown): void => {
  seen.push(reason);
};

beforeAll(() => {
  process.on('unhandledRejection', onRejection);
});

afterEach(async () => {
  // Let rejections from the test's last ticks surface before we look.
  await new Promise((resolve) => setImmediate(resolve));
  const error = collected('during this test');
  if (error) throw error;
});

/** Rejections seen since the last test, as one error (undefined: none). */
function collected(when: string): Error | undefined {
  if (seen.length === 0) return undefined;
  const reasons = seen.splice(0).map((r) => (r instanceof Error ? (r.stack ?? r.message) : String(r)));
  return new Error(`unhandled promise rejection(s) ${when}:\n${reasons.join('\n---\n')}`);
}

// Runs after the afterAll hooks of the file's describe blocks: a rejection during their clean-up (closing
// nodes, quitting clients) fails the file too, instead of being swallowed here. One that comes later still,
// with no listener left, makes Node fail the run.
afterAll(async () => {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 0));
  process.off('unhandledRejection', onRejection);
  const error = collected('during afterAll (clean-up after the last test)');
  if (error) throw error;
});
