// The jobs and uses a model whose architecture svc's engine does not
// implement is given (transformers-only-model.ts): a job that trains it with
// transformers + peft on a torch worker, checked at POST /v1/jobs as far as
// the server can without transformers (its tokenizer, its LoRA targets by
// tensor name, the memory its weights and LoRA state take); every other job,
// and serving it or its adapters on the engine, is refused saying what works.
import { copyFileSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type ExportResult, FAMILIES, loadTokenizer, machineMemoryBytes } from "@svc/engine";
import type { JobBackend, JobHyperparameters } from "@svc/wire";
import { badRequest } from "../http/api-error.js";
import { formatBytes } from "./memory-estimate.js";
import type { RegisteredModel } from "./model-registry.js";
import {
  engineImplements,
  readRawConfig,
  safetensorsShapes,
  TRANSFORMERS_FALLBACK_DOCS,
  TRANSFORMERS_FALLBACK_SETTINGS,
  type TransformersOnlyModel,
  transformersLoraParameters,
} from "./transformers-only-model.js";

type TransformersOnlyRegistered = RegisteredModel & { transformersOnly: TransformersOnlyModel };

const F32 = 4;
/** The worker's Node.js process beside Python, and Python with torch and transformers loaded. */
const RUNTIME_BYTES = 2 * 2 ** 30;

/** "svc's engine implements LlamaForCausalLM, ...": what the engine computes, for refusals. */
function engineArchitectures(): string {
  return FAMILIES.flatMap((f) => f.architectures).join(", ");
}

/** Why a model the engine does not implement cannot be used as asked, and what can be done with it. */
export function transformersOnlyMessage(
  model: TransformersOnlyRegistered,
  field: string,
  asked: string,
): string {
  return `"${field}": ${model.info.name} is a ${model.transformersOnly.architecture} model, an architecture svc's engine does not implement (it implements ${engineArchitectures()}), so ${asked}; it trains with transformers + peft on a torch worker (${TRANSFORMERS_FALLBACK_SETTINGS}, ${TRANSFORMERS_FALLBACK_DOCS})`;
}

/** The engine's reading of each tokenizer folder, once: null when it loads, else why not. */
const tokenizerReadings = new Map<string, Promise<string | null>>();

function tokenizerProblem(dir: string): Promise<string | null> {
  let reading = tokenizerReadings.get(dir);
  if (!reading) {
    reading = loadTokenizer(dir).then(
      () => null,
      (error: Error) => error.message,
    );
    tokenizerReadings.set(dir, reading);
  }
  return reading;
}

/**
 * A job on such a model: accepted with `backend: "torch"` and
 * `torchModel: "transformers"` only (`auto` could land on the engine, which
 * cannot compute it), when the engine's tokenizer reads the folder (the sets
 * are tokenized by the engine for every backend) and its F32 weights and LoRA
 * state fit this machine. targetModules were checked against info.loraTargets
 * (names from the safetensors tensors) by the route; peft decides the rest.
 */
export async function checkTransformersFallback(
  model: TransformersOnlyRegistered,
  hyperparameters: JobHyperparameters,
  backend: JobBackend,
  field: string,
): Promise<void> {
  if (backend !== "torch" || hyperparameters.torchModel !== "transformers") {
    const asked =
      backend === "torch"
        ? `the torch backend's own decoder (hyperparameters.torchModel "svc", the default) cannot train it`
        : `${backend === "engine" ? "the engine backend" : `backend "${backend}" (which may run on the engine)`} cannot train it`;
    throw badRequest(transformersOnlyMessage(model, field, asked), "unsupported_architecture");
  }
  const problem = await tokenizerProblem(model.dir);
  if (problem)
    throw badRequest(
      `"${field}": ${model.info.name}: svc tokenizes every job's data with its own tokenizer, which cannot read this model's: ${problem}`,
      "unsupported_model",
    );
  const { lora } = hyperparameters;
  const loraBytes =
    transformersLoraParameters(model.transformersOnly, lora.targetModules ?? ["all-linear"], lora.r) *
    4 *
    F32;
  const weightBytes = model.info.parameters * F32;
  const total = weightBytes + loraBytes + RUNTIME_BYTES;
  const available = machineMemoryBytes();
  if (total > available)
    throw badRequest(
      `"${field}": ${model.info.name} needs at least ${formatBytes(total)} to train (${formatBytes(weightBytes)} of F32 weights for ${model.info.parameters.toLocaleString("en-US")} parameters, ${formatBytes(loraBytes)} of LoRA state, activations not counted: svc does not know this architecture's layout) and this machine has ${formatBytes(available)}: choose a smaller model`,
      "model_too_large",
    );
}

/**
 * For an uncached Hub model whose config.json the engine refused: the way to
 * train it when the engine does not implement its architecture, else null.
 */
export function uncachedTransformersOnlyReason(snapshotDir: string, name: string): string | null {
  const raw = readRawConfig(snapshotDir);
  if (!raw || engineImplements(raw)) return null;
  return `such a model trains with transformers + peft on a torch worker (${TRANSFORMERS_FALLBACK_SETTINGS}, ${TRANSFORMERS_FALLBACK_DOCS}) once its files are on this server (svc reads its weights' headers before accepting a job): download it with POST /v1/models/pull {"model":"${name}"} (\`svc models pull ${name} --server\`), or name its folder with svc server --model`;
}

/** Serving (chat, deployments, the Playground) or an engine export of such a model or its adapters: refused, naming what works. */
export function refuseTransformersOnlyServing(model: RegisteredModel, field: string, what: string): void {
  if (!model.transformersOnly) return;
  throw badRequest(
    `${transformersOnlyMessage(model as TransformersOnlyRegistered, field, `svc's engine cannot serve ${what}`)}; its adapters are PEFT adapters for transformers: svc export <job id> --format peft (POST /v1/exports with "format": "peft") writes one`,
    "unsupported_architecture",
  );
}

const PEFT_ADAPTER_FILES = ["adapter_config.json", "adapter_model.safetensors"];
const LORA_FACTOR = /^base_model\.model\..+\.lora_[AB](?:\.default)?\.weight$/;

/**
 * The PEFT export of an adapter of such a model: its folder's two files
 * copied, after checking they are a LoRA adapter as peft saves one (the
 * engine's export checks an adapter by its own families' module names, which
 * this architecture does not have).
 */
export function exportTransformersPeftAdapter(adapterDir: string, out: string): ExportResult {
  const configFile = join(adapterDir, "adapter_config.json");
  const config = JSON.parse(readFileSync(configFile, "utf8")) as Record<string, unknown>;
  if (config.peft_type !== "LORA")
    throw new Error(`${configFile}: peft_type ${String(config.peft_type)} is not LORA`);
  const weights = join(adapterDir, "adapter_model.safetensors");
  const names = [...safetensorsShapes(weights).keys()];
  const stray = names.find((name) => !LORA_FACTOR.test(name));
  if (stray || names.length === 0)
    throw new Error(
      `${weights}: ${stray ? `tensor ${stray} is not a LoRA factor` : "holds no LoRA factors"}`,
    );
  mkdirSync(out, { recursive: true });
  let bytes = 0;
  for (const name of PEFT_ADAPTER_FILES) {
    copyFileSync(join(adapterDir, name), join(out, name));
    bytes += statSync(join(out, name)).size;
  }
  return { format: "peft", quant: null, dir: out, files: [...PEFT_ADAPTER_FILES], bytes, warnings: [] };
}
