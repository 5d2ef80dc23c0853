import type { RedisNodes } from '../../test/support';
import type { ReportRunsRepository } from '../database/report-runs.repository';
import type { StockRepository } from '../database/stock.repository';
import type { SampleFleet } from './fleet';
import type { HttpClient } from './http';

/** What every step works with. */
export interface DemoContext {
  readonly nodes: RedisNodes;
  readonly fleet: SampleFleet;
  /** The demo's own connection to the shared database: it stocks SKUs and checks the outcome there. */
  readonly stock: StockRepository;
  readonly runs: ReportRunsRepository;
  readonly http: HttpClient;
}

/** How a step ended: a one-line summary, and the reason when it did not show what it should. */
export interface StepResult {
  readonly ok: boolean;
  readonly summary: string;
  readonly reason?: string;
}

/** Units in stock at the start of each purchase step. */
export const STOCK = 10;
