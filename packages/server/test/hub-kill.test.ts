// A Hub download killed halfway resumes: `svc server` is killed (-9) while a
// job's base model downloads, a new server on the same data directory and
// Hugging Face cache runs the job again, and the weights continue from the
// partial blob with a Range request instead of starting over.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  call,
  eventsUntilEnd,
  newIdentity,
  type ServerProcess,
  startServerProcess,
  tempDir,
  until,
  uploadDataset,
} from "./harness.js";
import { qwen3Repo } from "./hub-repos.js";
import { TestHub } from "./hub-server.js";

const QWEN = "test-org/qwen3-tiny";

describe("a Hub download killed halfway", () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it("resumes from the partial blob when the restarted server runs the job again", async () => {
    const hub = await TestHub.start();
    cleanup.push(() => hub.close());
    const repo = qwen3Repo(join(tempDir("hub-repos"), "qwen"));
    hub.addRepo({ repo: QWEN, dir: repo });
    const weights = createHash("sha256")
      .update(readFileSync(join(repo, "model.safetensors")))
      .digest("hex");
    const hfHome = tempDir("hf-home");
    const partial = join(hfHome, "hub", "models--test-org--qwen3-tiny", "blobs", `${weights}.incomplete`);
    const dataDir = tempDir("data");
    const env = hub.serverEnv(hfHome);
    const args = ["--hub-models", "test-org/*", "--job-lease-ms", "600", "--job-poll-ms", "100"];
    const servers: ServerProcess[] = [];
    cleanup.push(() => Promise.all(servers.map((s) => s.stop())));

    // 64 kB chunks 5 s apart: the server is killed between the first and the second.
    hub.chunkDelayMs = 5_000;
    const first = await startServerProcess({ dataDir, args, env });
    servers.push(first);
    const id = await newIdentity(first.apiUrl);
    const dataset = await uploadDataset(first.apiUrl, id);
    const created = await call(first.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
      token: id.token,
      json: {
        name: "killed download",
        baseModel: QWEN,
        datasetId: dataset.id,
        hyperparameters: { lora: { r: 4, alpha: 8, maxLength: 64 }, maxSteps: 2, batchSize: 2 },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const jobId = created.body.job.id as string;
    const size = await until("the first 64 kB of the weights on disk", async () => {
      const bytes = statSync(partial, { throwIfNoEntry: false })?.size ?? 0;
      return bytes >= 65_536 ? bytes : null;
    });
    await first.kill9();
    assert.equal(statSync(partial).size, size, "the partial blob stays");

    hub.chunkDelayMs = 0;
    hub.clearRequests();
    const second = await startServerProcess({ dataDir, args, env });
    servers.push(second);
    const frames = await eventsUntilEnd(second.apiUrl, id.token, jobId, 120_000);
    const events = frames.filter((f) => f.event !== "end").map((f) => JSON.parse(f.data));
    assert.equal(events.at(-1).type, "training.completed", `${JSON.stringify(events)}\n${second.output()}`);
    const blobGets = hub.requestsTo("/lfs-blobs/").filter((r) => r.method === "GET");
    assert.deepEqual(
      blobGets.map((r) => r.range),
      [`bytes=${size}-`],
    );
    const resumed = events.filter((e) => e.type === "download.progress").at(-1);
    const file = resumed.files.find((f: { name: string }) => f.name === "model.safetensors");
    assert.equal(file.bytesDone, file.bytesTotal);
    const job = await call(second.apiUrl, "GET", `/v1/jobs/${jobId}`, { token: id.token });
    assert.match(job.body.job.baseModelRevision, /^[0-9a-f]{40}$/);
  });
});
