/**
 * A line on stderr every 15 s while a long test file runs — `chaos 45 s: main run (20 s), 412 sections so far`
 * — so a quiet minute is not taken for a hang. Written to process.stderr directly: Jest holds console.log output
 * back until the file has finished. Reports only; it changes nothing a test does or asserts.
 */
export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private startedAt = 0;
  private label = 'start-up';
  private labelAt = 0;
  private detail: (() => string) | undefined;

  constructor(
    private readonly suite: string,
    private readonly everyMs = 15_000,
    private readonly write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  ) {}

  /** Starts the clock and the periodic line. */
  start(): void {
    this.startedAt = this.labelAt = Date.now();
    this.timer = setInterval(() => this.write(this.line()), this.everyMs);
    this.timer.unref();
  }

  /** Names what runs from now on (a phase, a run, an observation); `detail` adds a figure to its lines. */
  phase(label: string, detail?: () => string): void {
    this.label = label;
    this.labelAt = Date.now();
    this.detail = detail;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The line printed now. */
  line(now = Date.now()): string {
    const seconds = (since: number) => Math.round((now - since) / 1000);
    const detail = this.detail ? `, ${this.detail()}` : '';
    return `${this.suite} ${seconds(this.startedAt)} s: ${this.label} (${seconds(this.labelAt)} s)${detail}`;
  }
}

/**
 * A Progress for the test file that calls it first in its describe block: started before the other beforeAll
 * hooks, stopped after the tests.
 */
export function reportProgress(suite: string): Progress {
  const progress = new Progress(suite);
  beforeAll(() => progress.start());
  afterAll(() => progress.stop());
  return progress;
}
