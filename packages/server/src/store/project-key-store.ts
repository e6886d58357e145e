// Project API keys: a key belongs to one project and acts for the member who
// issued it, on the OpenAI API routes only (auth/project-key.ts). Stored as a
// SHA-256 hash with a short prefix for display, like deployment keys; the
// plaintext is returned once, by issue(). Revoking disables the row, and every
// request looks its key up anew, so a revoked key fails on the next request.

import { type IssuedProjectKey, PROJECT_KEY_PREFIX, type ProjectKey } from "@svc/wire";
import type { Kysely, Migration } from "kysely";
import type { Database } from "../db/schema.js";
import { nowIso, randomBase62, sha256Hex, uuidv7 } from "../ids.js";
import { KEY_PREFIX_LENGTH } from "./deployment-store.js";

export interface ProjectKeysTable {
  id: string;
  project_id: string;
  /** The member who issued the key: the key acts with their membership of the project's org. */
  user_id: string;
  label: string;
  prefix: string;
  key_hash: string;
  enabled: number;
  created_at: string;
  last_used_at: string | null;
}

type ProjectKeyDatabase = Database & { project_keys: ProjectKeysTable };

export const projectKeysMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable("project_keys")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
      .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
      .addColumn("label", "text", (c) => c.notNull())
      .addColumn("prefix", "text", (c) => c.notNull())
      .addColumn("key_hash", "text", (c) => c.notNull().unique())
      .addColumn("enabled", "integer", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("last_used_at", "text")
      .execute();
  },
};

const toProjectKey = (r: ProjectKeysTable): ProjectKey => ({
  id: r.id,
  projectId: r.project_id,
  label: r.label,
  prefix: r.prefix,
  enabled: r.enabled === 1,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
});

/** lastUsedAt is written at most this often per key (best effort, like deployment keys'). */
const TOUCH_INTERVAL_MS = 60_000;

export class ProjectKeyStore {
  private readonly db: Kysely<ProjectKeyDatabase>;

  constructor(db: Kysely<Database>) {
    this.db = db as unknown as Kysely<ProjectKeyDatabase>;
  }

  async issue(projectId: string, userId: string, label: string): Promise<IssuedProjectKey> {
    const plaintext = `${PROJECT_KEY_PREFIX}${randomBase62(40)}`;
    const row: ProjectKeysTable = {
      id: uuidv7(),
      project_id: projectId,
      user_id: userId,
      label,
      prefix: plaintext.slice(0, KEY_PREFIX_LENGTH),
      key_hash: sha256Hex(plaintext),
      enabled: 1,
      created_at: nowIso(),
      last_used_at: null,
    };
    await this.db.insertInto("project_keys").values(row).execute();
    return { ...toProjectKey(row), plaintext };
  }

  async list(projectId: string): Promise<ProjectKey[]> {
    const rows = await this.db
      .selectFrom("project_keys")
      .selectAll()
      .where("project_id", "=", projectId)
      .orderBy("id")
      .execute();
    return rows.map(toProjectKey);
  }

  /** Disables the key; undefined when the project has no such key. */
  async revoke(projectId: string, keyId: string): Promise<ProjectKey | undefined> {
    await this.db
      .updateTable("project_keys")
      .set({ enabled: 0 })
      .where("id", "=", keyId)
      .where("project_id", "=", projectId)
      .execute();
    const row = await this.db
      .selectFrom("project_keys")
      .selectAll()
      .where("id", "=", keyId)
      .where("project_id", "=", projectId)
      .executeTakeFirst();
    return row && toProjectKey(row);
  }

  /** The enabled key with this plaintext: its project and issuer; lastUsedAt is touched on the way. */
  async enabledKey(
    plaintext: string,
  ): Promise<{ id: string; projectId: string; userId: string } | undefined> {
    const row = await this.db
      .selectFrom("project_keys")
      .select(["id", "project_id", "user_id", "last_used_at"])
      .where("key_hash", "=", sha256Hex(plaintext))
      .where("enabled", "=", 1)
      .executeTakeFirst();
    if (!row) return undefined;
    const now = Date.now();
    if (row.last_used_at === null || now - Date.parse(row.last_used_at) > TOUCH_INTERVAL_MS) {
      this.db
        .updateTable("project_keys")
        .set({ last_used_at: new Date(now).toISOString() })
        .where("id", "=", row.id)
        .execute()
        .catch((error: unknown) =>
          console.error(`svc server: project key ${row.id}: lastUsedAt not written:`, error),
        );
    }
    return { id: row.id, projectId: row.project_id, userId: row.user_id };
  }
}
