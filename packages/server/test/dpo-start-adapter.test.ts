// SFT, then DPO, through `svc server` on the bundled svc/pico-llama (SQLite and
// PostgreSQL): a DPO job started from an SFT job's adapter (final or a
// checkpoint) trains a copy of it against that adapter, frozen, as its
// reference. The proof, from DPO's definition: at step 1 the policy is the
// reference, so every reward is 0 and the loss is ln 2 exactly; had the
// reference stayed the base model, step 1's rewards would be the SFT adapter's
// log-ratios to the base, far from 0. The rows are the reply-tone template's
// (templates/reply-tone): SFT on the preferred replies, DPO on the pairs.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  call,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  uploadDataset,
} from "./harness.js";

const ROOT = fileURLToPath(new URL("../../../..", import.meta.url));
const PICO = "svc/pico-llama";
const PICO_DIR = join(ROOT, "models/pico-llama");
const lines = (file: string) =>
  readFileSync(join(ROOT, "templates/reply-tone/data", file), "utf8")
    .trim()
    .split("\n");
const PAIRS = lines("train.jsonl").slice(0, 48);
const HELD_OUT = lines("eval.jsonl").slice(0, 16);
// SFT first: the prompts with their preferred replies
const SFT = PAIRS.map((line) => {
  const pair = JSON.parse(line);
  return JSON.stringify({ messages: [...pair.input.messages, ...pair.preferred_output] });
});
const jsonl = (rows: string[]) => `${rows.join("\n")}\n`;

type Log = {
  step: number;
  loss: number;
  rewards: { chosenReward: number; rejectedReward: number; margin: number; accuracy: number };
  evalRewards: { accuracy: number; margin: number } | null;
};

for (const backend of ["sqlite", "postgres"] as const)
  describe(`a DPO job from an SFT adapter (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let sftJob: string;
    let pairs: { id: string };
    let heldOut: { id: string };
    const post = (body: Record<string, unknown>) =>
      call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
        token: id.token,
        json: { name: "sft then dpo", baseModel: PICO, ...body },
      });
    const logsOf = async (jobId: string): Promise<Log[]> => {
      const frames = await eventsUntilEnd(server.apiUrl, id.token, jobId, 300_000);
      const events = frames.filter((f) => f.event !== "ping").map((f) => JSON.parse(f.data));
      assert.ok(
        events.some((e) => e.type === "training.completed"),
        JSON.stringify(events.at(-2)),
      );
      return events.filter((e) => e.type === "training.log");
    };
    const dpoFrom = async (startAdapter: Record<string, unknown>) => {
      const created = await post({
        datasetId: pairs.id,
        evalDatasetId: heldOut.id,
        method: "dpo",
        startAdapter,
        hyperparameters: { maxSteps: 8, batchSize: 4, learningRate: 3e-3, beta: 0.1, evalSteps: 8, seed: 42 },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual(created.body.job.startAdapter, startAdapter);
      assert.equal(created.body.job.method, "dpo");
      assert.equal(created.body.job.hyperparameters.lora.r, 8, "the LoRA shape is the start adapter's");
      return logsOf(created.body.job.id);
    };

    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100", "--model", `${PICO}=${PICO_DIR}`]);
      id = await newIdentity(server.apiUrl);
      pairs = await uploadDataset(server.apiUrl, id, jsonl(PAIRS), "pairs.jsonl");
      heldOut = await uploadDataset(server.apiUrl, id, jsonl(HELD_OUT), "held-out.jsonl");
      const sftSet = await uploadDataset(server.apiUrl, id, jsonl(SFT), "sft.jsonl");
      const sft = await post({
        datasetId: sftSet.id,
        hyperparameters: {
          lora: { r: 8, alpha: 16, maxLength: 128 },
          maxSteps: 6,
          batchSize: 8,
          learningRate: 3e-3,
          saveSteps: 3,
          seed: 42,
        },
      });
      assert.equal(sft.status, 201, JSON.stringify(sft.body));
      sftJob = sft.body.job.id;
      const logs = await logsOf(sftJob);
      assert.equal(logs.length, 6);
    });
    after(async () => server?.cleanup());

    it("from the final adapter: step 1 is at the reference (rewards 0, loss ln 2), then the margin grows", async () => {
      const logs = await dpoFrom({ kind: "final", jobId: sftJob });
      assert.equal(logs.length, 8);
      assert.ok(Math.abs(logs[0].loss - Math.log(2)) < 1e-6, `step 1 loss ${logs[0].loss}`);
      assert.deepEqual(logs[0].rewards, { chosenReward: 0, rejectedReward: 0, margin: 0, accuracy: 0.5 });
      const last = logs.at(-1) as Log;
      console.log(
        `# ${backend}: DPO from the SFT adapter: loss ${logs.map((l) => l.loss.toFixed(4)).join(" ")}; ` +
          `held-out preference accuracy after step 8 ${last.evalRewards?.accuracy}, margin ${last.evalRewards?.margin.toFixed(4)}`,
      );
      assert.ok(last.rewards.margin > 0, `step 8 margin ${last.rewards.margin}`);
      assert.ok((last.evalRewards?.margin ?? 0) > 0, "the held-out margin grows from 0");
    });

    it("from a checkpoint: that checkpoint is the reference", async () => {
      const logs = await dpoFrom({ kind: "checkpoint", jobId: sftJob, step: 3 });
      assert.ok(Math.abs(logs[0].loss - Math.log(2)) < 1e-6, `step 1 loss ${logs[0].loss}`);
      assert.equal(logs[0].rewards.margin, 0);
    });

    it("the torch backend's DPO starts from an adapter too: the job is stored for a torch worker", async () => {
      const reply = await post({
        datasetId: pairs.id,
        method: "dpo",
        backend: "torch",
        startAdapter: { kind: "final", jobId: sftJob },
      });
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      assert.equal(reply.body.job.backend, "torch");
      assert.deepEqual(reply.body.job.startAdapter, { kind: "final", jobId: sftJob });
      // no torch worker here: cancel it, so the server's engine runner never waits on it
      await call(server.apiUrl, "POST", `/v1/jobs/${reply.body.job.id}/cancel`, { token: id.token });
    });
  });
