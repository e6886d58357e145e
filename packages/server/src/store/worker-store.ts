// The job runners that claim jobs (a server's own and each `svc worker`), with
// the backend each offers and when it last polled. A queued job whose backend
// no live runner offers gets a reason (queuedReason) instead of waiting silently.
import type { Kysely } from "kysely";
import type { Database, JobsTable, WorkersTable } from "../db/schema.js";
import { nowIso } from "../ids.js";

/** A runner not seen for this long is taken to be gone (runners poll every second or so). */
export const WORKER_SEEN_MS = 60_000;

export class WorkerStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Records that `owner` is alive, offers `backend` on `device` and could start `free_slots` jobs now. */
  async seen(
    owner: string,
    backend: WorkersTable["backend"],
    device: string,
    free_slots: number,
  ): Promise<void> {
    const seen_at = nowIso();
    await this.db
      .insertInto("workers")
      .values({ owner, backend, device, free_slots, seen_at })
      .onConflict((c) => c.column("owner").doUpdateSet({ seen_at, backend, device, free_slots }))
      .execute();
  }

  /** Removes a runner that stopped. */
  async gone(owner: string): Promise<void> {
    await this.db.deleteFrom("workers").where("owner", "=", owner).execute();
  }

  /** The backends offered by runners seen within WORKER_SEEN_MS. */
  async offered(): Promise<Set<WorkersTable["backend"]>> {
    const since = new Date(Date.now() - WORKER_SEEN_MS).toISOString();
    const rows = await this.db
      .selectFrom("workers")
      .select("backend")
      .distinct()
      .where("seen_at", ">=", since)
      .execute();
    return new Set(rows.map((r) => r.backend));
  }
}

/**
 * One runner's row, written as it polls: at once when its free slots change,
 * else every few seconds (busy or not: a runner whose slots are all taken is
 * still alive), so queued jobs know who can run them and jobs for any backend
 * wait for a free GPU.
 */
export class RunnerRecord {
  private readonly store: WorkerStore;
  private lastSeen = 0;
  private lastFree = -1;

  constructor(
    db: Kysely<Database>,
    readonly owner: string,
    readonly backend: WorkersTable["backend"],
    readonly device: "cpu" | "cuda",
  ) {
    this.store = new WorkerStore(db);
  }

  async poll(freeSlots: number): Promise<void> {
    if (Date.now() - this.lastSeen < 5_000 && freeSlots === this.lastFree) return;
    this.lastSeen = Date.now();
    this.lastFree = freeSlots;
    await this.store.seen(this.owner, this.backend, this.device, freeSlots);
  }

  gone(): Promise<void> {
    return this.store.gone(this.owner);
  }

  /** What JobStore.claimNext needs to know of this runner. */
  claimant(): { backend: WorkersTable["backend"]; gpu: boolean; gpuSeenSince: string } {
    const gpuSeenSince = new Date(Date.now() - WORKER_SEEN_MS).toISOString();
    return { backend: this.backend, gpu: this.device === "cuda", gpuSeenSince };
  }
}

/** Why a queued job waits when no live runner can run it; null otherwise. */
export function queuedReasonGiven(
  job: Pick<JobsTable, "status" | "backend">,
  offered: Set<WorkersTable["backend"]>,
): string | null {
  if (job.status !== "queued") return null;
  if (job.backend === "auto" ? offered.size > 0 : offered.has(job.backend)) return null;
  if (job.backend === "torch")
    return "no worker offers the torch backend: start one with `svc worker --backend torch`";
  if (job.backend === "engine")
    return "no worker offers the engine backend: start `svc server` with --workers 1 or more, or `svc worker`";
  return "no worker is running: start `svc server` with --workers 1 or more, or `svc worker`";
}

/** Jobs with the reason each queued one waits filled in (one look at the runners for the lot). */
export async function withQueuedReasons<
  T extends { status: JobsTable["status"]; backend: JobsTable["backend"]; queuedReason: string | null },
>(db: Kysely<Database>, jobs: T[]): Promise<T[]> {
  if (!jobs.some((j) => j.status === "queued")) return jobs;
  const store = new WorkerStore(db);
  const offered = await store.offered();
  return jobs.map((j) => ({ ...j, queuedReason: queuedReasonGiven(j, offered) }));
}
