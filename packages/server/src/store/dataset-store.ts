// Dataset rows; the JSONL itself lives in the data dir (path is relative to it).

import type { Dataset } from "@svc/wire";
import type { Kysely } from "kysely";
import type { Database, DatasetsTable } from "../db/schema.js";

export const toDataset = (r: DatasetsTable): Dataset => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  rows: r.rows,
  bytes: r.bytes,
  createdAt: r.created_at,
});

export class DatasetStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: DatasetsTable): Promise<Dataset> {
    await this.db.insertInto("datasets").values(row).execute();
    return toDataset(row);
  }

  async get(id: string): Promise<DatasetsTable | undefined> {
    return this.db.selectFrom("datasets").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /**
   * Deletes a dataset row and its profiles; the caller removes its file. A
   * dataset a job trains or evaluates on stays (the jobs keep their inputs):
   * returns the id of such a job instead.
   */
  async delete(id: string): Promise<{ deleted: true } | { usedByJob: string }> {
    return this.db.transaction().execute(async (trx) => {
      const job = await trx
        .selectFrom("jobs")
        .select("id")
        .where((eb) => eb.or([eb("dataset_id", "=", id), eb("eval_dataset_id", "=", id)]))
        .orderBy("id")
        .executeTakeFirst();
      if (job) return { usedByJob: job.id };
      await trx.deleteFrom("dataset_profiles").where("dataset_id", "=", id).execute();
      await trx.deleteFrom("datasets").where("id", "=", id).execute();
      return { deleted: true as const };
    });
  }

  /** Every dataset row's file (relative to the data dir): what the startup sweep keeps. */
  async allPaths(): Promise<string[]> {
    const rows = await this.db.selectFrom("datasets").select("path").execute();
    return rows.map((r) => r.path);
  }

  async list(projectId: string): Promise<Dataset[]> {
    const rows = await this.db
      .selectFrom("datasets")
      .selectAll()
      .where("project_id", "=", projectId)
      .orderBy("id", "desc")
      .execute();
    return rows.map(toDataset);
  }
}
