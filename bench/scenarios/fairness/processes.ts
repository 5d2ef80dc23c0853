import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';
import {
  Attempt,
  ChildResult,
  ERROR_MARKER,
  FairnessJob,
  GO_PREFIX,
  READY_MARKER,
  RESULT_MARKER,
  sharedClock,
} from './protocol';

const REPO = path.resolve(__dirname, '..', '..', '..');

/** Between the start line and the start: time for every child to read it. */
const START_MARGIN_MS = 100;

/** worker.ts and what it imports, transpiled once per process into a temporary folder (as isolated.ts does). */
let built: { file: string; nodePath: string } | undefined;

function childEntry(): { file: string; nodePath: string } {
  if (built) return built;
  // Loaded here, not at the top: the child imports protocol.ts only, but keep the compiler out of its way.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { transpileTree } =
    require('../../../test/support/transpile-tree') as typeof import('../../../test/support/transpile-tree');
  const build = transpileTree(path.join(__dirname, 'worker.ts'), 'bench-fairness');
  const nodePath = [path.join(REPO, 'bench', 'node_modules'), build.nodePath, process.env.NODE_PATH]
    .filter((dir): dir is string => !!dir)
    .join(path.delimiter);
  process.once('exit', () => build.dispose());
  built = { file: build.entry, nodePath };
  return built;
}

export interface ProcessesResult {
  readonly attempts: Attempt[];
  readonly startAt: number;
  readonly endAt: number;
  /** The latest any child began after the start time (ms). */
  readonly lateMs: number;
  /** From starting the processes until every one was connected (ms). */
  readonly readyMs: number;
  /** From the end until every process had finished its last call and exited (ms). */
  readonly drainMs: number;
}

interface Child {
  readonly process: ChildProcess;
  ready: Promise<void>;
  done: Promise<ChildResult>;
}

/** Starts one child; `ready` resolves at its ready line, `done` at its result (rejects with its reason). */
function startChild(
  entry: { file: string; nodePath: string },
  job: FairnessJob,
  log: (message: string) => void,
): Child {
  const child = spawn(process.execPath, [entry.file, JSON.stringify(job)], {
    // stdin stays open: the start line goes through it, and the child exits when it closes.
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NODE_PATH: entry.nodePath },
  });
  let failure: string | undefined;
  let lastError: string | undefined;
  let result: ChildResult | undefined;
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line === READY_MARKER) onReady();
    else if (line.startsWith(RESULT_MARKER))
      result = JSON.parse(line.slice(RESULT_MARKER.length)) as ChildResult;
    else if (line.startsWith(ERROR_MARKER)) failure = line.slice(ERROR_MARKER.length);
    else log(line);
  });
  readline.createInterface({ input: child.stderr! }).on('line', (line) => {
    log(line);
    if (line.trim() && !/^\s+at /.test(line)) lastError = line.trim();
  });
  const done = new Promise<ChildResult>((resolve, reject) => {
    child.once('error', (error) =>
      reject(new Error(`process ${job.process} could not start: ${error.message}`)),
    );
    child.once('close', (code, signal) => {
      child.stdin?.destroy();
      if (result) return resolve(result);
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const said = failure ?? lastError;
      reject(new Error(`process ${job.process} ${how} without a result${said ? `: ${said}` : ''}`));
    });
  });
  // A child that ends before its ready line: `ready` settles through `done`.
  return { process: child, ready: Promise.race([ready, done.then(() => undefined)]), done };
}

/**
 * Runs one child process per job, all on the same resource: once every child is connected, tells them all
 * the same start and end on the shared clock, and gathers every attempt. If a child fails or the whole takes
 * longer than `timeoutMs`, every child is killed and this rejects with the reason.
 */
export async function runProcesses(
  jobs: readonly FairnessJob[],
  durationMs: number,
  log: (message: string) => void,
  timeoutMs: number,
): Promise<ProcessesResult> {
  // Transpiled before the clock starts: the first pass of a run pays it, not its figures.
  const entry = childEntry();
  const spawnedAt = sharedClock();
  const children = jobs.map((job) => startChild(entry, job, log));
  const killAll = () => children.forEach((child) => child.process.kill('SIGKILL'));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not finish within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    await Promise.race([Promise.all(children.map((child) => child.ready)), timeout]);
    const readyMs = sharedClock() - spawnedAt;
    const startAt = sharedClock() + START_MARGIN_MS;
    const endAt = startAt + durationMs;
    for (const child of children) child.process.stdin!.write(`${GO_PREFIX}${startAt} ${endAt}\n`);
    const results = await Promise.race([Promise.all(children.map((child) => child.done)), timeout]);
    return {
      attempts: results.flatMap((result) => result.attempts),
      startAt,
      endAt,
      lateMs: Math.max(...results.map((result) => result.lateMs)),
      readyMs,
      drainMs: sharedClock() - endAt,
    };
  } catch (error) {
    killAll();
    // Let every child's close settle (no unhandled rejections left behind).
    await Promise.allSettled(children.map((child) => child.done));
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
