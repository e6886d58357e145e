// Opens the database (SQLite file by default, PostgreSQL for a postgres:// URL)
// and brings its schema up to date.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { migrationProvider } from "./migrations.js";
import type { Database } from "./schema.js";

export type DatabaseKind = "sqlite" | "postgres";

export interface OpenedDatabase {
  db: Kysely<Database>;
  kind: DatabaseKind;
  /** Where it lives, without credentials (for the startup line). */
  location: string;
  /** PostgreSQL only: the connection string (LISTEN/NOTIFY opens its own client). */
  url: string | null;
}

export async function openDatabase(options: {
  databaseUrl?: string | null;
  sqlitePath: string;
}): Promise<OpenedDatabase> {
  let opened: OpenedDatabase;
  if (options.databaseUrl) {
    const url = options.databaseUrl;
    if (!/^postgres(ql)?:\/\//.test(url))
      throw new Error(`--database-url must be a postgres:// URL (got ${url})`);
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    const parsed = new URL(url);
    opened = {
      db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }),
      kind: "postgres",
      location: `postgres://${parsed.host}${parsed.pathname}`,
      url,
    };
  } else {
    mkdirSync(dirname(options.sqlitePath), { recursive: true });
    const sqlite = new BetterSqlite3(options.sqlitePath);
    sqlite.pragma("journal_mode = WAL");
    sqlite.pragma("busy_timeout = 5000");
    sqlite.pragma("foreign_keys = ON");
    opened = {
      db: new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) }),
      kind: "sqlite",
      location: options.sqlitePath,
      url: null,
    };
  }
  const migrator = new Migrator({ db: opened.db, provider: migrationProvider });
  const { error } = await migrator.migrateToLatest();
  if (error) {
    await opened.db.destroy();
    throw error instanceof Error ? error : new Error(String(error));
  }
  return opened;
}
