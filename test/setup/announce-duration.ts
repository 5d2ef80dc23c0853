import type { Config } from '@jest/types';

/**
 * Part of Jest's globalSetup (global-setup.ts): says up front how long the whole `npm test` takes, so a
 * quiet minute is not mistaken for a hang. On stderr, beside Jest's own progress (stdout may carry
 * `--json`). Silent when only some files or tests were asked for (`npx jest test/core/...`, `-t ...`).
 */
const EXPECTED =
  'npm test: about 4 minutes on a 2-core machine (two files at a time; about 5 under load); the simulation ' +
  'and the chaos suite take a minute or more each (a progress line every 15 s) and report when they finish.';

export default function announceDuration(globalConfig: Config.GlobalConfig): void {
  const selected = globalConfig.testPathPattern !== '' || globalConfig.testNamePattern !== undefined;
  if (!selected) process.stderr.write(`\n${EXPECTED}\n\n`);
}
