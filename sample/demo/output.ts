/**
 * What the demo prints. On a terminal: a redrawn progress bar and coloured marks; anywhere else (a pipe,
 * CI, a file) plain lines only — no escape codes. `NO_COLOR` turns colour off on a terminal too.
 */
const tty = Boolean(process.stdout.isTTY);
const colour = tty && !process.env.NO_COLOR;

const paint = (code: string) => (text: string) => (colour ? `\x1b[${code}m${text}\x1b[0m` : text);
export const bold = paint('1');
export const dim = paint('2');
export const green = paint('32');
export const red = paint('31');

export const PASS = green('✓');
export const FAIL = red('✗');

export function line(text = ''): void {
  process.stdout.write(text + '\n');
}

/** A progress bar on a terminal; silent otherwise (the step's summary line says how it ended). */
export class Progress {
  private lastDraw = 0;
  private drawn = false;

  constructor(
    private readonly total: number,
    private readonly width = 30,
  ) {}

  update(done: number, note = ''): void {
    if (!tty) return;
    const now = Date.now();
    if (done < this.total && now - this.lastDraw < 50) return;
    this.lastDraw = now;
    const filled = Math.round((Math.min(done, this.total) / this.total) * this.width);
    const bar = '█'.repeat(filled) + '░'.repeat(this.width - filled);
    const count = `${done}/${this.total}`.padStart(String(this.total).length * 2 + 1);
    process.stdout.write(`\r  ${bar} ${count}  ${note}\x1b[K`);
    this.drawn = true;
  }

  /** Clears the bar so the summary line takes its place. */
  end(): void {
    if (this.drawn) process.stdout.write('\r\x1b[K');
    this.drawn = false;
  }
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
