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
  if (seen.length > 0) {
    const reasons = seen.splice(0).map((r) => (r instanceof Error ? (r.stack ?? r.message) : String(r)));
    throw new Error(`unhandled promise rejection(s) during this test:\n${reasons.join('\n---\n')}`);
  }
});

afterAll(() => {
  process.off('unhandledRejection', onRejection);
});
