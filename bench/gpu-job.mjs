// A whole torch-backend job on a GPU box that has Python and torch but no node:
// the ticket-triage template's job (svc/pico-llama, the template's data and
// hyperparameters) written exactly as `svc worker --backend torch` writes it,
// run there by the trainer process, and checked back here.
//
//   node bench/gpu-job.mjs prepare DIR     job.json + tokens, paths relative to the repo root
//   (on the GPU box, from the repo root)
//   python3 -m svc_trainer --input DIR/job.json --device cuda > DIR/events.jsonl   (PYTHONPATH=packages/trainer-torch)
//   node bench/gpu-job.mjs check DIR       the same job on the engine here, side by side
//
// `check` scores the trainer's own exact-match answers as the worker does,
// serves the GPU-trained adapter with the engine's generator (the edge's) on
// the same prompts, and prints both backends' losses and exact match.
// (Run on a CPU, the trainer's 600 steps take about 4 minutes on 2 cores.)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  loadAdapter,
  loadModel,
  prepareSets,
  readDataset,
  train,
} from "../packages/engine/dist/src/index.js";
import { ExactMatchRunner } from "../packages/engine/dist/src/training/task-metrics.js";
import {
  exactMatchScore,
  torchExactMatch,
  writeTorchJob,
} from "../packages/server/dist/src/worker/torch-job.js";
import { readTemplateConfig } from "./template-accuracy/template-config.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// the template's own settings and data, as `svc start` would send them
const template = await readTemplateConfig(join(root, "templates", "ticket-triage"));
const { hyperparameters } = template;

const [command, dirArg] = process.argv.slice(2);
if (!["prepare", "check"].includes(command) || !dirArg) {
  console.error("usage: node bench/gpu-job.mjs prepare|check DIR");
  process.exit(2);
}
const dir = resolve(dirArg);
const model = await loadModel(join(root, "models", "pico-llama"));
const trainRows = await readDataset(template.trainPath);
const evalRows = await readDataset(template.evalPath);
const prepared = prepareSets(model.tokenizer, trainRows, evalRows, hyperparameters);

if (command === "prepare") {
  mkdirSync(dir, { recursive: true });
  const { file } = writeTorchJob(dir, {
    model,
    prepared,
    hyperparameters,
    outputDir: join(dir, "out"),
    resumeFrom: null,
  });
  // relative to the repo root, so the job runs from the root of any copy of the repo
  const job = JSON.parse(readFileSync(file, "utf8"));
  for (const key of ["modelDir", "trainTokens", "evalTokens", "outputDir"])
    job[key] = relative(root, job[key]);
  writeFileSync(file, JSON.stringify(job));
  console.log(`${relative(root, file)}: ${job.totalSteps} steps, ${prepared.train.examples.length} examples`);
} else {
  const events = readFileSync(join(dir, "events.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));
  const job = JSON.parse(readFileSync(join(dir, "job.json"), "utf8"));
  // the exact-match sample and its references, as the worker keeps them beside the job
  const rows = torchExactMatch({ model, prepared, hyperparameters });
  const torchSteps = events.filter((e) => e.type === "progress").map((e) => e.progress);
  const result = events.find((e) => e.type === "result");
  if (!result || result.result.status !== "completed")
    throw new Error(`the GPU job did not complete: ${JSON.stringify(events.at(-1))}`);
  const lastEval = (steps) => steps.filter((s) => s.evalLoss != null).at(-1);
  const torchLast = lastEval(torchSteps);
  const torchExact = exactMatchScore(torchLast.exactMatchIds, rows, model.tokenizer);

  // The GPU-trained adapter, served by the engine's generator on the same prompts (as its own eval does).
  const adapterDir = resolve(root, result.result.adapterDir);
  const served = await new ExactMatchRunner(
    model,
    loadAdapter(adapterDir),
    rows,
    job.settings.exactMatchMaxTokens,
  ).run();

  const engineSteps = [];
  const began = performance.now();
  await train({
    model,
    trainSet: trainRows,
    evalSet: evalRows,
    hyperparameters,
    outputDir: join(dir, "engine"),
    onProgress: (p) => void engineSteps.push(p),
  });
  const engineSeconds = (performance.now() - began) / 1000;
  const engineLast = lastEval(engineSteps);
  const first = (steps) => steps.find((s) => s.loss != null).loss;

  console.log(
    `job: ${job.totalSteps} steps of ${job.settings.batchSize}, ticket-triage on svc/pico-llama (adapter ${relative(root, adapterDir)})`,
  );
  console.log("backend            first loss  eval loss  exact match  train s");
  console.log(
    `${`torch (${torchSteps[0].device})`.padEnd(17)}  ${first(torchSteps).toFixed(4).padStart(10)}  ${torchLast.evalLoss.toFixed(4).padStart(9)}  ${torchExact.toFixed(3).padStart(11)}  ${result.trainSeconds.toFixed(1).padStart(7)}`,
  );
  console.log(
    `engine (this CPU)  ${first(engineSteps).toFixed(4).padStart(10)}  ${engineLast.evalLoss.toFixed(4).padStart(9)}  ${(engineLast.evalExactMatch ?? Number.NaN).toFixed(3).padStart(11)}  ${engineSeconds.toFixed(1).padStart(7)}`,
  );
  const peak = Math.max(...torchSteps.map((s) => s.memoryBytes ?? 0));
  console.log(
    `torch: peak memory ${(peak / 2 ** 20).toFixed(0)} MiB, ${torchSteps.at(-1).tokensPerSecond.toFixed(0)} tokens/s at the last step`,
  );
  console.log(
    `its adapter served by the engine's generator: exact match ${served.toFixed(3)} on ${rows.length} prompts`,
  );
}
