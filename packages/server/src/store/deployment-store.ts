// Deployments (slug unique across the server: it is a host name) and their
// API keys (stored as SHA-256 hashes; the plaintext leaves only once).

import type {
  DeploymentKey,
  DeploymentTarget,
  DeploymentUpstream,
  IssuedDeploymentKey,
  KeyUsageSummary,
} from "@svc/wire";
import { KEY_USAGE_SUMMARY_DAYS } from "@svc/wire";
import { type Kysely, sql } from "kysely";
import type { DatabaseKind } from "../db/connect.js";
import type { Database, DeploymentKeysTable, DeploymentsTable } from "../db/schema.js";
import { nowIso, randomBase62, sha256Hex, uuidv7 } from "../ids.js";
import type { KeyUsageStore } from "./key-usage-store.js";
import { isUniqueViolation } from "./unique.js";

export type DeploymentRow = DeploymentsTable;

export const KEY_PREFIX_LENGTH = 12;

export const toDeploymentKey = (r: DeploymentKeysTable, usage: KeyUsageSummary): DeploymentKey => ({
  id: r.id,
  deploymentId: r.deployment_id,
  label: r.label,
  prefix: r.prefix,
  enabled: r.enabled === 1,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  usage,
});

export const targetOf = (r: DeploymentRow): DeploymentTarget => JSON.parse(r.target) as DeploymentTarget;

export const upstreamOf = (r: DeploymentRow): DeploymentUpstream | null =>
  r.upstream === null ? null : (JSON.parse(r.upstream) as DeploymentUpstream);

export class DeploymentStore {
  /** Called after every committed change to a deployment or key (the edge clears its cache). */
  onChanged: () => void = () => {};

  constructor(
    private readonly db: Kysely<Database>,
    private readonly kind: DatabaseKind,
    private readonly usage: KeyUsageStore,
  ) {}

  /** Tells this process and, on PostgreSQL, every other one that deployments changed. */
  private async changed(): Promise<void> {
    this.onChanged();
    if (this.kind === "postgres") await sql`select pg_notify('svc_deployments', '')`.execute(this.db);
  }

  /** Returns null when the slug is taken. */
  async create(row: DeploymentRow): Promise<DeploymentRow | null> {
    try {
      await this.db.insertInto("deployments").values(row).execute();
    } catch (error) {
      if (isUniqueViolation(error)) return null;
      throw error;
    }
    await this.changed();
    return row;
  }

  async get(id: string): Promise<DeploymentRow | undefined> {
    return this.db.selectFrom("deployments").selectAll().where("id", "=", id).executeTakeFirst();
  }

  async bySlug(slug: string): Promise<DeploymentRow | undefined> {
    return this.db.selectFrom("deployments").selectAll().where("slug", "=", slug).executeTakeFirst();
  }

  async list(projectId: string): Promise<DeploymentRow[]> {
    return this.db
      .selectFrom("deployments")
      .selectAll()
      .where("project_id", "=", projectId)
      .orderBy("id", "desc")
      .execute();
  }

  /**
   * Applies the columns of `patch` that differ from the stored row. updatedAt
   * moves only when one does: a PATCH that changes nothing ({} or the current
   * values) writes nothing and returns the row as it was.
   */
  async update(id: string, patch: Partial<DeploymentRow>): Promise<DeploymentRow | undefined> {
    const current = await this.get(id);
    if (!current) return undefined;
    const changes = Object.fromEntries(
      Object.entries(patch).filter(
        ([column, value]) => value !== undefined && current[column as keyof DeploymentRow] !== value,
      ),
    ) as Partial<DeploymentRow>;
    if (Object.keys(changes).length === 0) return current;
    await this.db
      .updateTable("deployments")
      .set({ ...changes, updated_at: nowIso() })
      .where("id", "=", id)
      .execute();
    await this.changed();
    return this.get(id);
  }

  /** Deletes the deployment, its keys and their usage; the slug becomes free again. */
  async delete(id: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const keys = await trx
        .selectFrom("deployment_keys")
        .select("id")
        .where("deployment_id", "=", id)
        .execute();
      // Keys first: on PostgreSQL this waits for a usage flush holding them, whose rows the next statement then sees.
      await trx.deleteFrom("deployment_keys").where("deployment_id", "=", id).execute();
      if (keys.length > 0)
        await trx
          .deleteFrom("deployment_key_usage")
          .where(
            "key_id",
            "in",
            keys.map((k) => k.id),
          )
          .execute();
      await trx.deleteFrom("deployments").where("id", "=", id).execute();
    });
    await this.changed();
  }

  async issueKey(deploymentId: string, label: string): Promise<IssuedDeploymentKey> {
    const plaintext = `svc_live_${randomBase62(40)}`;
    const row: DeploymentKeysTable = {
      id: uuidv7(),
      deployment_id: deploymentId,
      label,
      prefix: plaintext.slice(0, KEY_PREFIX_LENGTH),
      key_hash: sha256Hex(plaintext),
      enabled: 1,
      created_at: nowIso(),
      last_used_at: null,
    };
    await this.db.insertInto("deployment_keys").values(row).execute();
    await this.changed();
    const unused = { days: KEY_USAGE_SUMMARY_DAYS, requests: 0, promptTokens: 0, completionTokens: 0 };
    return { ...toDeploymentKey(row, unused), plaintext };
  }

  async listKeys(deploymentId: string): Promise<DeploymentKey[]> {
    const rows = await this.db
      .selectFrom("deployment_keys")
      .selectAll()
      .where("deployment_id", "=", deploymentId)
      .orderBy("id")
      .execute();
    const usage = await this.usage.summaries(rows.map((r) => r.id));
    return rows.map((r) => toDeploymentKey(r, usage.get(r.id) as KeyUsageSummary));
  }

  async revokeKey(deploymentId: string, keyId: string): Promise<DeploymentKey | undefined> {
    await this.db
      .updateTable("deployment_keys")
      .set({ enabled: 0 })
      .where("id", "=", keyId)
      .where("deployment_id", "=", deploymentId)
      .execute();
    await this.changed();
    const row = await this.db
      .selectFrom("deployment_keys")
      .selectAll()
      .where("id", "=", keyId)
      .where("deployment_id", "=", deploymentId)
      .executeTakeFirst();
    return row && toDeploymentKey(row, (await this.usage.summaries([row.id])).get(row.id) as KeyUsageSummary);
  }

  /** The enabled key of this deployment whose hash matches, if any. */
  async enabledKey(deploymentId: string, plaintext: string): Promise<{ id: string } | undefined> {
    return this.db
      .selectFrom("deployment_keys")
      .select("id")
      .where("key_hash", "=", sha256Hex(plaintext))
      .where("deployment_id", "=", deploymentId)
      .where("enabled", "=", 1)
      .executeTakeFirst();
  }

  /** The key of this deployment (enabled or revoked), if any. */
  async hasKey(deploymentId: string, keyId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom("deployment_keys")
      .select("id")
      .where("id", "=", keyId)
      .where("deployment_id", "=", deploymentId)
      .executeTakeFirst();
    return row !== undefined;
  }

  async touchKeys(lastUsed: Map<string, string>): Promise<void> {
    for (const [id, at] of lastUsed) {
      await this.db.updateTable("deployment_keys").set({ last_used_at: at }).where("id", "=", id).execute();
    }
  }
}
