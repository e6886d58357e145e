import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import { sql } from "kysely";
import { openDatabase } from "./connect.js";

test("a SQLite transaction holds the write lock from its start, so another process's commit cannot make it fail midway", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "svc-connect-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "svc.db");
  const opened = await openDatabase({ sqlitePath: path });
  // Another process's connection (its own file handle and locks), not waiting for the lock.
  const other = new BetterSqlite3(path);
  other.pragma("busy_timeout = 0");
  const write = (owner: string) =>
    other
      .prepare(
        "insert into workers (owner, backend, device, free_slots, seen_at) values (?, 'engine', 'cpu', 1, 'now')",
      )
      .run(owner);
  try {
    await opened.db.transaction().execute(async (trx) => {
      // Read first, then write, as appending an event does (max(seq), then insert).
      await sql`select count(*) from workers`.execute(trx);
      // With a plain BEGIN the other connection's write would commit here, and
      // the insert below would fail at once with SQLITE_BUSY (a stale snapshot).
      assert.throws(() => write("other-1"), /database is locked/);
      await trx
        .insertInto("workers")
        .values({ owner: "mine", backend: "engine", device: "cpu", free_slots: 1, seen_at: "now" })
        .execute();
    });
    write("other-2");
    const owners = other.prepare("select owner from workers order by owner").all() as { owner: string }[];
    assert.deepEqual(
      owners.map((r) => r.owner),
      ["mine", "other-2"],
    );
  } finally {
    other.close();
    await opened.db.destroy();
  }
});
