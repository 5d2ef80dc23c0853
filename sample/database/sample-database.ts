import type { OnApplicationShutdown, Provider } from '@nestjs/common';
import Database from 'better-sqlite3';
import { SAMPLE_CONFIG, SampleConfig } from '../sample.config';

/**
 * The one SQLite file every instance shares. WAL lets readers run beside the single writer, and
 * `busy_timeout` makes a writer wait for another process's transaction instead of failing at once.
 */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS stock (
    sku        TEXT PRIMARY KEY,
    qty        INTEGER NOT NULL,
    last_token INTEGER NOT NULL DEFAULT 0  -- the largest fencing token that has written this row
  );
  CREATE TABLE IF NOT EXISTS sales (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    sku      TEXT    NOT NULL,
    instance TEXT    NOT NULL,
    token    INTEGER,                      -- NULL when the purchase ran without the lock
    at       INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS sales_by_sku ON sales (sku);
  CREATE TABLE IF NOT EXISTS report_runs (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    tick     INTEGER NOT NULL,             -- the second (Unix time) the run was for
    instance TEXT    NOT NULL,
    at       INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS report_runs_by_tick ON report_runs (tick);
  CREATE TABLE IF NOT EXISTS export_runs (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    instance TEXT    NOT NULL,
    permit   INTEGER NOT NULL,
    started  REAL    NOT NULL,             -- epoch ms, when the export began (it holds a permit)
    ended    REAL                          -- NULL while it runs
  );
`;

/** A better-sqlite3 connection to the shared file, with the schema in place. */
export class SampleDatabase implements OnApplicationShutdown {
  private constructor(readonly connection: Database.Database) {}

  static open(file: string): SampleDatabase {
    const connection = new Database(file);
    try {
      connection.pragma('busy_timeout = 10000');
      connection.pragma('journal_mode = WAL');
      connection.pragma('synchronous = NORMAL');
      connection.exec(SCHEMA);
    } catch (error) {
      connection.close();
      throw error;
    }
    return new SampleDatabase(connection);
  }

  close(): void {
    if (this.connection.open) this.connection.close();
  }

  onApplicationShutdown(): void {
    this.close();
  }
}

export const sampleDatabaseProvider: Provider = {
  provide: SampleDatabase,
  inject: [SAMPLE_CONFIG],
  useFactory: (config: SampleConfig) => SampleDatabase.open(config.dbFile),
};
