// The base model of a job being created (POST /v1/jobs), checked before the
// job is accepted: a bundled, local or cached model as it is; a Hub model the
// operator's policy allows, by its config.json alone (fetched when not
// cached); and every model against this machine's memory, so a model that
// cannot fit is refused here instead of crashing the training process. A
// model whose architecture the engine does not implement is accepted only for
// the torch backend's transformers + peft (transformers-fallback.ts).
import { dirname } from "node:path";
import { isEngineError, type ModelConfig, machineMemoryBytes } from "@svc/engine";
import type { BaseModelInfo, JobBackend, JobHyperparameters } from "@svc/wire";
import { engineHyperparameters } from "../engine-hyperparameters.js";
import { ApiError, badRequest } from "../http/api-error.js";
import { HubError, hubEndpoint, hubErrorStatus, parseHubName } from "../hub/index.js";
import { uncachedInfo } from "./hub-models.js";
import { estimateTrainingMemory, formatBytes } from "./memory-estimate.js";
import { describeConfig, type ModelRegistry } from "./model-registry.js";
import { checkTransformersFallback, uncachedTransformersOnlyReason } from "./transformers-fallback.js";

/** How long POST /v1/jobs waits for a Hub model's config.json. */
const CONFIG_TIMEOUT_MS = 30_000;

/** HubError → the API's error, naming the field. */
export function hubApiError(error: HubError, field: string): ApiError {
  return new ApiError(hubErrorStatus(error.code), error.code, `"${field}": ${error.message}`);
}

export async function checkJobBaseModel(
  models: ModelRegistry,
  name: string,
  hyperparameters: JobHyperparameters,
  backend: JobBackend,
  field = "baseModel",
): Promise<BaseModelInfo> {
  const model = (await lookupModel(models, name, field)) ?? (await hubModel(models, name, field));
  if (model.transformersOnly) {
    await checkTransformersFallback(model, hyperparameters, backend, field);
    return model.info;
  }
  checkMemory(model.info, model.config, hyperparameters, field);
  return model.info;
}

async function lookupModel(models: ModelRegistry, name: string, field: string) {
  try {
    return models.get(name);
  } catch (error) {
    throw badRequest(`"${field}": ${(error as Error).message}`, "unsupported_model");
  }
}

/** A Hub model that is not cached: allowed by the policy, and read from its config.json alone. */
async function hubModel(models: ModelRegistry, name: string, field: string) {
  if (!parseHubName(name)) throw badRequest(models.notServedMessage(name, field), "unknown_base_model");
  const refusal = models.hub.refusal(name);
  if (refusal) throw badRequest(`${models.notServedMessage(name, field)}; ${refusal}`, "hub_model_refused");
  const timeout = AbortSignal.timeout(CONFIG_TIMEOUT_MS);
  try {
    const { config, revision } = await models.hub.config(name, timeout);
    const description = `${config.architecture} from the Hugging Face Hub`;
    return {
      config,
      transformersOnly: null,
      info: uncachedInfo(describeConfig(name, config, description, "hub"), revision),
    };
  } catch (error) {
    if (timeout.aborted)
      throw new ApiError(
        502,
        "hub_unreachable",
        `"${field}": the Hub at ${hubEndpoint()} did not answer for ${name}'s config.json within ${CONFIG_TIMEOUT_MS / 1000} s (HF_ENDPOINT sets the Hub's address)`,
      );
    if (error instanceof HubError) throw hubApiError(error, field);
    // config.json names an architecture the engine does not implement: say how such a model trains.
    const fallback =
      isEngineError(error) && error.file ? uncachedTransformersOnlyReason(dirname(error.file), name) : null;
    throw badRequest(
      `"${field}": Hub model ${name}: ${(error as Error).message}${fallback ? `; ${fallback}` : ""}`,
      "unsupported_model",
    );
  }
}

function checkMemory(
  info: BaseModelInfo,
  config: ModelConfig,
  hyperparameters: JobHyperparameters,
  field: string,
): void {
  const estimate = estimateTrainingMemory(config, engineHyperparameters(hyperparameters));
  const available = machineMemoryBytes();
  if (estimate.totalBytes <= available) return;
  const parts = [
    `${formatBytes(estimate.weightBytes)} of F32 weights for ${info.parameters.toLocaleString("en-US")} parameters`,
    ...(estimate.packedBytes > 0
      ? [
          `${formatBytes(estimate.packedBytes)} of those weights packed for the matmuls (SVC_PACKED_WEIGHTS_MB)`,
        ]
      : []),
    `${formatBytes(estimate.loraBytes)} of LoRA state`,
    `${formatBytes(estimate.activationBytes)} of activations at this batchSize and maxLength`,
  ];
  throw badRequest(
    `"${field}": ${info.name} needs about ${formatBytes(estimate.totalBytes)} to train (${parts.join(", ")}) and this machine has ${formatBytes(available)}: choose a smaller model, or lower hyperparameters.batchSize or lora.maxLength (docs/hub.md#memory)`,
    "model_too_large",
  );
}
