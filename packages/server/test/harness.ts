// Test harness: the server as a real child process on ephemeral ports, a
// fresh PostgreSQL database per run (postgres-cluster.ts), a tiny random
// model, and small HTTP and SSE helpers over fetch.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRandomModel } from "@svc/engine/testing";
import OpenAI from "openai";
import { eventsUntilEnd } from "./job-events.js";
import { createPgDatabase } from "./postgres-cluster.js";

export * from "./job-events.js";
export { createPgDatabase } from "./postgres-cluster.js";

const here = dirname(fileURLToPath(import.meta.url));
/** packages/server/dist/src/main.js */
export const MAIN_JS = join(here, "../src/main.js");
export const TINY_MODEL = "test/tiny";

export type Backend = "sqlite" | "postgres";

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `svc-${prefix}-`));
}

let tinyModelDir: Promise<string> | null = null;
/** A random tiny Llama model folder (with tokenizer), made once per test process. */
export function tinyModel(): Promise<string> {
  tinyModelDir ??= (async () => {
    const dir = join(tempDir("model"), "tiny");
    await createRandomModel(dir, { seed: 1 });
    return dir;
  })();
  return tinyModelDir;
}

export interface ServerProcess {
  apiUrl: string;
  edgeUrl: string;
  deploymentDomain: string;
  proc: ChildProcess;
  output(): string;
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
  kill9(): Promise<void>;
}

export function waitForExit(proc: ChildProcess): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => proc.once("exit", (code) => resolve(code)));
}

/** Spawns `main.js <command> ...args` and waits for its svc-<command>-ready line. */
export async function spawnReady(
  command: "server" | "worker",
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ proc: ChildProcess; ready: Record<string, unknown>; output(): string }> {
  const proc = spawn(process.execPath, [MAIN_JS, command, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
  let output = "";
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} did not become ready:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = new RegExp(`svc-${command}-ready (\\{.*\\})`).exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(JSON.parse(match[1]) as Record<string, unknown>);
      }
    };
    proc.stdout!.on("data", onData);
    proc.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited with ${code} before it was ready:\n${output}`));
    });
  });
  return { proc, ready, output: () => output };
}

export interface StartOptions {
  dataDir?: string;
  databaseUrl?: string | null;
  args?: string[];
  env?: NodeJS.ProcessEnv;
}

export async function startServerProcess(options: StartOptions = {}): Promise<ServerProcess> {
  const args = [
    "--port",
    "0",
    "--edge-port",
    "0",
    "--data-dir",
    options.dataDir ?? tempDir("data"),
    "--bundled-models",
    "none",
    "--model",
    `${TINY_MODEL}=${await tinyModel()}`,
    // A suite mints many anonymous identities from one address; rate-limits.test.ts checks the limits.
    "--rate-limit-signup",
    "off",
    "--sse-keepalive-ms",
    "300",
    ...(options.databaseUrl ? ["--database-url", options.databaseUrl] : []),
    ...(options.args ?? []),
  ];
  const { proc, ready, output } = await spawnReady("server", args, options.env);
  return {
    apiUrl: ready.apiUrl as string,
    edgeUrl: ready.edgeUrl as string,
    deploymentDomain: ready.deploymentDomain as string,
    proc,
    output,
    async stop() {
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill("SIGTERM");
      return waitForExit(proc);
    },
    async kill9() {
      proc.kill("SIGKILL");
      await waitForExit(proc);
    },
  };
}

/** A server for a whole test file, on the chosen backend; cleanup() stops it and drops its database. */
export async function serverFor(
  backend: Backend,
  args: string[] = [],
  env?: NodeJS.ProcessEnv,
): Promise<ServerProcess & { dataDir: string; databaseUrl: string | null; cleanup(): Promise<void> }> {
  const database = backend === "postgres" ? await createPgDatabase() : null;
  const dataDir = tempDir("data");
  const server = await startServerProcess({ dataDir, databaseUrl: database?.url, args, env });
  return {
    ...server,
    dataDir,
    databaseUrl: database?.url ?? null,
    async cleanup() {
      await server.stop();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------- HTTP

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies freely
export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies freely
export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; json?: unknown; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | Buffer | undefined = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers["content-type"] ??= "application/json";
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === "" ? null : JSON.parse(text);
  } catch {}
  return { status: response.status, body: parsed as T, headers: response.headers };
}

export interface Identity {
  token: string;
  orgSlug: string;
  projectSlug: string;
  projectId: string;
  /** ?orgSlug=&projectSlug= */
  scope: string;
}

/** An anonymous identity with one project. */
export async function newIdentity(apiUrl: string, projectSlug = "demo"): Promise<Identity> {
  const auth = await call(apiUrl, "POST", "/v1/auth/anonymous");
  if (auth.status !== 201) throw new Error(`anonymous auth: ${auth.status}`);
  const token = auth.body.token as string;
  const orgSlug = auth.body.org.slug as string;
  const project = await call(apiUrl, "POST", "/v1/projects", { token, json: { orgSlug, slug: projectSlug } });
  if (project.status !== 201)
    throw new Error(`create project: ${project.status} ${JSON.stringify(project.body)}`);
  return {
    token,
    orgSlug,
    projectSlug,
    projectId: project.body.project.id,
    scope: `orgSlug=${orgSlug}&projectSlug=${projectSlug}`,
  };
}

export function chatJsonl(rows: number): string {
  const lines: string[] = [];
  for (let i = 0; i < rows; i++) {
    lines.push(
      JSON.stringify({
        messages: [
          { role: "user", content: `What is ${i} plus one?` },
          { role: "assistant", content: `${i + 1}` },
        ],
      }),
    );
  }
  return `${lines.join("\n")}\n`;
}

export async function uploadDataset(
  apiUrl: string,
  id: Identity,
  text = chatJsonl(16),
  name = "train.jsonl",
) {
  const reply = await call(apiUrl, "POST", `/v1/datasets?${id.scope}&name=${name}`, {
    token: id.token,
    body: text,
    headers: { "content-type": "application/x-ndjson" },
  });
  if (reply.status !== 201) throw new Error(`upload: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.dataset as { id: string; rows: number };
}

export async function createJob(
  apiUrl: string,
  id: Identity,
  datasetId: string,
  hyperparameters: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) {
  const reply = await call(apiUrl, "POST", `/v1/jobs?${id.scope}`, {
    token: id.token,
    json: {
      name: "tiny run",
      baseModel: TINY_MODEL,
      datasetId,
      hyperparameters: {
        lora: { r: 4, alpha: 8 },
        maxSteps: 4,
        batchSize: 2,
        saveSteps: 2,
        learningRate: 1e-3,
        ...hyperparameters,
      },
      ...extra,
    },
  });
  if (reply.status !== 201) throw new Error(`create job: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.job as { id: string; status: string };
}

/** A fresh identity whose finished job ran 2 steps and saved a checkpoint at step 1. */
export async function identityWithFinishedJob(apiUrl: string): Promise<{ id: Identity; jobId: string }> {
  const id = await newIdentity(apiUrl);
  const dataset = await uploadDataset(apiUrl, id);
  const jobId = (await createJob(apiUrl, id, dataset.id, { maxSteps: 2, saveSteps: 1 })).id;
  await eventsUntilEnd(apiUrl, id.token, jobId);
  return { id, jobId };
}

export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---------------------------------------------------------------- deployments

/** A deployment of the tiny base model, with one issued key (its plaintext included). */
export async function deploymentWithKey(apiUrl: string, id: Identity, slug: string) {
  const deployment = (
    await call(apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
      token: id.token,
      json: { slug, target: { kind: "base_model", baseModel: TINY_MODEL } },
    })
  ).body.deployment as { id: string; slug: string };
  const key = (
    await call(apiUrl, "POST", `/v1/endpoints/${deployment.id}/keys`, {
      token: id.token,
      json: { label: "k" },
    })
  ).body.key as { id: string; plaintext: string };
  return { deployment, key };
}

/** The official OpenAI client on a deployment at an edge (path addressing, no retries). */
export const edgeClient = (edgeUrl: string, slug: string, apiKey: string) =>
  new OpenAI({ apiKey, baseURL: `${edgeUrl}/d/${slug}/v1`, maxRetries: 0 });

/** The deployment answers a short chat at `edgeUrl` through the official client. */
export async function assertEdgeAnswers(edgeUrl: string, slug: string, apiKey: string): Promise<void> {
  const completion = await edgeClient(edgeUrl, slug, apiKey).chat.completions.create({
    model: "x",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 2,
  });
  if (completion.object !== "chat.completion")
    throw new Error(`the edge answered ${JSON.stringify(completion)}`);
}
