// Computes dataset profiles in the background: a request for a (dataset, base
// model) profile that does not exist yet claims it (a pending row with a lease)
// and queues it here; each profile runs in its own child process
// (profile-process.ts), one at a time per server process, so the API stays
// responsive whatever the file's size. The lease is renewed with the progress
// while the profile is queued or running; when this process dies, the lease
// lapses and the next request for the profile, on any API process, claims it
// again. A profile that fails (a row its chat template refuses, a crash) is
// stored as failed with the reason.
import type { DataDir } from "../data-dir.js";
import type { DatasetsTable } from "../db/schema.js";
import { nowIso, randomBase62 } from "../ids.js";
import type { RegisteredModel } from "../models/model-registry.js";
import { type EngineProcess, forkEngineProcess } from "../process/engine-process.js";
import type { DatasetProfileRow } from "../store/dataset-profile-store.js";
import type { Store } from "../store/store.js";
import type { ProfileProcessCommand, ProfileProcessMessage } from "./profile-protocol.js";

export interface DatasetProfilerOptions {
  /** How long a claim lasts without renewal (default 15 s; renewed every third of it, at most every 2 s). */
  leaseMs?: number;
  /** Profiles computed at once by this process (default 1; each uses the engine's worker threads). */
  concurrency?: number;
}

interface ProfileTask {
  key: string;
  datasetId: string;
  baseModel: string;
  path: string;
  name: string;
  modelDir: string;
  progress: number;
  heartbeat: NodeJS.Timeout;
  proc: EngineProcess | null;
  /** Another process took the claim over (this one looked dead to it): stop. */
  lost: boolean;
}

export class DatasetProfiler {
  private readonly owner = `profiler-${process.pid}-${randomBase62(8)}`;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly tasks = new Map<string, ProfileTask>();
  private readonly queue: ProfileTask[] = [];
  private running = 0;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly dataDir: DataDir,
    options: DatasetProfilerOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? 15_000;
    this.concurrency = options.concurrency ?? 1;
  }

  /**
   * The stored profile of `dataset` for `model`, after starting its computation
   * when there is none yet or its computing process died. A pending profile this
   * process computes carries its latest progress.
   */
  async request(dataset: DatasetsTable, model: RegisteredModel): Promise<DatasetProfileRow> {
    const baseModel = model.info.name;
    const key = `${dataset.id}\u0000${baseModel}`;
    let row = await this.store.datasetProfiles.get(dataset.id, baseModel);
    const abandoned =
      row?.status === "pending" && !this.tasks.has(key) && (row.lease_expires_at ?? "") < nowIso();
    if (!this.closed && (!row || abandoned)) {
      if (await this.store.datasetProfiles.claim(dataset.id, baseModel, this.owner, this.leaseMs)) {
        this.enqueue({
          key,
          datasetId: dataset.id,
          baseModel,
          path: this.dataDir.abs(dataset.path),
          name: dataset.name,
          modelDir: model.dir,
        });
      }
      row = await this.store.datasetProfiles.get(dataset.id, baseModel);
    }
    if (!row) throw new Error(`the profile of dataset ${dataset.id} for ${baseModel} vanished`);
    const task = this.tasks.get(key);
    return task && row.status === "pending" ? { ...row, progress: task.progress } : row;
  }

  private enqueue(fields: Omit<ProfileTask, "progress" | "heartbeat" | "proc" | "lost">): void {
    const task: ProfileTask = {
      ...fields,
      progress: 0,
      proc: null,
      lost: false,
      heartbeat: setInterval(() => void this.renew(task), Math.min(2000, this.leaseMs / 3)),
    };
    task.heartbeat.unref();
    this.tasks.set(task.key, task);
    this.queue.push(task);
    this.pump();
  }

  private async renew(task: ProfileTask): Promise<void> {
    try {
      const held = await this.store.datasetProfiles.heartbeat(
        task.datasetId,
        task.baseModel,
        this.owner,
        this.leaseMs,
        task.progress,
      );
      if (!held && this.tasks.get(task.key) === task) {
        task.lost = true;
        this.drop(task);
        task.proc?.kill();
      }
    } catch (error) {
      // The database is away for a moment: the next beat tries again within the lease.
      console.error(`svc server: renewing a dataset profile's lease failed: ${(error as Error).message}`);
    }
  }

  private drop(task: ProfileTask): void {
    clearInterval(task.heartbeat);
    if (this.tasks.get(task.key) === task) this.tasks.delete(task.key);
    const queued = this.queue.indexOf(task);
    if (queued >= 0) this.queue.splice(queued, 1);
  }

  private pump(): void {
    while (!this.closed && this.running < this.concurrency && this.queue.length > 0) {
      const task = this.queue.shift() as ProfileTask;
      this.running++;
      void this.run(task).finally(() => {
        this.running--;
        this.drop(task);
        this.pump();
      });
    }
  }

  private async run(task: ProfileTask): Promise<void> {
    const proc = forkEngineProcess(new URL("./profile-process.js", import.meta.url), "[profile]");
    task.proc = proc;
    let outcome: { profile: string } | { error: string } | null = null;
    proc.child.on("message", (message: ProfileProcessMessage) => {
      if (message.type === "progress") task.progress = message.rows ? message.rowsDone / message.rows : 0;
      else if (message.type === "result") outcome = { profile: JSON.stringify(message.profile) };
      else if (message.type === "error") outcome = { error: message.message };
    });
    proc.send({
      type: "start",
      input: { path: task.path, name: task.name, modelDir: task.modelDir },
    } satisfies ProfileProcessCommand);
    const exit = await proc.exited;
    task.proc = null;
    // Stopped by close() or taken over: leave the row to whoever claims it next.
    if (task.lost || this.closed) return;
    outcome ??= { error: `the profile process ${exit.reason}` };
    await this.store.datasetProfiles
      .finish(task.datasetId, task.baseModel, this.owner, outcome)
      .catch((error: Error) =>
        console.error(`svc server: storing a dataset profile failed: ${error.message}`),
      );
  }

  /** Stops the profiles in progress and hands their claims back, so the next request (on any process) starts them again. */
  async close(): Promise<void> {
    this.closed = true;
    const tasks = [...this.tasks.values()];
    for (const task of tasks) {
      clearInterval(task.heartbeat);
      task.proc?.kill();
    }
    await Promise.all(tasks.map((t) => t.proc?.exited));
    await this.store.datasetProfiles.release(this.owner).catch(() => {});
  }
}
