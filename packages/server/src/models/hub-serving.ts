// What a request to serve a Hub model that is not in the cache gets
// (docs/hub.md#serving-a-hub-model). A chat or a deployment must not wait for
// a download, so it is answered at once: where the server's policy lets it
// download the model, the request starts (or joins) a pull and answers 409
// model_downloading with the pull's id and progress, so a later try works;
// where it does not, a 400 naming the rule. Routes that only read a model
// (dataset profiles, exports) start nothing: their 400 says how to pull it.
import { ApiError, badRequest, conflict } from "../http/api-error.js";
import { hubErrorStatus } from "../hub/index.js";
import { formatBytes } from "./memory-estimate.js";
import { RETRY_FAILED_AFTER_MS } from "./model-pulls.js";
import type { ModelRegistry } from "./model-registry.js";

export function uncachedHubModel(
  models: ModelRegistry,
  name: string,
  field: string,
  pull: boolean,
): ApiError {
  const notServed = models.notServedMessage(name, field);
  const refusal = models.hub.refusal(name);
  if (refusal)
    return badRequest(
      `${notServed}; ${refusal}. A Hub model is served once it is in the server's Hugging Face cache: \`svc models pull ${name}\` on the server's machine puts it there`,
      "unknown_base_model",
    );
  const latest = models.pulls.latestOf(name);
  const failedAt = latest?.status === "failed" ? Date.parse(latest.finishedAt!) : Number.NaN;
  if (pull && latest?.error && Date.now() - failedAt < RETRY_FAILED_AFTER_MS)
    return new ApiError(
      hubErrorStatus(latest.error.code),
      latest.error.code,
      `"${field}": Hub model ${name} could not be downloaded (pull ${latest.id}): ${latest.error.message}`,
    );
  const running = pull ? models.pulls.start(name, field, "serve") : null;
  if (!running) {
    const how =
      latest?.status === "downloading"
        ? `the server is downloading it (pull ${latest.id}): try again when GET /v1/models/pull/${latest.id} says "completed"`
        : `${latest?.error ? `its last pull failed (${latest.error.message}); ` : ""}download it with POST /v1/models/pull {"model":"${name}"} (Studio's Download button, or \`svc models pull ${name} --server\`)`;
    return badRequest(
      `${notServed}; a Hub model is served once it is in the server's Hugging Face cache: ${how}`,
      "unknown_base_model",
    );
  }
  const progress =
    running.bytesTotal > 0
      ? `${formatBytes(running.bytesDone)} of ${formatBytes(running.bytesTotal)}`
      : "starting";
  return conflict(
    `"${field}": Hub model ${name} is not in this server's Hugging Face cache yet; the server is downloading it (pull ${running.id}, ${progress}): try again when GET /v1/models/pull/${running.id} says "completed"`,
    "model_downloading",
  );
}
