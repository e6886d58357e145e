// A base model whose architecture svc's engine does not implement (GPT-2 here:
// a tiny random one written by transformers' own save_pretrained, with the
// engine's test tokenizer) trains on the torch backend with transformers +
// peft, through svc server and svc worker --backend torch: the job's events,
// its checkpoints and a final adapter that peft loads onto transformers' model,
// where it changes the logits and gives the evaluation loss training reported.
// Everything else is refused saying how such a model trains: a job on the
// engine (or auto, or svc's own torch decoder), LoRA targets the weights do
// not have, serving it or its adapter (chat, deployments) and engine exports;
// its PEFT export works (the same model on the Hub: torch-transformers-fallback-hub.test.ts).
// Needs a Python with torch, transformers and peft
// (SVC_PYTHON, else python3 on the PATH); skipped, saying so, where there is none.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type DatasetRow, loadTokenizer, prepareSets } from "@svc/engine";
import { needs } from "@svc/engine/testing";
import type { JobHyperparameters } from "@svc/wire";
import { engineHyperparameters } from "../src/engine-hyperparameters.js";
import { writeTorchJob } from "../src/worker/torch-job.js";
import { call, chatJsonl, createJob, until, uploadDataset } from "./harness.js";
import {
  checkpointSteps,
  completedTorchLogs,
  findPython,
  runTrainer,
  torchCluster,
  torchScratch,
  trainerEvents,
} from "./torch-harness.js";
import { GPT2_JOB_HYPERPARAMETERS, writeTinyGpt2 } from "./transformers-only-fixture.js";

const { python: PYTHON, skip } = findPython(
  "import torch, transformers, peft",
  "has torch, transformers and peft",
);
const scratch = torchScratch("hf-fallback");

const GPT2 = "test/gpt2";
const MODEL_DIR = join(scratch, "gpt2");

const HYPERPARAMETERS = GPT2_JOB_HYPERPARAMETERS;

/**
 * Loads the adapter with peft onto transformers' GPT-2 and reports: the largest
 * difference between peft's loaded factors and the saved ones, the largest
 * change the adapter makes to the logits, and the mean token loss over the
 * eval examples (the engine's tokenization, as the worker trained on).
 */
function peftCheck(adapterDir: string, evalFile: string) {
  const check = spawnSync(
    PYTHON,
    [
      "-c",
      `import json, sys, torch, transformers, peft
import torch.nn.functional as F
from safetensors.torch import load_file
base = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32, attn_implementation="eager")
examples = json.load(open(sys.argv[3]))
ids = torch.tensor([examples[0]["inputIds"]])
with torch.no_grad():
    before = base(input_ids=ids).logits.clone()
model = peft.PeftModel.from_pretrained(base, sys.argv[2])
model.eval()
saved = load_file(sys.argv[2] + "/adapter_model.safetensors")
state = {k.replace(".default", ""): v for k, v in model.state_dict().items() if "lora_" in k}
assert sorted(state) == sorted(saved), (sorted(state)[:3], sorted(saved)[:3])
loss_sum, count = 0.0, 0
with torch.no_grad():
    after = model(input_ids=ids).logits
    for e in examples:
        logits = model(input_ids=torch.tensor([e["inputIds"]])).logits[0, :-1]
        targets = torch.tensor(e["labels"][1:])
        loss_sum += float(F.cross_entropy(logits, targets, ignore_index=-100, reduction="sum"))
        count += int((targets >= 0).sum())
print(json.dumps({
    "factorDifference": max(float((state[k] - saved[k]).abs().max()) for k in saved),
    "logitsChange": float((after - before).abs().max()),
    "evalLoss": loss_sum / count,
    "fanInFanOut": model.peft_config["default"].fan_in_fan_out,
}))`,
      MODEL_DIR,
      adapterDir,
      evalFile,
    ],
    { encoding: "utf8" },
  );
  assert.equal(check.status, 0, check.stderr);
  return JSON.parse(check.stdout.trim().split("\n").at(-1) as string);
}

describe("an architecture svc's engine does not implement, on transformers + peft", {
  skip: skip && needs("transformers/peft", skip),
}, () => {
  let parameters = 0;
  const cluster = torchCluster("hf-fallback", {
    models: async () => {
      ({ parameters } = await writeTinyGpt2(PYTHON, MODEL_DIR));
      return [`${GPT2}=${MODEL_DIR}`];
    },
  });
  const api = (method: string, path: string, json?: unknown) =>
    call(cluster.server.apiUrl, method, path, { token: cluster.id.token, json });
  const createGpt2Job = async (body: Record<string, unknown>) => {
    const dataset = await uploadDataset(cluster.server.apiUrl, cluster.id, chatJsonl(8));
    return api("POST", `/v1/jobs?${cluster.id.scope}`, {
      name: "gpt2",
      baseModel: GPT2,
      datasetId: dataset.id,
      ...body,
    });
  };
  let finishedJob = "";

  it("lists the model from its files: family transformers, the safetensors' parameters, targets by tensor name", async () => {
    const models = (await api("GET", "/v1/models")).body.models as Record<string, unknown>[];
    const gpt2 = models.find((m) => m.name === GPT2);
    assert.ok(gpt2, JSON.stringify(models));
    assert.equal(gpt2.family, "transformers");
    assert.equal(gpt2.architecture, "GPT2LMHeadModel");
    assert.equal(gpt2.parameters, parameters);
    assert.equal(gpt2.contextLength, 128);
    assert.deepEqual(gpt2.loraTargets, ["c_attn", "c_proj", "c_fc"]);
    assert.match(
      gpt2.description as string,
      /"backend": "torch" and "hyperparameters.torchModel": "transformers"/,
    );
    const bytes = readdirSync(MODEL_DIR).reduce((sum, f) => sum + statSync(join(MODEL_DIR, f)).size, 0);
    assert.ok(bytes < 2 ** 20, `the model folder is ${bytes} bytes`);
  });

  it("profiles a dataset with the model's tokenizer, as for any model", async () => {
    const dataset = await uploadDataset(cluster.server.apiUrl, cluster.id, chatJsonl(5));
    const profile = await until("a ready profile", async () => {
      const reply = await api("GET", `/v1/datasets/${dataset.id}/profile?baseModel=${GPT2}&maxLength=64`);
      // 202 while it is measured
      assert.ok(reply.status === 200 || reply.status === 202, JSON.stringify(reply.body));
      return reply.body.profile.status === "pending" ? null : reply.body.profile;
    });
    assert.equal(profile.status, "ready", JSON.stringify(profile));
    assert.equal(profile.rows, 5);
    assert.ok(profile.tokens.sum > 0);
  });

  it("refuses every job but backend torch + torchModel transformers, naming the architecture and that way", async () => {
    const lora = { r: 4, alpha: 8 };
    for (const [body, asked] of [
      [{ backend: "engine", hyperparameters: { lora } }, /the engine backend cannot train it/],
      [{ hyperparameters: { lora } }, /backend "auto" \(which may run on the engine\) cannot train it/],
      [{ backend: "torch", hyperparameters: { lora } }, /the torch backend's own decoder .* cannot train it/],
    ] as const) {
      const reply = await createGpt2Job(body);
      assert.equal(reply.status, 400, JSON.stringify(reply.body));
      assert.equal(reply.body.error.code, "unsupported_architecture");
      const message = reply.body.error.message as string;
      assert.match(
        message,
        /^"baseModel": test\/gpt2 is a GPT2LMHeadModel model, an architecture svc's engine does not implement/,
      );
      assert.match(message, asked);
      assert.match(message, /"backend": "torch" and "hyperparameters.torchModel": "transformers"/);
    }
    const targets = await createGpt2Job({
      backend: "torch",
      hyperparameters: { ...HYPERPARAMETERS, lora: { r: 4, alpha: 8, targetModules: ["c_fc", "q_proj"] } },
    });
    assert.equal(targets.status, 400, JSON.stringify(targets.body));
    assert.match(
      targets.body.error.message,
      /"hyperparameters.lora.targetModules\[1\]": "q_proj" is not a LoRA target of test\/gpt2 \(GPT2LMHeadModel\); valid: "c_attn", "c_proj", "c_fc"/,
    );
    const list = await api("GET", `/v1/jobs?${cluster.id.scope}`);
    assert.equal(list.body.jobs.length, 0, "nothing was created");
  });

  it("trains a whole job on a torch worker: events, checkpoints, and an adapter peft applies as trained", async () => {
    const evalText = chatJsonl(6).replace(/plus one/g, "plus two");
    const evalSet = await uploadDataset(cluster.server.apiUrl, cluster.id, evalText, "eval.jsonl");
    const trainSet = await uploadDataset(cluster.server.apiUrl, cluster.id, chatJsonl(10));
    const created = await createJob(cluster.server.apiUrl, cluster.id, trainSet.id, HYPERPARAMETERS, {
      baseModel: GPT2,
      backend: "torch",
      evalDatasetId: evalSet.id,
      // fp32, so that training's eval loss is peft's fp32 one to 1e-5 below ("auto" is bf16 autocast on a
      // CPU with AVX512_BF16)
      precision: "fp32",
    });
    await cluster.startWorker(PYTHON, ["--device", "cpu"]);
    const frames = await cluster.eventsUntilEnd(created.id, 180_000);
    const logs = completedTorchLogs(frames, 4);
    for (const log of logs) assert.equal(log.device, "cpu");
    assert.deepEqual(checkpointSteps(frames), [2, 4]);
    finishedJob = created.id;

    // The final adapter as the API serves its files.
    const adapterDir = join(scratch, "final");
    mkdirSync(adapterDir);
    for (const file of ["adapter_config.json", "adapter_model.safetensors"]) {
      const reply = await fetch(`${cluster.server.apiUrl}/v1/jobs/${created.id}/artifacts/final/${file}`, {
        headers: { authorization: `Bearer ${cluster.id.token}` },
      });
      assert.equal(reply.status, 200, file);
      writeFileSync(join(adapterDir, file), Buffer.from(await reply.arrayBuffer()));
    }
    // The eval set as the worker tokenized it: the engine's tokenizer, chat template and loss mask.
    const rows = (text: string) =>
      text
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as DatasetRow);
    const tokenizer = await loadTokenizer(MODEL_DIR);
    const hyperparameters = engineHyperparameters(HYPERPARAMETERS as unknown as JobHyperparameters);
    const prepared = prepareSets(tokenizer, rows(chatJsonl(10)), rows(evalText), hyperparameters);
    const evalFile = join(scratch, "eval.json");
    writeFileSync(
      evalFile,
      JSON.stringify(
        prepared.eval?.examples.map((e) => ({ inputIds: [...e.inputIds], labels: [...e.labels] })),
      ),
    );

    const peft = peftCheck(adapterDir, evalFile);
    assert.equal(peft.factorDifference, 0, "peft loads every factor as saved");
    assert.ok(peft.logitsChange > 1e-3, `the adapter changes the logits by ${peft.logitsChange}`);
    assert.equal(peft.fanInFanOut, true, "GPT-2's Conv1D layers store weights [in, out]");
    const reported = logs.at(-1).evalLoss as number;
    assert.ok(
      Math.abs(peft.evalLoss - reported) / reported < 1e-5,
      `eval loss through peft ${peft.evalLoss}, reported by training ${reported}`,
    );
  });

  /** svc_trainer run directly on a job the worker would write (no engine config: the architecture is transformers' alone). */
  const trainDirectly = async (
    resumeFrom: string | null,
    lora: JobHyperparameters["lora"] = HYPERPARAMETERS.lora,
  ) => {
    const tokenizer = await loadTokenizer(MODEL_DIR);
    const rows = chatJsonl(10)
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as DatasetRow);
    const hyperparameters = engineHyperparameters({
      ...HYPERPARAMETERS,
      lora,
    } as unknown as JobHyperparameters);
    const { file } = writeTorchJob(mkdtempSync(join(scratch, "job-")), {
      model: { dir: MODEL_DIR, tokenizer, config: null, contextLength: 128 },
      prepared: prepareSets(tokenizer, rows, undefined, hyperparameters),
      hyperparameters,
      outputDir: mkdtempSync(join(scratch, "out-")),
      resumeFrom,
      threads: 1,
      torchModel: "transformers",
    });
    const [{ code, out, err }] = await runTrainer(PYTHON, file);
    const events = trainerEvents(out);
    return {
      code,
      err,
      losses: events.filter((e) => e.type === "progress").map((e) => e.progress),
      checkpoints: events.filter((e) => e.type === "checkpoint").map((e) => e.dir as string),
      error: events.find((e) => e.type === "error")?.message as string | undefined,
    };
  };

  it("resumes its checkpoint (peft's module names) and goes on to the same losses", async () => {
    const run = async (resumeFrom: string | null) => {
      const result = await trainDirectly(resumeFrom);
      assert.equal(result.code, 0, result.err);
      return result;
    };
    const whole = await run(null);
    assert.equal(whole.checkpoints.length, 2);
    const resumed = await run(whole.checkpoints[0]);
    assert.deepEqual(
      resumed.losses.map((l) => l.step),
      [3, 4],
    );
    for (let i = 0; i < 2; i++)
      assert.ok(
        Math.abs(whole.losses[2 + i].loss - resumed.losses[i].loss) / whole.losses[2 + i].loss < 1e-6,
        `step ${3 + i}: whole run ${whole.losses[2 + i].loss}, resumed ${resumed.losses[i].loss}`,
      );
  });

  it("fails a job whose targets peft refuses, or that are not linear layers, with the reason", async () => {
    // POST /v1/jobs lets neither through (targets are checked against the weights); Python says why as well.
    for (const [targetModules, reason] of [
      [["nope"], /lora.targetModules \["nope"\]: peft refused them: .*nope/],
      [["wte"], /lora.targetModules: wte \(Embedding .*\) is not a linear layer/],
    ] as const) {
      const failed = await trainDirectly(null, { r: 4, alpha: 8, targetModules: [...targetModules] });
      assert.equal(failed.code, 1, failed.err);
      assert.match(failed.error ?? "", reason);
    }
  });

  it("refuses to serve the model or its adapter, pointing to the PEFT export, which works", async () => {
    assert.ok(finishedJob, "the training test ran");
    const adapter = { kind: "final", jobId: finishedJob };
    const servable = /svc's engine cannot serve .*svc export <job id> --format peft/;
    for (const [path, body] of [
      [`/v1/endpoints?${cluster.id.scope}`, { slug: "gpt2-adapter", target: { kind: "adapter", adapter } }],
      [
        `/v1/endpoints?${cluster.id.scope}`,
        { slug: "gpt2-base", target: { kind: "base_model", baseModel: GPT2 } },
      ],
      ["/v1/inference/chat", { adapter, messages: [{ role: "user", content: "hi" }] }],
      [`/v1/exports?${cluster.id.scope}`, { adapter, format: "merged" }],
      [`/v1/exports?${cluster.id.scope}`, { adapter, format: "gguf" }],
    ] as const) {
      const reply = await api("POST", path, body);
      assert.equal(reply.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(reply.body)}`);
      assert.equal(reply.body.error.code, "unsupported_architecture");
      assert.match(
        reply.body.error.message,
        /GPT2LMHeadModel model, an architecture svc's engine does not implement/,
      );
      assert.match(reply.body.error.message, servable);
    }
    const started = await api("POST", `/v1/exports?${cluster.id.scope}`, { adapter, format: "peft" });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const ready = await until("the PEFT export", async () => {
      const info = (await api("GET", `/v1/exports/${started.body.export.id}`)).body.export;
      return info.status === "running" ? null : info;
    });
    assert.equal(ready.status, "ready", JSON.stringify(ready));
    assert.deepEqual(ready.files.map((f: { path: string }) => f.path).sort(), [
      "adapter_config.json",
      "adapter_model.safetensors",
    ]);
  });
});
