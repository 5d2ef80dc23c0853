import { Injectable } from '@nestjs/common';
import type { Statement } from 'better-sqlite3';
import { SampleDatabase } from './sample-database';

export interface ReportRun {
  /** The second (Unix time) the run was for. */
  readonly tick: number;
  readonly instance: string;
}

/** The `report_runs` table: one row per run of the report job, on whichever instance ran it. */
@Injectable()
export class ReportRunsRepository {
  private readonly insert: Statement;
  private readonly between: Statement;

  constructor(database: SampleDatabase) {
    const db = database.connection;
    this.insert = db.prepare('INSERT INTO report_runs (tick, instance, at) VALUES (?, ?, ?)');
    this.between = db.prepare(
      'SELECT tick, instance FROM report_runs WHERE tick BETWEEN ? AND ? ORDER BY tick, id',
    );
  }

  record(tick: number, instance: string): void {
    this.insert.run(tick, instance, Date.now());
  }

  /** The runs for the ticks `from`..`to` (inclusive), in tick order. */
  runsBetween(from: number, to: number): ReportRun[] {
    return this.between.all(from, to) as ReportRun[];
  }
}
