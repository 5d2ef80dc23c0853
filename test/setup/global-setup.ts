import type { Config } from '@jest/types';
import { ensureExtras } from '../../scripts/extras';
import announceDuration from './announce-duration';

/**
 * Jest globalSetup: installs bench/ and sample/ when their node_modules is missing or stale (the benchmark
 * smoke test and the sample's tests import them; scripts/extras.ts, one line when it does), so `npm test` and
 * `npx jest` work on a fresh clone; then says how long the run takes.
 */
export default function globalSetup(globalConfig: Config.GlobalConfig): void {
  ensureExtras();
  announceDuration(globalConfig);
}
