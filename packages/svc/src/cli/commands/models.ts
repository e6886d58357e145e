// svc models [list] | pull <id> | rm <id>: the base models. list asks the
// server what it serves (bundled, --model folders, Hub models in the cache);
// pull and rm act on this machine's Hugging Face cache, the one a local server
// and Python tools share (docs/hub.md); pull --server asks the server to
// download into its own cache (POST /v1/models/pull) and shows its progress.
import { setTimeout as sleep } from "node:timers/promises";
import { readModelConfig } from "@svc/engine";
import type { ModelPull } from "@svc/wire";
import { openSession } from "../../sdk/session.js";
import { type Command, parse, requirePositional, UsageError } from "../args.js";
import { DownloadPrinter, formatBytes } from "../download-progress.js";
import { printJson, table } from "../output.js";

type HubModule = typeof import("@svc/server")["hub"];

/** The server's Hub module, loaded when a command needs it (the CLI starts without the server's code). */
async function hubModule(): Promise<HubModule> {
  return (await import("@svc/server")).hub;
}

const parameters = (n: number) =>
  n >= 1e9 ? `${(n / 1e9).toFixed(1)}B` : n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : `${(n / 1e3).toFixed(1)}K`;

async function hubRef(hub: HubModule, id: string) {
  const ref = hub.parseHubName(id);
  if (!ref)
    throw new UsageError(
      `${JSON.stringify(id)} is not a Hugging Face Hub model id: <org>/<name>[@<revision>]`,
    );
  return ref;
}

async function pull(id: string): Promise<number> {
  const hub = await hubModule();
  const ref = await hubRef(hub, id);
  const printer = new DownloadPrinter(process.stderr, Boolean(process.stderr.isTTY));
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once("SIGINT", onSigint);
  try {
    const snapshot = await hub.ensureSnapshot({
      repo: ref.repo,
      kind: "model",
      revision: ref.revision,
      wanted: hub.isModelFile,
      complete: hub.modelSnapshotComplete,
      refresh: true,
      signal: controller.signal,
      onProgress: (files, revision) =>
        printer.progress({
          kind: "model",
          repo: ref.repo,
          revision,
          files: files.map((f) => ({ name: f.file, bytesDone: f.bytesDone, bytesTotal: f.bytesTotal })),
          bytesDone: files.reduce((sum, f) => sum + f.bytesDone, 0),
          bytesTotal: files.reduce((sum, f) => sum + f.bytesTotal, 0),
        }),
    });
    printer.done(snapshot);
    try {
      const config = readModelConfig(snapshot.dir);
      process.stdout.write(
        `${hub.hubName(ref)}: ${config.architecture}, commit ${snapshot.revision}, in ${snapshot.dir}\n`,
      );
    } catch (error) {
      const server = await import("@svc/server");
      const raw = server.readRawConfig(snapshot.dir);
      if (raw && !server.engineImplements(raw)) {
        process.stdout.write(
          `${hub.hubName(ref)}: ${String((raw.architectures as unknown[] | undefined)?.[0] ?? raw.model_type)}, commit ${snapshot.revision}, in ${snapshot.dir}\n` +
            `svc's engine does not implement this architecture: it trains on the PyTorch backend with ${server.TRANSFORMERS_FALLBACK_SETTINGS} and is not served (${server.TRANSFORMERS_FALLBACK_DOCS})\n`,
        );
        return 0;
      }
      throw new Error(
        `${hub.hubName(ref)} is cached in ${snapshot.dir}, but svc cannot train on it: ${(error as Error).message}`,
      );
    }
    return 0;
  } finally {
    process.off("SIGINT", onSigint);
  }
}

/** How often `pull --server` asks the server how its pull stands. */
const PULL_POLL_MS = 500;

/** The server downloads `id` into its cache; Ctrl-C stops watching, not the server's download. */
async function pullOnServer(id: string): Promise<number> {
  const { client } = await openSession();
  const printer = new DownloadPrinter(process.stderr, Boolean(process.stderr.isTTY));
  const { repo } = await hubRef(await hubModule(), id);
  let pull: ModelPull = await client.pullModel(id);
  while (pull.status === "downloading") {
    if (pull.revision && pull.bytesTotal > 0)
      printer.progress({
        kind: "model",
        repo,
        revision: pull.revision,
        files: pull.files,
        bytesDone: pull.bytesDone,
        bytesTotal: pull.bytesTotal,
      });
    await sleep(PULL_POLL_MS);
    pull = await client.getModelPull(pull.id);
  }
  if (pull.status === "failed") throw new Error(pull.error?.message ?? `the server's pull of ${id} failed`);
  const revision = pull.revision ?? "";
  printer.done({ kind: "model", repo, revision, bytes: pull.bytesTotal, fromCache: pull.fromCache ?? false });
  process.stdout.write(`${pull.model}: commit ${revision}, in the server's Hugging Face cache\n`);
  return 0;
}

async function remove(id: string): Promise<number> {
  const hub = await hubModule();
  const ref = await hubRef(hub, id);
  const cache = new hub.RepoCache(hub.hubCacheDir(), "model", ref.repo);
  if (!cache.exists()) throw new Error(`${ref.repo} is not in the Hugging Face cache (${hub.hubCacheDir()})`);
  const before = cache.blobBytes();
  if (id.includes("@")) {
    const sha = cache.resolveRef(ref.revision);
    if (!sha || !cache.snapshots().some((s) => s.sha === sha))
      throw new Error(`${id}: no such revision in the Hugging Face cache (${cache.root})`);
    cache.removeSnapshot(sha);
    process.stdout.write(
      `Removed ${ref.repo} at ${sha} (${formatBytes(before - cache.blobBytes())} freed)\n`,
    );
  } else {
    cache.remove();
    process.stdout.write(`Removed ${ref.repo} from ${hub.hubCacheDir()} (${formatBytes(before)} freed)\n`);
  }
  return 0;
}

export const modelsCommand: Command = {
  name: "models",
  summary: "list the base models; pull or remove Hugging Face Hub models in the local cache",
  usage: [
    "Usage: svc models [list] [--json]   the base models the server serves: bundled, --model folders and",
    "                                     Hub models in the Hugging Face cache, with sizes and revisions",
    "       svc models pull <org>/<name>[@<revision>] [--server]",
    "                                     download a Hub model's config, tokenizer and safetensors into",
    "                                     the Hugging Face cache (resumes an interrupted download);",
    "                                     --server: into the server's cache, by the server (its policy)",
    "       svc models rm <org>/<name>[@<revision>]",
    "                                     remove a Hub model (or one revision) from the cache",
    "",
    "Environment: HF_HOME / HF_HUB_CACHE (the cache, default ~/.cache/huggingface/hub), HF_ENDPOINT,",
    "HF_TOKEN (gated and private models; or the token file $HF_HOME/token), HF_HUB_OFFLINE=1. See docs/hub.md.",
  ].join("\n"),
  async run(argv) {
    const { values, positionals } = parse(
      argv,
      { json: { type: "boolean" }, server: { type: "boolean" } },
      2,
    );
    const sub = positionals[0] ?? "list";
    if (sub === "pull") {
      const id = requirePositional(positionals, 1, "model id");
      return values.server ? pullOnServer(id) : pull(id);
    }
    if (values.server) throw new UsageError("--server goes with pull");
    if (sub === "rm") return remove(requirePositional(positionals, 1, "model id"));
    if (sub !== "list") throw new UsageError(`unknown subcommand "${sub}" (list, pull or rm)`);
    const models = await (await openSession()).client.listModels();
    if (values.json) {
      printJson(models);
      return 0;
    }
    const rows = models.map((m) => [
      m.name,
      m.source ?? "",
      m.family,
      parameters(m.parameters),
      String(m.contextLength),
      m.sizeBytes === null || m.sizeBytes === undefined ? "-" : formatBytes(m.sizeBytes),
      m.revision ? m.revision.slice(0, 12) : "-",
    ]);
    process.stdout.write(
      `${table(rows, ["NAME", "SOURCE", "FAMILY", "PARAMS", "CONTEXT", "SIZE", "REVISION"])}\n`,
    );
    return 0;
  },
};
