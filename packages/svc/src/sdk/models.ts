// The base models the SDK accepts: the bundled ones, typed so a wrong name
// fails to compile, and Hugging Face Hub ids (`<org>/<name>[@<revision>]`,
// docs/hub.md); anything else, in untyped or bundled code, throws when the
// trainer is constructed. The
// server's GET /v1/models is the runtime truth of what it can train on and of
// what each model is (family, size, context, LoRA targets: the engine's
// reading of its config.json); the trainer checks against it at start().
import { type BaseModelInfo, isHubModelName } from "@svc/wire";

/** The bundled base model(s) (models/ in this repository). */
export const SUPPORTED_MODELS = ["svc/pico-llama"] as const;

export type SupportedModel = (typeof SUPPORTED_MODELS)[number];

/** A Hugging Face Hub model id: "Qwen/Qwen2.5-0.5B-Instruct", or with a branch, tag or commit: "org/name@v1.0". */
export type HubModelId = `${string}/${string}`;

/** What `createTrainer({ model })` takes. */
export type BaseModelName = SupportedModel | HubModelId;

/**
 * `M` when it is a bundled model or a Hub id, never otherwise: a name in the
 * `svc` org must be a bundled one exactly ("svc/pico-llama"), so a typo there
 * fails to compile ("not assignable to type 'never'").
 */
export type CheckedModelName<M extends string> = M extends SupportedModel
  ? M
  : M extends `svc/${string}`
    ? never
    : M extends HubModelId
      ? M
      : never;

/**
 * Names accepted at runtime: SUPPORTED_MODELS plus SVC_EXTRA_MODELS, a comma-separated
 * list meant for tests that register a tiny model on their own server.
 */
export function acceptedModels(): string[] {
  const extra = (process.env.SVC_EXTRA_MODELS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return [...SUPPORTED_MODELS, ...extra];
}

export function assertSupportedModel(model: unknown, field = "model"): asserts model is BaseModelName {
  const accepted = acceptedModels();
  if (typeof model !== "string" || !(accepted.includes(model) || isHubModelName(model))) {
    throw new TypeError(
      `${field}: unsupported base model ${JSON.stringify(model)}; a bundled model (${accepted.map((m) => JSON.stringify(m)).join(", ")}) or a Hugging Face Hub id "<org>/<name>[@<revision>]"`,
    );
  }
}

/**
 * `name` as the server describes it, or a TypeError naming the models it
 * serves; null for a Hub id the server does not have yet (it downloads it for
 * the job when its --hub-models allows, and says why not otherwise).
 */
export function servedModel(
  models: readonly BaseModelInfo[],
  name: string,
  field = "model",
): BaseModelInfo | null {
  const model = models.find((m) => m.name === name);
  if (!model && !acceptedModels().includes(name) && isHubModelName(name)) return null;
  if (!model) {
    const served = models.map((m) => JSON.stringify(m.name)).join(", ") || "none";
    throw new TypeError(`${field}: the server does not serve ${JSON.stringify(name)} (it serves ${served})`);
  }
  return model;
}

/**
 * LoRA target modules checked against the model's own (`loraTargets` from the
 * server, e.g. Phi-3's "qkv_proj", "o_proj", "gate_up_proj", "down_proj"), or
 * "all-linear" alone; a TypeError names the entry and the valid names.
 */
export function assertLoraTargets(
  model: BaseModelInfo,
  targets: readonly string[],
  field = "lora.targetModules",
): void {
  targets.forEach((target, i) => {
    if (target === "all-linear" && targets.length > 1)
      throw new TypeError(`${field}[${i}]: "all-linear" means every module and cannot be listed with others`);
    if (target !== "all-linear" && !model.loraTargets.includes(target)) {
      const valid = model.loraTargets.map((t) => JSON.stringify(t)).join(", ");
      throw new TypeError(
        `${field}[${i}]: ${JSON.stringify(target)} is not a LoRA target of ${model.name} (${model.architecture}); valid: ${valid}, or "all-linear" alone`,
      );
    }
  });
}
