// svc keys issue <deployment> --label <label> | list <deployment> | revoke <deployment> <keyId>,
// and svc keys project issue|list|revoke for the project's API keys (project-keys.ts).

import { KEY_USAGE_SUMMARY_DAYS } from "@svc/wire";
import { type Command, parse, requirePositional, UsageError } from "../args.js";
import { printJson, table } from "../output.js";
import { openDeployment } from "./deploy.js";
import { requireLabel } from "./key-label.js";
import { projectKeys } from "./project-keys.js";

/** The 30-day totals of GET /v1/endpoints/:id/keys (KEY_USAGE_SUMMARY_DAYS). */
const USAGE_COLUMNS = [
  `REQUESTS ${KEY_USAGE_SUMMARY_DAYS}D`,
  `PROMPT TOKENS ${KEY_USAGE_SUMMARY_DAYS}D`,
  `COMPLETION TOKENS ${KEY_USAGE_SUMMARY_DAYS}D`,
];

export const keysCommand: Command = {
  name: "keys",
  summary: "issue, list or revoke a deployment's or the project's API keys",
  usage: [
    "Usage: svc keys issue <deployment> --label <label> [--json]   prints the key once",
    "       svc keys list <deployment> [--json]                     lastUsedAt and 30-day usage",
    "       svc keys revoke <deployment> <keyId>",
    "       svc keys project issue --label <label> [--json]   a project API key, for the",
    "                                                       OpenAI API routes; printed once",
    "       svc keys project list [--json]",
    "       svc keys project revoke <keyId>",
    "",
    "<deployment> is a deployment id or slug. Usage columns count the edge requests",
    "each key made in the last 30 days (UTC, today included) and their tokens.",
  ].join("\n"),
  async run(argv) {
    const { values, positionals } = parse(argv, { label: { type: "string" }, json: { type: "boolean" } }, 3);
    const sub = requirePositional(positionals, 0, "subcommand (issue, list, revoke or project)");
    if (sub === "project") return projectKeys(positionals.slice(1), values);
    if (!["issue", "list", "revoke"].includes(sub)) throw new UsageError(`unknown subcommand "${sub}"`);
    const ref = requirePositional(positionals, 1, "deployment id or slug");
    const { client, deployment } = await openDeployment(ref);
    if (sub === "issue") {
      const key = await client.issueDeploymentKey(deployment.id, { label: requireLabel(values) });
      if (values.json) printJson(key);
      else {
        process.stdout.write(`${key.plaintext}\n`);
        process.stderr.write(
          `issued key ${key.id} (${key.label}); the key above is shown once, store it now\n`,
        );
      }
      return 0;
    }
    if (sub === "list") {
      const keys = await client.listDeploymentKeys(deployment.id);
      if (values.json) printJson(keys);
      else if (keys.length === 0) process.stdout.write("No keys\n");
      else {
        const rows = keys.map((k) => [
          k.id,
          k.label,
          k.prefix,
          k.enabled ? "enabled" : "revoked",
          k.lastUsedAt ?? "never",
          String(k.usage.requests),
          String(k.usage.promptTokens),
          String(k.usage.completionTokens),
        ]);
        const header = ["ID", "LABEL", "PREFIX", "STATE", "LAST USED", ...USAGE_COLUMNS];
        process.stdout.write(`${table(rows, header)}\n`);
      }
      return 0;
    }
    const keyId = requirePositional(positionals, 2, "key id");
    const key = await client.revokeDeploymentKey(deployment.id, keyId);
    process.stdout.write(`revoked key ${key.id} (${key.label})\n`);
    return 0;
  },
};
