/**
 * Run or replay simulations by hand:
 *
 *   npx ts-node --transpile-only test/safety/sim/cli.ts run [profile] [count] [baseSeed]
 *   npx ts-node --transpile-only test/safety/sim/cli.ts replay <seed> [profile]
 *
 * `replay` prints the schedule's configuration, its full event trace and what the oracles found.
 */
import { PROFILES, Profile } from './config';
import { runParallel } from './parallel';
import { formatSummary, runOne } from './runner';
import { World } from './world';

async function main(args: string[]): Promise<void> {
  const [command, ...rest] = args;
  if (command === 'run') {
    const profile = profileArg(rest[0] ?? 'safe');
    const count = Number(rest[1] ?? 10_000);
    const baseSeed = rest[2] !== undefined ? Number(rest[2]) : Date.now() >>> 0;
    const threads = process.env.SIM_THREADS ? Number(process.env.SIM_THREADS) : undefined;
    const summary = await runParallel({ profile, count, baseSeed, keepFailures: 3, threads });
    console.log(formatSummary(summary));
    for (const failure of summary.failures) {
      console.log(`seed ${failure.seed}:\n  ${failure.findings.join('\n  ')}`);
    }
    for (const example of summary.uncoveredExamples) {
      console.log(
        `seed ${example.seed} (uncovered: no earlier sample):\n  ${example.uncovered.join('\n  ')}`,
      );
    }
    return;
  }
  if (command === 'replay') {
    const seed = Number(rest[0]);
    const profile = profileArg(rest[1] ?? 'safe');
    console.log(JSON.stringify(new World(seed, profile).config, null, 1));
    const { result, trace } = await runOne(seed, profile);
    console.log(trace.join('\n'));
    console.log(result.findings.length > 0 ? result.findings.join('\n') : 'no findings');
    if (result.uncovered.length > 0)
      console.log(`uncovered (no earlier sample):\n${result.uncovered.join('\n')}`);
    return;
  }
  throw new Error('usage: cli.ts run [profile] [count] [baseSeed] | replay <seed> [profile]');
}

function profileArg(value: string): Profile {
  if (!(PROFILES as readonly string[]).includes(value))
    throw new Error(`profile must be one of ${PROFILES.join(', ')}`);
  return value as Profile;
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
