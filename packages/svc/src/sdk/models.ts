// The base models the SDK accepts, typed so a wrong name fails to compile and,
// in untyped or bundled code, throws when the trainer is constructed. The
// server's GET /v1/models is the runtime truth of what it can train on.

/** The bundled base model(s) (models/ in this repository). */
export const SUPPORTED_MODELS = ["svc/pico-llama"] as const;

export type SupportedModel = (typeof SUPPORTED_MODELS)[number];

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

export function assertSupportedModel(model: unknown, field = "model"): asserts model is SupportedModel {
  const accepted = acceptedModels();
  if (typeof model !== "string" || !accepted.includes(model)) {
    throw new TypeError(
      `${field}: unsupported base model ${JSON.stringify(model)}; supported: ${accepted.map((m) => JSON.stringify(m)).join(", ")}`,
    );
  }
}
