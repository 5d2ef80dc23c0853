import type { Config } from '@jest/types';
import { EXTRAS, Extra, ensureExtras } from '../../scripts/extras';
import announceDuration from './announce-duration';

/**
 * Jest globalSetup: installs bench/ and sample/ when their node_modules is missing or stale (the benchmark
 * smoke test and the sample's tests import them; scripts/extras.ts, one line when it does), so `npm test` and
 * `npx jest` work on a fresh clone; then says how long the run takes.
 */
export default function globalSetup(globalConfig: Config.GlobalConfig): void {
  // .ci/run builds sample/'s native module while the other files run: it says so, and that run leaves it be.
  const skip = (process.env.REDLOCK_EXTRAS_SKIP ?? '').split(',');
  ensureExtras((Object.keys(EXTRAS) as Extra[]).filter((extra) => !skip.includes(extra)));
  announceDuration(globalConfig);
}
