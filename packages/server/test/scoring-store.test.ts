// ScoringStore on SQLite and PostgreSQL (store/scoring-store.ts): each batch
// goes to one claim, a claim older than the reclaim time is handed out again,
// the first answer wins, a stopped job's open batches are dropped, and a pause
// for the scorer is asked only of a running job.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { openDatabase } from "../src/db/connect.js";
import { nowIso, uuidv7 } from "../src/ids.js";
import { ScoringStore } from "../src/store/scoring-store.js";
import { Store } from "../src/store/store.js";
import { type Backend, createPgDatabase, tempDir } from "./harness.js";

const ITEM = { rowNumber: 1, row: { messages: [] }, messages: [], prompt: "", completion: "x" };

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`scoring store (${backend})`, () => {
    let store: Store;
    let scoring: ScoringStore;
    let cleanup: () => Promise<void>;
    before(async () => {
      const dir = tempDir("scoring-store");
      const pg = backend === "postgres" ? await createPgDatabase() : null;
      store = new Store(await openDatabase({ databaseUrl: pg?.url, sqlitePath: join(dir, "svc.db") }));
      scoring = new ScoringStore(store.db);
      cleanup = async () => {
        await store.close();
        await pg?.drop();
        rmSync(dir, { recursive: true, force: true });
      };
    });
    after(() => cleanup?.());

    /** A running job to hang batches on (the table's foreign key). */
    async function job(): Promise<string> {
      const now = nowIso();
      const org = { id: uuidv7(), slug: `o-${uuidv7()}`, name: "o", created_at: now };
      await store.db.insertInto("orgs").values(org).execute();
      const project = { id: uuidv7(), org_id: org.id, slug: "p", name: "p", created_at: now };
      await store.db.insertInto("projects").values(project).execute();
      const dataset = uuidv7();
      await store.datasets.insert({
        id: dataset,
        project_id: project.id,
        name: "d.jsonl",
        rows: 1,
        bytes: 1,
        path: `datasets/${dataset}.jsonl`,
        created_at: now,
      });
      const id = uuidv7();
      await store.jobs.insert({
        id,
        project_id: project.id,
        name: "j",
        status: "running",
        base_model: "m",
        base_model_revision: null,
        dataset_id: dataset,
        eval_dataset_id: null,
        eval_fraction: null,
        hyperparameters: JSON.stringify({ rewards: [{ name: "r" }] }),
        dry_run: 0,
        error: null,
        created_at: now,
        started_at: now,
        finished_at: null,
        cancel_requested: 0,
        lease_owner: "w",
        lease_expires_at: null,
        resume_from: null,
        attempts: 1,
        backend: "engine",
      });
      return id;
    }

    test("one claim per batch, handed out again once its claim is stale; the first answer wins", async () => {
      const jobId = await job();
      const first = await scoring.create(jobId, 1, ["r"], [ITEM]);
      const second = await scoring.create(jobId, 2, ["r"], [ITEM, ITEM]);
      assert.equal((await scoring.claim(jobId, 60_000))?.id, first, "the oldest first");
      assert.equal((await scoring.claim(jobId, 60_000))?.id, second);
      assert.equal(await scoring.claim(jobId, 60_000), null, "both are claimed");
      await new Promise((r) => setTimeout(r, 30));
      assert.equal((await scoring.claim(jobId, 10))?.id, first, "a stale claim is handed out again");
      assert.equal(await scoring.answer(first, { rewards: [[1]] }), true);
      assert.equal(await scoring.answer(first, { error: "late" }), false, "answered once");
      const stored = await scoring.get(first);
      assert.equal(stored?.rewards, "[[1]]");
      assert.equal(stored?.error, null);
      await new Promise((r) => setTimeout(r, 30));
      assert.equal((await scoring.claim(jobId, 10))?.id, second, "an answered batch is never handed out");
    });

    test("a stopped job's open batches are dropped; a pause for the scorer is asked of a running job only", async () => {
      const jobId = await job();
      const open = await scoring.create(jobId, 1, ["r"], [ITEM]);
      const done = await scoring.create(jobId, 2, ["r"], [ITEM]);
      await scoring.answer(done, { error: "boom" });
      await scoring.abandon(jobId);
      assert.equal(await scoring.get(open), undefined);
      assert.equal((await scoring.get(done))?.error, "boom");
      assert.equal(await scoring.scorerSeenAt(jobId), null);
      await scoring.seen(jobId);
      assert.ok(await scoring.scorerSeenAt(jobId));
      await scoring.requestPause(jobId, "scorer_gone");
      let row = await store.jobs.get(jobId);
      assert.equal(row?.pause_requested, 1);
      assert.equal(row?.paused_reason, "scorer_gone");
      const other = await job();
      await store.db.updateTable("jobs").set({ status: "queued" }).where("id", "=", other).execute();
      await scoring.requestPause(other, "scorer_gone");
      row = await store.jobs.get(other);
      assert.equal(row?.pause_requested, 0);
      assert.equal(row?.paused_reason, null);
    });
  });
}
