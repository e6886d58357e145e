// What the torch-backend tests share: finding a Python that can run them
// (else the reason to skip), running svc_trainer on a job file as one process
// or as the ranks torchrun would start, and svc server with torch workers on a
// fresh PostgreSQL database.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";
import { loadAdapter } from "@svc/engine";
import { TRAINER_TORCH_DIR } from "../src/worker/torch-job.js";
import {
  chatJsonl,
  createJob,
  createPgDatabase,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  openEvents,
  readSse,
  type ServerProcess,
  type SseFrame,
  spawnReady,
  startServerProcess,
  TINY_MODEL,
  tempDir,
  tinyModel,
  uploadDataset,
  waitForExit,
} from "./harness.js";

/** packages/engine/fixtures (tiny random models in transformers' layout), from packages/server/dist/test/. */
export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "../../../engine/fixtures");

/** Debian's python3-torch unless SVC_PYTHON names another interpreter. */
export const TORCH_PYTHON = process.env.SVC_PYTHON ?? "/usr/bin/python3";
export const hasTorch = spawnSync(TORCH_PYTHON, ["-c", "import torch"]).status === 0;

/** A scratch folder for this test file, removed when it ends. */
export function torchScratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `svc-${prefix}-`));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The first of SVC_PYTHON, python3 and /usr/bin/python3 that runs `probe`
 * (with cwd beside svc_trainer) with skip false, or python "" and a skip
 * reason naming why each one failed: `{ skip }` goes to describe/test as is.
 */
export function findPython(
  probe: string,
  lacking: string,
  options: { cwd?: string } = {},
): { python: string; skip: string | false } {
  const candidates = [
    ...(process.env.SVC_PYTHON ? [process.env.SVC_PYTHON] : []),
    "python3",
    "/usr/bin/python3",
  ];
  const why: string[] = [];
  for (const python of candidates) {
    const result = spawnSync(python, ["-c", probe], { cwd: options.cwd, encoding: "utf8" });
    if (result.status === 0) return { python, skip: false };
    why.push(`${python}: ${result.error?.message ?? result.stderr.trim().split("\n").pop()}`);
  }
  return { python: "", skip: `no Python here ${lacking} (${why.join("; ")})` };
}

export interface TrainerOutput {
  rank: number;
  code: number | null;
  out: string;
  err: string;
}

/**
 * Runs `python -m svc_trainer --input file --device cpu`; world > 1 starts that
 * many ranks with the env:// rendezvous torchrun sets, on masterPort; env adds to the environment.
 */
export function runTrainer(
  python: string,
  file: string,
  {
    world = 1,
    masterPort = 0,
    env = {},
  }: { world?: number; masterPort?: number; env?: Record<string, string> } = {},
): Promise<TrainerOutput[]> {
  return Promise.all(
    Array.from({ length: world }, (_, rank) => {
      const child = spawn(python, ["-m", "svc_trainer", "--input", file, "--device", "cpu"], {
        cwd: TRAINER_TORCH_DIR,
        env: {
          ...process.env,
          PYTHONPATH: TRAINER_TORCH_DIR,
          ...env,
          ...(world > 1
            ? {
                RANK: String(rank),
                WORLD_SIZE: String(world),
                MASTER_ADDR: "127.0.0.1",
                MASTER_PORT: String(masterPort),
              }
            : {}),
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (c) => (out += c));
      child.stderr.on("data", (c) => (err += c));
      return new Promise<TrainerOutput>((resolve) =>
        child.once("close", (code) => resolve({ rank, code, out, err })),
      );
    }),
  );
}

/** The JSON lines svc_trainer wrote on stdout. */
// biome-ignore lint/suspicious/noExplicitAny: events of every type, read by field in each test
export function trainerEvents(out: string): any[] {
  return out
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}

type Adapter = ReturnType<typeof loadAdapter>;

/**
 * Loads two adapter folders in the engine's format, asserts they hold the same
 * tensors, and returns the largest difference between their values.
 */
export function largestAdapterDifference(
  dirA: string,
  dirB: string,
): { worst: number; a: Adapter; b: Adapter } {
  const a = loadAdapter(dirA);
  const b = loadAdapter(dirB);
  assert.deepEqual([...b.tensors.keys()].sort(), [...a.tensors.keys()].sort());
  let worst = 0;
  for (const [name, values] of a.tensors) {
    const other = b.tensors.get(name)!;
    for (let i = 0; i < values.length; i++) worst = Math.max(worst, Math.abs(values[i] - other[i]));
  }
  return { worst, a, b };
}

type Worker = Awaited<ReturnType<typeof spawnReady>>;

export interface TorchCluster {
  database: Awaited<ReturnType<typeof createPgDatabase>>;
  dataDir: string;
  server: ServerProcess;
  id: Identity;
  workers: Worker[];
  /** `svc worker --backend torch --python <python>` for the tiny model, plus extra flags. */
  startWorker(python: string, extra?: string[]): Promise<Worker>;
  /** A torch job on a fresh 12-row chat dataset. */
  createTorchJob(
    hyperparameters: Record<string, unknown>,
    extra?: Record<string, unknown>,
  ): Promise<{ id: string; status: string }>;
  /** Every frame of the job's event stream up to its end. */
  eventsUntilEnd(jobId: string, timeoutMs: number): Promise<SseFrame[]>;
  /** Reads the job's events until the first `event` frame. */
  waitForEvent(jobId: string, event: string): Promise<void>;
}

/** The frames' data, one a line: the message of an assertion on a job's events. */
export const framesText = (frames: SseFrame[]) => frames.map((f) => f.data).join("\n");
// biome-ignore lint/suspicious/noExplicitAny: log fields are read by name in each test
export const trainingLogs = (frames: SseFrame[]): any[] =>
  frames.filter((f) => f.event === "training.log").map((f) => JSON.parse(f.data));
export const checkpointSteps = (frames: SseFrame[]): number[] =>
  frames.filter((f) => f.event === "checkpoint.saved").map((f) => JSON.parse(f.data).step);

/**
 * Checks a torch job ran to completion: training.started first, training.completed
 * last (before the stream's end), one training.log per step 1..steps with a
 * positive loss, all from the torch backend. Returns the logs.
 */
// biome-ignore lint/suspicious/noExplicitAny: log fields are read by name in each test
export function completedTorchLogs(frames: SseFrame[], steps: number): any[] {
  const events = frames.map((f) => f.event);
  assert.equal(events[0], "training.started", framesText(frames));
  assert.equal(events.at(-2), "training.completed", framesText(frames));
  const logs = trainingLogs(frames);
  assert.deepEqual(
    logs.map((l) => l.step),
    Array.from({ length: steps }, (_, i) => i + 1),
  );
  for (const log of logs) {
    assert.ok(Number.isFinite(log.loss) && log.loss > 0, JSON.stringify(log));
    assert.equal(log.backend, "torch");
  }
  return logs;
}

/**
 * svc server with no in-process engine runner (torch jobs wait for a torch
 * worker) on a fresh database, started before the enclosing describe's tests
 * and stopped after them with every worker startWorker began.
 */
export function torchCluster(
  dataDirPrefix: string,
  options: {
    /** More base models for the server and its workers, as --model's name=dir (made before the server starts). */
    models?: () => Promise<string[]>;
  } = {},
): TorchCluster {
  let extraModels: string[] = [];
  const cluster = {
    workers: [] as Worker[],
    async startWorker(python: string, extra: string[] = []) {
      const worker = await spawnReady("worker", [
        ...extra,
        ...["--database-url", cluster.database.url, "--data-dir", cluster.dataDir],
        ...["--bundled-models", "none", "--model", `${TINY_MODEL}=${await tinyModel()}`],
        ...extraModels.flatMap((model) => ["--model", model]),
        ...["--job-poll-ms", "100", "--job-lease-ms", "3000"],
        ...["--backend", "torch", "--python", python],
      ]);
      cluster.workers.push(worker);
      return worker;
    },
    async createTorchJob(hyperparameters: Record<string, unknown>, extra: Record<string, unknown> = {}) {
      const dataset = await uploadDataset(cluster.server.apiUrl, cluster.id, chatJsonl(12));
      return createJob(cluster.server.apiUrl, cluster.id, dataset.id, hyperparameters, {
        backend: "torch",
        ...extra,
      });
    },
    eventsUntilEnd: (jobId: string, timeoutMs: number) =>
      eventsUntilEnd(cluster.server.apiUrl, cluster.id.token, jobId, timeoutMs),
    async waitForEvent(jobId: string, event: string) {
      await readSse(await openEvents(cluster.server.apiUrl, cluster.id.token, jobId), {
        stopWhen: (f) => f.event === event,
        timeoutMs: 60_000,
      });
    },
  } as TorchCluster;
  before(async () => {
    extraModels = (await options.models?.()) ?? [];
    cluster.database = await createPgDatabase();
    cluster.dataDir = tempDir(dataDirPrefix);
    cluster.server = await startServerProcess({
      dataDir: cluster.dataDir,
      databaseUrl: cluster.database.url,
      args: [
        ...["--workers", "0", "--job-lease-ms", "3000", "--job-poll-ms", "100"],
        ...extraModels.flatMap((model) => ["--model", model]),
      ],
    });
    cluster.id = await newIdentity(cluster.server.apiUrl);
  });
  after(async () => {
    for (const w of cluster.workers) {
      if (w.proc.exitCode === null) w.proc.kill("SIGKILL");
      await waitForExit(w.proc);
    }
    await cluster.server?.stop();
    await cluster.database?.drop();
    if (cluster.dataDir) rmSync(cluster.dataDir, { recursive: true, force: true });
  });
  return cluster;
}
