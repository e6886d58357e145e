// Memory of the server's inference process per serving weight format
// (docs/serving-formats.md#memory): for each scenario a fresh inference
// process (the one `svc server` forks, driven through InferenceHost) loads a
// model folder of a bench/shapes.mjs shape (random weights, written once as
// F32 safetensors under the temp folder), answers one short chat, and we read
// its /proc status: VmHWM (peak resident set) and VmRSS after the answer
// (steady). A scenario is a list of formats served one after the other by the
// same process ("fp32+int8": an fp32 deployment and an int8 one of the same
// model). Medians of --reps interleaved runs; the load average is printed.
//
//   npm run build && node bench/serve-memory.mjs [--shape small] [--scenarios fp32,bf16,int8,q4_0,fp32+int8] [--reps 3]
import { existsSync, readFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { writeModelFolder } from "@svc/engine/testing";
import { InferenceHost } from "../packages/server/dist/src/inference/inference-host.js";
import { SHAPES } from "./shapes.mjs";

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const shapeName = flag("shape", "small");
const scenarios = flag("scenarios", "fp32,bf16,int8,q4_0,fp32+int8").split(",");
const reps = Number(flag("reps", "3"));
const shape = SHAPES[shapeName];
if (!shape) throw new Error(`--shape: one of ${Object.keys(SHAPES).join(", ")}`);

const modelDir = join(tmpdir(), `svc-serve-memory-${shapeName}`);
if (!existsSync(join(modelDir, "model.safetensors"))) {
  console.log(`writing ${modelDir} (${shape.note}, random F32 weights)...`);
  await writeModelFolder(modelDir, shape.config, { seed: 1 });
}

/** VmHWM and VmRSS of a process, in MiB. */
function residentSet(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, "m").exec(status)[1]);
  return { peak: kib("VmHWM") / 1024, steady: kib("VmRSS") / 1024 };
}

/** One scenario in a fresh inference process: its peak and steady resident set. */
async function measure(formats) {
  const host = new InferenceHost();
  try {
    for (const weightFormat of formats) {
      const target = { modelDir, adapterDir: null, weightFormat };
      await host.prepare(target);
      await host.complete(target, {
        messages: [{ role: "user", content: "Tell me about the sea." }],
        temperature: 0,
        maxTokens: 8,
      });
    }
    // let the answer's garbage go before reading the steady figure
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return residentSet(host.pid);
  } finally {
    await host.close();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = new Map(scenarios.map((s) => [s, []]));
const loads = [loadavg()[0]];
for (let rep = 0; rep < reps; rep++) {
  for (const scenario of scenarios) results.get(scenario).push(await measure(scenario.split("+")));
  loads.push(loadavg()[0]);
}
console.log(`\n${shape.note}: inference process resident set, median of ${reps} (MiB)`);
console.log(`load average (1 min) during the runs: ${loads.map((l) => l.toFixed(1)).join(", ")}`);
console.log("| formats served | peak (VmHWM) | steady (VmRSS) |\n|---|---|---|");
for (const [scenario, runs] of results) {
  const peak = median(runs.map((r) => r.peak));
  const steady = median(runs.map((r) => r.steady));
  console.log(`| ${scenario} | ${peak.toFixed(0)} | ${steady.toFixed(0)} |`);
}
