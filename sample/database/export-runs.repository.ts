import { Injectable } from '@nestjs/common';
import type { Statement } from 'better-sqlite3';
import { SampleDatabase } from './sample-database';

export interface ExportRun {
  readonly instance: string;
  readonly permit: number;
  readonly started: number;
  readonly ended: number | null;
}

/** The `export_runs` table: one row per export, on whichever instance ran it, from start to end. */
@Injectable()
export class ExportRunsRepository {
  private readonly insert: Statement;
  private readonly finish: Statement;
  private readonly since: Statement;

  constructor(database: SampleDatabase) {
    const db = database.connection;
    this.insert = db.prepare('INSERT INTO export_runs (instance, permit, started) VALUES (?, ?, ?)');
    this.finish = db.prepare('UPDATE export_runs SET ended = ? WHERE id = ?');
    this.since = db.prepare(
      'SELECT instance, permit, started, ended FROM export_runs WHERE started >= ? ORDER BY started',
    );
  }

  /** Records an export as started now; returns its row id for {@link end}. */
  start(instance: string, permit: number): number {
    return Number(
      this.insert.run(instance, permit, performance.timeOrigin + performance.now()).lastInsertRowid,
    );
  }

  end(id: number): void {
    this.finish.run(performance.timeOrigin + performance.now(), id);
  }

  /** The exports that started at or after `from` (epoch ms). */
  runsSince(from: number): ExportRun[] {
    return this.since.all(from) as ExportRun[];
  }
}
