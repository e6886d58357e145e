// Dataset profiles, one row per (dataset, base model). A process that computes
// one holds a lease on its pending row and renews it; a pending row whose lease
// lapsed (its process died) is claimed again by the next request for it.
import type { Kysely } from "kysely";
import type { Database, DatasetProfilesTable } from "../db/schema.js";
import { nowIso } from "../ids.js";

export type DatasetProfileRow = DatasetProfilesTable;

const leaseUntil = (ms: number) => new Date(Date.now() + ms).toISOString();

export class DatasetProfileStore {
  constructor(private readonly db: Kysely<Database>) {}

  get(datasetId: string, baseModel: string): Promise<DatasetProfileRow | undefined> {
    return this.db
      .selectFrom("dataset_profiles")
      .selectAll()
      .where("dataset_id", "=", datasetId)
      .where("base_model", "=", baseModel)
      .executeTakeFirst();
  }

  /**
   * Takes the computation for `owner`: a new pending row, or a pending row whose
   * lease lapsed. False when the profile exists and is someone else's (or done).
   */
  async claim(datasetId: string, baseModel: string, owner: string, leaseMs: number): Promise<boolean> {
    const now = nowIso();
    const inserted = await this.db
      .insertInto("dataset_profiles")
      .values({
        dataset_id: datasetId,
        base_model: baseModel,
        status: "pending",
        profile: null,
        error: null,
        progress: 0,
        lease_owner: owner,
        lease_expires_at: leaseUntil(leaseMs),
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(["dataset_id", "base_model"]).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return true;
    const taken = await this.db
      .updateTable("dataset_profiles")
      .set({ lease_owner: owner, lease_expires_at: leaseUntil(leaseMs), progress: 0, updated_at: now })
      .where("dataset_id", "=", datasetId)
      .where("base_model", "=", baseModel)
      .where("status", "=", "pending")
      .where("lease_expires_at", "<", now)
      .executeTakeFirst();
    return Number(taken.numUpdatedRows) === 1;
  }

  /** Renews the lease and records progress; false when `owner` no longer holds the row. */
  async heartbeat(
    datasetId: string,
    baseModel: string,
    owner: string,
    leaseMs: number,
    progress: number,
  ): Promise<boolean> {
    const r = await this.db
      .updateTable("dataset_profiles")
      .set({ lease_expires_at: leaseUntil(leaseMs), progress, updated_at: nowIso() })
      .where("dataset_id", "=", datasetId)
      .where("base_model", "=", baseModel)
      .where("lease_owner", "=", owner)
      .where("status", "=", "pending")
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Lets `owner`'s pending rows be claimed at once (a server stopping hands its work back). */
  async release(owner: string): Promise<void> {
    await this.db
      .updateTable("dataset_profiles")
      .set({ lease_expires_at: new Date(0).toISOString(), updated_at: nowIso() })
      .where("lease_owner", "=", owner)
      .where("status", "=", "pending")
      .execute();
  }

  /** Stores the outcome: the engine's profile as JSON, or why it failed. */
  async finish(
    datasetId: string,
    baseModel: string,
    owner: string,
    outcome: { profile: string } | { error: string },
  ): Promise<void> {
    await this.db
      .updateTable("dataset_profiles")
      .set({
        status: "profile" in outcome ? "ready" : "failed",
        profile: "profile" in outcome ? outcome.profile : null,
        error: "error" in outcome ? outcome.error : null,
        progress: 1,
        lease_owner: null,
        lease_expires_at: null,
        updated_at: nowIso(),
      })
      .where("dataset_id", "=", datasetId)
      .where("base_model", "=", baseModel)
      .where("lease_owner", "=", owner)
      .where("status", "=", "pending")
      .execute();
  }
}
