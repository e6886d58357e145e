// Method "dpo" through `svc server` on the bundled svc/pico-llama: a preference
// dataset uploads (either form), a DPO job trains on it and its training.log
// frames carry the rewards, margin and accuracy, and held-out preference
// accuracy rises from chance (every reward 0 at step 0 counts as a tie, 0.5) to
// clearly above it. Mismatched datasets and methods and stray DPO settings are
// refused with the field named (docs/post-training.md). On SQLite and PostgreSQL.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  call,
  chatJsonl,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  uploadDataset,
} from "./harness.js";

const PICO = "svc/pico-llama";
const PICO_DIR = join(fileURLToPath(new URL("../../../..", import.meta.url)), "models/pico-llama");
const COLOURS = ["red", "green", "blue", "yellow"];
const NAMES = [
  "Ana",
  "Ben",
  "Cleo",
  "Dan",
  "Eve",
  "Finn",
  "Gus",
  "Hana",
  "Ivo",
  "Jack",
  "Kim",
  "Leo",
  "Mia",
  "Ned",
  "Olga",
  "Pia",
  "Quin",
  "Rosa",
  "Sam",
  "Tom",
  "Uma",
  "Vic",
  "Wes",
  "Xena",
  "Yuri",
  "Zoe",
  "Abe",
  "Bea",
  "Cal",
  "Dot",
  "Eli",
  "Fay",
  "Gil",
  "Hal",
  "Ida",
  "Jo",
  "Kai",
  "Lou",
  "Max",
  "Noa",
  "Oz",
  "Pam",
  "Ray",
  "Sol",
  // held out: names the training pairs never show
  "Ted",
  "Una",
  "Val",
  "Wyn",
  "Yan",
  "Zed",
  "Amy",
  "Bob",
  "Cy",
  "Di",
  "Ed",
  "Flo",
  "Guy",
  "Hu",
  "Ike",
  "Jan",
];
// The preferred answer is the colour the prompt names, the dispreferred one another colour: the
// base model prefers neither (held-out accuracy near chance), and what DPO teaches (read the
// colour from the prompt) carries over to names it has not seen. Rows alternate the two forms.
const pair = (name: string, i: number) => {
  const colour = COLOURS[i % 4];
  const other = COLOURS[(i + 1 + ((i >> 2) % 3)) % 4];
  const prompt = [
    { role: "user", content: `${name} likes the colour ${colour}. Which colour does ${name} like?` },
  ];
  return i % 2 === 0
    ? {
        input: { messages: prompt },
        preferred_output: [{ role: "assistant", content: colour }],
        non_preferred_output: [{ role: "assistant", content: other }],
      }
    : {
        prompt,
        chosen: [{ role: "assistant", content: colour }],
        rejected: [{ role: "assistant", content: other }],
      };
};
const jsonl = (rows: unknown[]) => `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;
const PAIRS = NAMES.map(pair);
const TRAIN = jsonl(PAIRS.slice(0, 44));
const HELD_OUT = jsonl(PAIRS.slice(44));

async function postJob(server: ServerProcess, id: Identity, body: Record<string, unknown>) {
  return call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
    token: id.token,
    json: { name: "dpo run", baseModel: PICO, ...body },
  });
}

for (const backend of ["sqlite", "postgres"] as const)
  describe(`method dpo through svc server (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let train: { id: string; rows: number };
    let heldOut: { id: string; rows: number };
    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100", "--model", `${PICO}=${PICO_DIR}`]);
      id = await newIdentity(server.apiUrl);
      train = await uploadDataset(server.apiUrl, id, TRAIN, "prefs.jsonl");
      heldOut = await uploadDataset(server.apiUrl, id, HELD_OUT, "held-out.jsonl");
    });
    after(async () => server?.cleanup());

    it("a DPO job raises held-out preference accuracy from chance, logging rewards every step", async () => {
      assert.equal(train.rows, 44);
      const created = await postJob(server, id, {
        datasetId: train.id,
        evalDatasetId: heldOut.id,
        method: "dpo",
        hyperparameters: {
          lora: { r: 8, alpha: 16, maxLength: 64 },
          maxSteps: 40,
          batchSize: 4,
          learningRate: 3e-3,
          evalSteps: 1,
          beta: 0.1,
          seed: 5,
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const job = created.body.job;
      assert.equal(job.method, "dpo");
      assert.equal(job.backend, "auto", "either backend trains DPO (docs/post-training.md#backends)");
      assert.equal(job.hyperparameters.beta, 0.1);
      assert.equal("method" in job.hyperparameters, false);
      const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id, 300_000);
      const events = frames.filter((f) => f.event !== "ping").map((f) => JSON.parse(f.data));
      assert.ok(
        events.some((e) => e.type === "training.completed"),
        JSON.stringify(events.at(-2)),
      );
      const started = events.find((e) => e.type === "training.started");
      assert.equal(started.trainExamples, 44);
      assert.equal(started.evalExamples, 16);
      const logs = events.filter((e) => e.type === "training.log");
      assert.equal(logs.length, 40);
      for (const log of logs) {
        for (const key of ["chosenReward", "rejectedReward", "margin", "accuracy"])
          assert.equal(typeof log.rewards[key], "number", `step ${log.step} rewards.${key}`);
        assert.equal(log.evalRewards.loss, log.evalLoss);
      }
      // step 1 trains from the reference itself: every reward is 0, the loss log 2
      assert.ok(Math.abs(logs[0].loss - Math.log(2)) < 1e-6, `step 1 loss ${logs[0].loss}`);
      assert.equal(logs[0].rewards.accuracy, 0.5);
      const first = logs[0].evalRewards;
      const last = logs.at(-1).evalRewards;
      const series = logs.map((l) => `${l.step}:${l.evalRewards.accuracy.toFixed(3)}`).join(" ");
      console.log(`# ${backend}: held-out preference accuracy by step: ${series}`);
      console.log(
        `# held-out preference accuracy: ${first.accuracy} after step 1, ${last.accuracy} after step 40; ` +
          `margin ${first.margin.toFixed(4)} -> ${last.margin.toFixed(4)}, eval loss ${first.loss.toFixed(4)} -> ${last.loss.toFixed(4)}`,
      );
      assert.ok(first.accuracy <= 0.7, `held-out accuracy after one step ${first.accuracy}: near chance`);
      assert.ok(last.accuracy >= 0.85, `held-out accuracy ${last.accuracy}`);
      assert.ok(last.margin > first.margin, "the margin grows");
      assert.ok(last.loss < Math.log(2) - 0.1, `held-out loss ${last.loss}`);
      const shown = await call(server.apiUrl, "GET", `/v1/jobs/${job.id}`, { token: id.token });
      assert.equal(shown.body.job.method, "dpo");
    });

    it("datasets and methods must match, and DPO settings need method dpo", async () => {
      const chat = await uploadDataset(server.apiUrl, id, chatJsonl(8));
      const refused = async (body: Record<string, unknown>, message: RegExp) => {
        const reply = await postJob(server, id, {
          hyperparameters: { lora: { r: 4, alpha: 8 }, maxSteps: 2 },
          ...body,
        });
        assert.equal(reply.status, 400, JSON.stringify(reply.body));
        assert.match(reply.body.error.message, message);
      };
      await refused(
        { datasetId: train.id },
        /"datasetId": dataset .* holds preference pairs; train it with "method": "dpo"/,
      );
      await refused(
        { datasetId: chat.id, method: "dpo" },
        /"datasetId": method "dpo" trains on preference pairs/,
      );
      await refused(
        { datasetId: train.id, evalDatasetId: chat.id, method: "dpo" },
        /"evalDatasetId": method "dpo"/,
      );
      await refused(
        { datasetId: chat.id, hyperparameters: { lora: { r: 4, alpha: 8 }, beta: 0.2 } },
        /"hyperparameters\.beta" is a preference-tuning setting: set "method": "dpo"/,
      );
      await refused(
        { datasetId: train.id, method: "dpo", hyperparameters: { lora: { r: 4, alpha: 8 }, gamma: 1 } },
        /"hyperparameters\.gamma" is SimPO's margin/,
      );
      await refused({ datasetId: train.id, method: "ppo" }, /"method"/);
      await refused(
        {
          datasetId: train.id,
          method: "dpo",
          hyperparameters: { lora: { r: 4, alpha: 8 }, labelSmoothing: 0.7 },
        },
        /"hyperparameters\.labelSmoothing"/,
      );
      await refused(
        { datasetId: train.id, method: "dpo", hyperparameters: { lora: { r: 4, alpha: 8 }, beta: 0 } },
        /"hyperparameters\.beta"/,
      );
      const sft = await postJob(server, id, { datasetId: chat.id, dryRun: true });
      assert.equal(sft.status, 201);
      assert.equal(sft.body.job.method, "sft");
    });

    it("a malformed preference row is refused at upload, naming the line and field", async () => {
      const bad = `${TRAIN}${JSON.stringify({ prompt: "hi", chosen: [{ role: "user", content: "x" }], rejected: "no" })}\n`;
      const reply = await call(server.apiUrl, "POST", `/v1/datasets?${id.scope}&name=bad.jsonl`, {
        token: id.token,
        body: bad,
        headers: { "content-type": "application/x-ndjson" },
      });
      assert.equal(reply.status, 400);
      assert.equal(
        reply.body.error.message,
        'bad.jsonl line 45: "chosen[0].role" must be "assistant", got "user"',
      );
    });
  });
