// svc deploy create | list | show | update | delete: a deployment is a URL
// <slug>.<deployment domain> serving chat completions from a target.
import {
  type AuthMode,
  type Deployment,
  type DeploymentTarget,
  type DeploymentUpstream,
  type RunRetentionMode,
  type UpdateDeploymentRequest,
  WEIGHT_FORMATS,
  type WeightFormat,
} from "@svc/wire";
import type { CloudApiClient } from "../../sdk/client.js";
import { openExistingScopedSession, openScopedSession } from "../../sdk/session.js";
import {
  type Command,
  intOption,
  oneOf,
  type Parsed,
  parse,
  requirePositional,
  stringOption,
  UsageError,
} from "../args.js";
import { printJson, shortId, table } from "../output.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A deployment by id, or by slug among the project's deployments. */
async function resolveDeployment(client: CloudApiClient, ref: string): Promise<Deployment> {
  if (UUID.test(ref)) return client.getDeployment(ref);
  const found = (await client.listDeployments()).find((d) => d.slug === ref || d.id === ref);
  if (!found) throw new Error(`no deployment with id or slug "${ref}" in this project`);
  return found;
}

/** The project's scoped client and the deployment ref names: by id, or by slug. */
export async function openDeployment(
  ref: string,
): Promise<{ client: CloudApiClient; deployment: Deployment }> {
  const session = await openExistingScopedSession();
  if (!session)
    throw new Error("no project yet: .svc/state.json does not exist, so there are no deployments");
  return { client: session.scoped, deployment: await resolveDeployment(session.scoped, ref) };
}

export function targetSummary(t: DeploymentTarget): string {
  if (t.kind === "base_model") return `Base model: ${t.baseModel}`;
  if (t.adapter.kind === "final") return `Final adapter (job ${shortId(t.adapter.jobId)})`;
  return `Checkpoint step ${t.adapter.step} (job ${shortId(t.adapter.jobId)})`;
}

/** --job <id> [--step N] | --base-model <name> → a target, or undefined when none was given. */
export function targetFromFlags(values: Parsed["values"]): DeploymentTarget | undefined {
  const job = stringOption(values, "job");
  const baseModel = stringOption(values, "base-model");
  const step = intOption(values, "step", 1);
  if (job && baseModel) throw new UsageError("give either --job or --base-model, not both");
  if (step !== undefined && !job) throw new UsageError("--step needs --job");
  if (job) {
    return step === undefined
      ? { kind: "adapter", adapter: { kind: "final", jobId: job } }
      : { kind: "adapter", adapter: { kind: "checkpoint", jobId: job, step } };
  }
  if (baseModel) return { kind: "base_model", baseModel };
  return undefined;
}

/**
 * --upstream <name> --upstream-model <model> → forward to that upstream;
 * --upstream none → serve with the server's engine; neither → undefined.
 */
export function upstreamFromFlags(values: Parsed["values"]): DeploymentUpstream | null | undefined {
  const name = stringOption(values, "upstream");
  const model = stringOption(values, "upstream-model");
  if (name === undefined) {
    if (model !== undefined) throw new UsageError("--upstream-model needs --upstream <name>");
    return undefined;
  }
  if (name === "none") {
    if (model !== undefined) throw new UsageError("--upstream none takes no --upstream-model");
    return null;
  }
  if (model === undefined)
    throw new UsageError("--upstream needs --upstream-model <the name the upstream serves the target under>");
  return { name, model };
}

/** --weights <format> → that format; --weights default → null (the server's); absent → undefined. */
export function weightsFromFlags(values: Parsed["values"]): WeightFormat | null | undefined {
  const value = oneOf<WeightFormat | "default">(stringOption(values, "weights"), "weights", [
    ...WEIGHT_FORMATS,
    "default",
  ]);
  return value === "default" ? null : value;
}

const servedBy = (d: Deployment) =>
  d.upstream ? `upstream ${d.upstream.name} as ${JSON.stringify(d.upstream.model)}` : "this server's engine";

function describe(d: Deployment): string {
  return [
    `id         ${d.id}`,
    `slug       ${d.slug}`,
    `url        ${d.url}`,
    `target     ${targetSummary(d.target)}`,
    `served by  ${servedBy(d)}`,
    ...(d.upstream ? [] : [`weights    ${d.weightFormat ?? "the server's default (svc server --weights)"}`]),
    `auth       ${d.authMode}`,
    `enabled    ${d.enabled}`,
    `retention  ${d.runRetentionMode}${d.runRetentionDays === null ? "" : ` (${d.runRetentionDays} days)`}`,
    ...clientBaseUrls(d).map((u) => `base URL   ${u}`),
  ].join("\n");
}

/**
 * Base URLs to hand an OpenAI client (it appends /chat/completions itself). For a
 * *.localhost domain also the /d/<slug>/v1 form on 127.0.0.1: glibc's resolver,
 * which Node and Python use, does not resolve *.localhost.
 */
export function clientBaseUrls(d: Deployment): string[] {
  const hostForm = d.url.replace(/\/chat\/completions$/, "");
  const url = new URL(d.url);
  if (!url.hostname.endsWith(".localhost")) return [hostForm];
  return [hostForm, `${url.protocol}//127.0.0.1${url.port ? `:${url.port}` : ""}/d/${d.slug}/v1`];
}

const OPTIONS = {
  slug: { type: "string" },
  job: { type: "string" },
  step: { type: "string" },
  "base-model": { type: "string" },
  upstream: { type: "string" },
  "upstream-model": { type: "string" },
  weights: { type: "string" },
  auth: { type: "string" },
  enable: { type: "boolean" },
  disable: { type: "boolean" },
  "retention-mode": { type: "string" },
  "retention-days": { type: "string" },
  json: { type: "boolean" },
} as const;

export const deployCommand: Command = {
  name: "deploy",
  summary: "create, list, show, update or delete deployments (OpenAI-compatible endpoints)",
  usage: [
    "Usage: svc deploy create --slug <slug> (--job <jobId> [--step <n>] | --base-model <name>)",
    "                         [--upstream <name> --upstream-model <model>] [--weights fp32|bf16|int8|q4_0]",
    "                         [--auth fixed_api_key|none] [--disable]",
    "       svc deploy [list] [--json]",
    "       svc deploy show <id|slug> [--json]",
    "       svc deploy update <id|slug> [--job <jobId> [--step <n>] | --base-model <name>]",
    "                         [--upstream <name> --upstream-model <model> | --upstream none]",
    "                         [--weights fp32|bf16|int8|q4_0|default]",
    "                         [--auth fixed_api_key|none] [--enable|--disable]",
    "                         [--retention-mode days|forever|none] [--retention-days <n>]",
    "       svc deploy delete <id|slug>",
    "",
    "A deployment serves POST <url>/v1/chat/completions. --job deploys the job's final",
    "adapter, --job with --step one of its checkpoints, --base-model the base model.",
    "--upstream forwards its requests to an external OpenAI-compatible server that the",
    "server's operator declared (svc server --upstream name=url) and that serves the",
    "target as --upstream-model; the deployment's keys and switches stay here.",
    "--weights is the format the server's engine holds the base weights in for it",
    "(default: the server's, svc server --weights; docs/serving-formats.md).",
  ].join("\n"),
  async run(argv) {
    const { values, positionals } = parse(argv, OPTIONS, 2);
    const sub = positionals[0] ?? "list";
    const auth = oneOf<AuthMode>(stringOption(values, "auth"), "auth", ["fixed_api_key", "none"]);
    if (values.enable && values.disable) throw new UsageError("give --enable or --disable, not both");

    if (sub === "create") {
      const slug = stringOption(values, "slug");
      if (!slug) throw new UsageError("--slug is required");
      const target = targetFromFlags(values);
      if (!target)
        throw new UsageError("a target is required: --job <jobId> [--step <n>] or --base-model <name>");
      const upstream = upstreamFromFlags(values);
      const { scoped } = await openScopedSession();
      const d = await scoped.createDeployment({
        slug,
        target,
        upstream,
        weightFormat: weightsFromFlags(values),
        authMode: auth,
        enabled: values.disable ? false : undefined,
      });
      if (values.json) printJson(d);
      else process.stdout.write(`created deployment ${d.slug}\n${describe(d)}\n`);
      return 0;
    }
    if (sub === "list") {
      const session = await openExistingScopedSession();
      const list = session ? await session.scoped.listDeployments() : [];
      if (values.json) printJson(list);
      else if (list.length === 0) process.stdout.write("No deployments\n");
      else {
        const rows = list.map((d) => [
          d.slug,
          targetSummary(d.target),
          d.authMode,
          d.enabled ? "enabled" : "disabled",
          d.url,
        ]);
        process.stdout.write(`${table(rows, ["SLUG", "TARGET", "AUTH", "STATE", "URL"])}\n`);
      }
      return 0;
    }
    if (!["show", "update", "delete"].includes(sub)) throw new UsageError(`unknown subcommand "${sub}"`);
    const ref = requirePositional(positionals, 1, "deployment id or slug");
    const { client, deployment: d } = await openDeployment(ref);
    if (sub === "show") {
      if (values.json) printJson(d);
      else process.stdout.write(`${describe(d)}\n`);
      return 0;
    }
    if (sub === "delete") {
      await client.deleteDeployment(d.id);
      process.stdout.write(`deleted deployment ${d.slug}\n`);
      return 0;
    }
    const patch: UpdateDeploymentRequest = {};
    const target = targetFromFlags(values);
    if (target) patch.target = target;
    const upstream = upstreamFromFlags(values);
    if (upstream !== undefined) patch.upstream = upstream;
    const weights = weightsFromFlags(values);
    if (weights !== undefined) patch.weightFormat = weights;
    if (auth) patch.authMode = auth;
    if (values.enable) patch.enabled = true;
    if (values.disable) patch.enabled = false;
    const mode = oneOf<RunRetentionMode>(stringOption(values, "retention-mode"), "retention-mode", [
      "days",
      "forever",
      "none",
    ]);
    if (mode) patch.runRetentionMode = mode;
    const days = intOption(values, "retention-days", 1, 3650);
    if (days !== undefined) patch.runRetentionDays = days;
    if (Object.keys(patch).length === 0)
      throw new UsageError(
        "nothing to update: give a target, --upstream, --weights, --auth, --enable/--disable or retention",
      );
    const updated = await client.updateDeployment(d.id, patch);
    if (values.json) printJson(updated);
    else process.stdout.write(`updated deployment ${updated.slug}\n${describe(updated)}\n`);
    return 0;
  },
};
