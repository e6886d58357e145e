// Wire types of deployments (/v1/endpoints), their API keys and the keys'
// usage.

import type { AdapterRef, Iso8601 } from "./common.js";
import type { NumericRange } from "./limits.js";
import type { WeightFormat } from "./precision.js";

export type DeploymentTarget =
  | { kind: "adapter"; adapter: AdapterRef }
  | { kind: "base_model"; baseModel: string };

export type AuthMode = "fixed_api_key" | "none";

export type RunRetentionMode = "days" | "forever" | "none";

/**
 * A deployment served by an external OpenAI-compatible server (vLLM, the
 * llama.cpp server, another svc edge) that has the target loaded. `name` is an
 * upstream the server's operator declared (`svc server --upstream name=url`);
 * `model` is what that server calls the target (e.g. a vLLM LoRA module name).
 */
export interface DeploymentUpstream {
  name: string;
  model: string;
}

/** GET /v1/upstreams lists the names only: the operator's URLs and keys stay on the server. */
export interface UpstreamInfo {
  name: string;
}

export interface Deployment {
  id: string;
  projectId: string;
  slug: string;
  target: DeploymentTarget;
  /** null: this server's engine serves the target; otherwise the edge forwards each request there. */
  upstream: DeploymentUpstream | null;
  /**
   * The format this server's engine holds the base model's weights in for the
   * deployment ("fp32", "bf16", "int8", "q4_0"; docs/serving-formats.md); the
   * adapter stays fp32. null: the server's default (`svc server --weights`,
   * fp32 unless set). Always null with an upstream.
   */
  weightFormat: WeightFormat | null;
  authMode: AuthMode;
  enabled: boolean;
  /** Reserved for a future feature; always null. */
  customDomain: string | null;
  runRetentionMode: RunRetentionMode;
  runRetentionDays: number | null;
  /** Full serving URL: <scheme>://<slug>.<deployment domain>/v1/chat/completions */
  url: string;
  createdAt: Iso8601;
  updatedAt: Iso8601;
}

export interface CreateDeploymentRequest {
  slug: string;
  target: DeploymentTarget;
  upstream?: DeploymentUpstream | null;
  weightFormat?: WeightFormat | null;
  authMode?: AuthMode;
  enabled?: boolean;
  runRetentionMode?: RunRetentionMode;
  runRetentionDays?: number | null;
}

export interface UpdateDeploymentRequest {
  target?: DeploymentTarget;
  /** null: serve with this server's engine again. */
  upstream?: DeploymentUpstream | null;
  /** null: the server's default format again. */
  weightFormat?: WeightFormat | null;
  authMode?: AuthMode;
  enabled?: boolean;
  runRetentionMode?: RunRetentionMode;
  runRetentionDays?: number | null;
}

export interface DeploymentKey {
  id: string;
  deploymentId: string;
  label: string;
  prefix: string;
  enabled: boolean;
  createdAt: Iso8601;
  lastUsedAt: Iso8601 | null;
  /** Totals of the last KEY_USAGE_SUMMARY_DAYS UTC days, today included. */
  usage: KeyUsageSummary;
}

/**
 * What a key used: edge requests served (after authentication and the rate
 * limit, failed ones included) and the tokens their generations reported.
 */
export interface KeyUsageTotals {
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

export interface KeyUsageSummary extends KeyUsageTotals {
  /** How many UTC days the totals cover, today included (KEY_USAGE_SUMMARY_DAYS). */
  days: number;
}

/** One UTC day of a key's usage. */
export interface KeyUsageDay extends KeyUsageTotals {
  /** YYYY-MM-DD (UTC). */
  day: string;
}

/** GET /v1/endpoints/:id/keys/:keyId/usage?days=N → { usage }. */
export interface DeploymentKeyUsage {
  keyId: string;
  /** First and last day covered (YYYY-MM-DD, UTC); `to` is today. */
  from: string;
  to: string;
  totals: KeyUsageTotals;
  /** One row per day from `from` to `to`, oldest first; days without use hold zeros. */
  daily: KeyUsageDay[];
}

export const KEY_USAGE_SUMMARY_DAYS = 30;
/** The days a usage query may ask for: 1 to a leap year. */
export const KEY_USAGE_DAYS_RANGE: NumericRange = { integer: true, min: 1, max: 366 };

/** The response that issues a key is the only place the plaintext ever appears. */
export interface IssuedDeploymentKey extends DeploymentKey {
  plaintext: string;
}
