// Opens the database (SQLite file by default, PostgreSQL for a postgres:// URL)
// and brings its schema up to date. Several processes may share the SQLite
// file (`svc server` and `svc worker --backend torch` on one machine): WAL mode
// lets them read while one writes, busy_timeout makes a writer wait its turn,
// and transactions take the write lock when they begin (BEGIN IMMEDIATE), since
// one that read first and then writes after another process committed would
// fail at once with SQLITE_BUSY instead of waiting.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from "kysely";
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
  /** SQLite only: the file's connection (db/sqlite-changes.ts reads what other processes committed). */
  sqlite: BetterSqlite3.Database | null;
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

/** SQLite whose transactions begin with the write lock (see the top of this file). */
class SharedSqliteDialect extends SqliteDialect {
  constructor(private readonly sqliteConfig: SqliteDialectConfig) {
    super(sqliteConfig);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.sqliteConfig);
  }
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
      sqlite: null,
    };
  } else {
    mkdirSync(dirname(options.sqlitePath), { recursive: true });
    const sqlite = new BetterSqlite3(options.sqlitePath);
    sqlite.pragma("journal_mode = WAL");
    sqlite.pragma("busy_timeout = 5000");
    sqlite.pragma("foreign_keys = ON");
    opened = {
      db: new Kysely<Database>({ dialect: new SharedSqliteDialect({ database: sqlite }) }),
      kind: "sqlite",
      location: options.sqlitePath,
      url: null,
      sqlite,
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
