// The tests' throwaway PostgreSQL (postgres-cluster.ts): its own port, not the
// machine's cluster, and nothing left behind however its starter ends; a
// folder whose guard itself was killed goes when the next cluster starts.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startPostgresCluster } from "./postgres-cluster.js";

const CLUSTER_JS = fileURLToPath(new URL("./postgres-cluster.js", import.meta.url));

/** The cluster's folder (the parent of its data directory) and its port. */
async function describeCluster(url: string): Promise<{ folder: string; port: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query(
    "SELECT current_setting('data_directory') AS data, inet_server_port() AS port",
  );
  await client.end();
  return { folder: dirname(rows[0].data), port: rows[0].port };
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("a throwaway cluster listens on a port of its own, and stop() removes it with its folder", async () => {
  const cluster = await startPostgresCluster();
  const { folder, port } = await describeCluster(cluster.url);
  assert.notEqual(port, 5432);
  assert.match(folder, /svc-pg-/);
  assert.ok(existsSync(folder));
  await cluster.stop();
  assert.ok(!existsSync(folder), `${folder} removed`);
  await assert.rejects(describeCluster(cluster.url));
});

test("a starter killed with kill -9 leaves no server and no folder behind", async () => {
  const starter = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { startPostgresCluster } = await import(${JSON.stringify(CLUSTER_JS)});
       const c = await startPostgresCluster();
       console.log(c.url);
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  starter.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
  await until("the starter printed its cluster's URL", () => out.includes("\n"), 60_000);
  const url = out.trim();
  const { folder } = await describeCluster(url);
  starter.kill("SIGKILL");
  await until(`${folder} removed after kill -9 of its starter`, () => !existsSync(folder));
  await assert.rejects(describeCluster(url));
});

test("a folder whose guard died without cleaning up is removed when the next cluster starts", async () => {
  const abandoned = mkdtempSync(join(tmpdir(), "svc-pg-"));
  mkdirSync(join(abandoned, "data"));
  const deadPid = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], {
    encoding: "utf8",
  }).stdout.trim();
  writeFileSync(join(abandoned, "guard.pid"), deadPid);
  const cluster = await startPostgresCluster();
  try {
    assert.ok(!existsSync(abandoned), `${abandoned} removed`);
  } finally {
    await cluster.stop();
  }
});
