// DatasetProfileStore on SQLite and PostgreSQL: one claim per (dataset, base
// model), leases renewed by their owner only, a lapsed or released claim taken
// over, the outcome stored once.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { openDatabase } from "../src/db/connect.js";
import { nowIso, uuidv7 } from "../src/ids.js";
import { Store } from "../src/store/store.js";
import { type Backend, createPgDatabase, tempDir } from "./harness.js";

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`dataset profile store (${backend})`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    before(async () => {
      const dir = tempDir("profile-store");
      const pg = backend === "postgres" ? await createPgDatabase() : null;
      store = new Store(await openDatabase({ databaseUrl: pg?.url, sqlitePath: join(dir, "svc.db") }));
      cleanup = async () => {
        await store.close();
        await pg?.drop();
        rmSync(dir, { recursive: true, force: true });
      };
    });
    after(() => cleanup?.());

    /** A dataset row to hang profiles on (the table's foreign key). */
    async function dataset(): Promise<string> {
      const now = nowIso();
      const org = { id: uuidv7(), slug: `o-${uuidv7()}`, name: "o", created_at: now };
      await store.db.insertInto("orgs").values(org).execute();
      const project = { id: uuidv7(), org_id: org.id, slug: "p", name: "p", created_at: now };
      await store.db.insertInto("projects").values(project).execute();
      const id = uuidv7();
      await store.datasets.insert({
        id,
        project_id: project.id,
        name: "d.jsonl",
        rows: 1,
        bytes: 1,
        path: `datasets/${id}.jsonl`,
        created_at: now,
      });
      return id;
    }

    test("the first claim wins; the owner renews it and stores the profile once", async () => {
      const profiles = store.datasetProfiles;
      const id = await dataset();
      assert.equal(await profiles.claim(id, "m/a", "one", 60_000), true);
      assert.equal(await profiles.claim(id, "m/a", "two", 60_000), false, "held by one");
      assert.equal(await profiles.claim(id, "m/b", "two", 60_000), true, "another model is another profile");
      assert.equal(await profiles.heartbeat(id, "m/a", "two", 60_000, 0.5), false);
      assert.equal(await profiles.heartbeat(id, "m/a", "one", 60_000, 0.5), true);
      assert.equal((await profiles.get(id, "m/a"))?.progress, 0.5);
      await profiles.finish(id, "m/a", "two", { error: "not the owner" });
      assert.equal((await profiles.get(id, "m/a"))?.status, "pending");
      await profiles.finish(id, "m/a", "one", { profile: '{"rows":1}' });
      const done = await profiles.get(id, "m/a");
      assert.equal(done?.status, "ready");
      assert.equal(done?.profile, '{"rows":1}');
      assert.equal(done?.lease_owner, null);
      assert.equal(await profiles.claim(id, "m/a", "two", 60_000), false, "a finished profile is kept");
      assert.equal(await profiles.heartbeat(id, "m/a", "one", 60_000, 1), false);
    });

    test("a lapsed lease or a released claim is taken over; a failure is stored", async () => {
      const profiles = store.datasetProfiles;
      const id = await dataset();
      assert.equal(await profiles.claim(id, "m/a", "dead", 1), true);
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(await profiles.claim(id, "m/a", "alive", 60_000), true, "the lease lapsed");
      assert.equal(await profiles.heartbeat(id, "m/a", "dead", 60_000, 0.1), false, "the old owner lost it");
      await profiles.release("alive");
      assert.equal(await profiles.claim(id, "m/a", "next", 60_000), true, "released at once");
      await profiles.finish(id, "m/a", "next", { error: "row 3: the chat template failed" });
      const failed = await profiles.get(id, "m/a");
      assert.equal(failed?.status, "failed");
      assert.equal(failed?.error, "row 3: the chat template failed");
      assert.equal(failed?.profile, null);
    });
  });
}
