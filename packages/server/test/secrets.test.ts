// Tokens and deployment keys are stored only as SHA-256 hashes: the plaintext
// appears nowhere in the database file.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import { call, newIdentity, startServerProcess, TINY_MODEL, tempDir } from "./harness.js";

it("keeps only hashes of bearer tokens and deployment keys", async () => {
  const dataDir = tempDir("secrets");
  const server = await startServerProcess({ dataDir });
  try {
    const id = await newIdentity(server.apiUrl);
    const created = await call(server.apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
      token: id.token,
      json: { slug: `secret-${process.pid}`, target: { kind: "base_model", baseModel: TINY_MODEL } },
    });
    const key = (
      await call(server.apiUrl, "POST", `/v1/endpoints/${created.body.deployment.id}/keys`, {
        token: id.token,
        json: { label: "k" },
      })
    ).body.key;
    assert.equal(await server.stop(), 0);

    const files = ["svc.db", "svc.db-wal"].map((f) => {
      try {
        return readFileSync(join(dataDir, f));
      } catch {
        return Buffer.alloc(0);
      }
    });
    for (const secret of [id.token, key.plaintext]) {
      for (const bytes of files)
        assert.equal(bytes.indexOf(secret), -1, "plaintext found in the database file");
    }
    const db = new BetterSqlite3(join(dataDir, "svc.db"), { readonly: true });
    const sha = (s: string) => createHash("sha256").update(s).digest("hex");
    assert.ok(db.prepare("SELECT 1 FROM tokens WHERE token_hash = ?").get(sha(id.token)));
    const row = db.prepare("SELECT prefix, key_hash FROM deployment_keys").get() as {
      prefix: string;
      key_hash: string;
    };
    assert.deepEqual(row, { prefix: key.plaintext.slice(0, 12), key_hash: sha(key.plaintext) });
    db.close();
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
