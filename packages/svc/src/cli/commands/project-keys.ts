// svc keys project issue --label <label> | list | revoke <keyId>: the API keys
// of the project in .svc/state.json, for the OpenAI API routes
// (docs/openai-fine-tuning.md#project-api-keys). A key is printed once, when issued.
import { openExistingScopedSession } from "../../sdk/session.js";
import { type Parsed, requirePositional, UsageError } from "../args.js";
import { printJson, table } from "../output.js";
import { requireLabel } from "./key-label.js";

export async function projectKeys(positionals: string[], values: Parsed["values"]): Promise<number> {
  const sub = requirePositional(positionals, 0, "project subcommand (issue, list or revoke)");
  if (!["issue", "list", "revoke"].includes(sub)) throw new UsageError(`unknown subcommand "project ${sub}"`);
  const session = await openExistingScopedSession();
  if (!session)
    throw new Error(
      "no project yet: .svc/state.json is created by the first svc start (or svc deploy create)",
    );
  const client = session.scoped;
  if (sub === "issue") {
    const key = await client.issueProjectKey({ label: requireLabel(values) });
    if (values.json) printJson(key);
    else {
      process.stdout.write(`${key.plaintext}\n`);
      process.stderr.write(
        `issued project key ${key.id} (${key.label}); the key above is shown once, store it now\n`,
      );
    }
    return 0;
  }
  if (sub === "list") {
    const keys = await client.listProjectKeys();
    if (values.json) printJson(keys);
    else if (keys.length === 0) process.stdout.write("No project keys\n");
    else {
      const rows = keys.map((k) => [
        k.id,
        k.label,
        k.prefix,
        k.enabled ? "enabled" : "revoked",
        k.lastUsedAt ?? "never",
      ]);
      process.stdout.write(`${table(rows, ["ID", "LABEL", "PREFIX", "STATE", "LAST USED"])}\n`);
    }
    return 0;
  }
  const key = await client.revokeProjectKey(requirePositional(positionals, 1, "key id"));
  process.stdout.write(`revoked project key ${key.id} (${key.label})\n`);
  return 0;
}
