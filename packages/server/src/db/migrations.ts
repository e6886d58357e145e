// The one set of migrations, written with Kysely's schema builder so the same
// code creates the schema on SQLite and PostgreSQL.
import { type Kysely, type Migration, type MigrationProvider, PostgresAdapter } from "kysely";
import { openAiJobsMigration } from "../store/openai-job-store.js";
import { projectKeysMigration } from "../store/project-key-store.js";
import { scoringMigration } from "../store/scoring-store.js";

const initial: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable("users")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("mode", "text", (c) => c.notNull())
      .addColumn("subject", "text", (c) => c.notNull().unique())
      .addColumn("email", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("tokens")
      .addColumn("token_hash", "text", (c) => c.primaryKey())
      .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("orgs")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("slug", "text", (c) => c.notNull().unique())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("org_members")
      .addColumn("org_id", "text", (c) => c.notNull().references("orgs.id"))
      .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
      .addPrimaryKeyConstraint("org_members_pk", ["org_id", "user_id"])
      .execute();
    await db.schema.createIndex("org_members_user").on("org_members").column("user_id").execute();
    await db.schema
      .createTable("projects")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("org_id", "text", (c) => c.notNull().references("orgs.id"))
      .addColumn("slug", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addUniqueConstraint("projects_org_slug", ["org_id", "slug"])
      .execute();
    await db.schema
      .createTable("datasets")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("rows", "integer", (c) => c.notNull())
      .addColumn("bytes", "integer", (c) => c.notNull())
      .addColumn("path", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("jobs")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("base_model", "text", (c) => c.notNull())
      .addColumn("dataset_id", "text", (c) => c.notNull().references("datasets.id"))
      .addColumn("eval_dataset_id", "text", (c) => c.references("datasets.id"))
      .addColumn("eval_fraction", "real")
      .addColumn("hyperparameters", "text", (c) => c.notNull())
      .addColumn("dry_run", "integer", (c) => c.notNull())
      .addColumn("error", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("started_at", "text")
      .addColumn("finished_at", "text")
      .addColumn("cancel_requested", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("lease_owner", "text")
      .addColumn("lease_expires_at", "text")
      .addColumn("resume_from", "text")
      .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.createIndex("jobs_project").on("jobs").columns(["project_id", "id"]).execute();
    await db.schema.createIndex("jobs_status").on("jobs").columns(["status", "id"]).execute();
    await db.schema
      .createTable("job_events")
      .addColumn("job_id", "text", (c) => c.notNull().references("jobs.id"))
      .addColumn("seq", "integer", (c) => c.notNull())
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("payload", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("job_events_pk", ["job_id", "seq"])
      .execute();
    await db.schema
      .createTable("artifacts")
      .addColumn("job_id", "text", (c) => c.notNull().references("jobs.id"))
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("step", "integer", (c) => c.notNull())
      .addColumn("dir", "text", (c) => c.notNull())
      .addColumn("files", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("artifacts_pk", ["job_id", "name"])
      .execute();
    await db.schema
      .createTable("deployments")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
      .addColumn("slug", "text", (c) => c.notNull().unique())
      .addColumn("target", "text", (c) => c.notNull())
      .addColumn("auth_mode", "text", (c) => c.notNull())
      .addColumn("enabled", "integer", (c) => c.notNull())
      .addColumn("custom_domain", "text")
      .addColumn("run_retention_mode", "text", (c) => c.notNull())
      .addColumn("run_retention_days", "integer")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("deployment_keys")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("deployment_id", "text", (c) => c.notNull().references("deployments.id"))
      .addColumn("label", "text", (c) => c.notNull())
      .addColumn("prefix", "text", (c) => c.notNull())
      .addColumn("key_hash", "text", (c) => c.notNull().unique())
      .addColumn("enabled", "integer", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("last_used_at", "text")
      .execute();
    await db.schema
      .createIndex("deployment_keys_deployment")
      .on("deployment_keys")
      .column("deployment_id")
      .execute();
  },
};

const deploymentUpstream: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable("deployments").addColumn("upstream", "text").execute();
  },
};

// No foreign key to deployment_keys: counts are flushed in batches after the
// request, and a key deleted in between must neither fail the batch for every
// other key nor the deployment's deletion. DeploymentStore.delete removes the
// rows with the keys; KeyUsageStore.add skips keys that no longer exist.
const deploymentKeyUsage: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable("deployment_key_usage")
      .addColumn("key_id", "text", (c) => c.notNull())
      .addColumn("day", "text", (c) => c.notNull())
      .addColumn("requests", "bigint", (c) => c.notNull())
      .addColumn("prompt_tokens", "bigint", (c) => c.notNull())
      .addColumn("completion_tokens", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("deployment_key_usage_pk", ["key_id", "day"])
      .execute();
  },
};

// One profile per (dataset, base model); see DatasetProfileStore.
const datasetProfiles: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable("dataset_profiles")
      .addColumn("dataset_id", "text", (c) => c.notNull().references("datasets.id"))
      .addColumn("base_model", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("profile", "text")
      .addColumn("error", "text")
      .addColumn("progress", "real", (c) => c.notNull().defaultTo(0))
      .addColumn("lease_owner", "text")
      .addColumn("lease_expires_at", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("dataset_profiles_pk", ["dataset_id", "base_model"])
      .execute();
  },
};

// The commit sha a Hub base model resolved to, set by the worker once the files are on disk.
const jobBaseModelRevision: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable("jobs").addColumn("base_model_revision", "text").execute();
  },
};

// The weight format a deployment is served in (null: the server's default).
const deploymentWeightFormat: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable("deployments").addColumn("weight_format", "text").execute();
  },
};

// Jobs name the backend they need; job runners record the backend they offer
// and when they last polled, so a job no worker can run says why it waits.
const jobBackendWorkers: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable("jobs")
      .addColumn("backend", "text", (c) => c.notNull().defaultTo("auto"))
      .execute();
    await db.schema
      .createTable("workers")
      .addColumn("owner", "text", (c) => c.primaryKey())
      .addColumn("backend", "text", (c) => c.notNull())
      .addColumn("device", "text", (c) => c.notNull())
      .addColumn("free_slots", "integer", (c) => c.notNull())
      .addColumn("seen_at", "text", (c) => c.notNull())
      .execute();
  },
};

// A job's attempt (1-based; a crash of its runner or training process starts
// the next), the crashes in a row since its last checkpoint (the restart limit
// counts these) and the latest crash's cause, shared by every process that
// runs or recovers the job.
const jobAttempts: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable("jobs")
      .addColumn("attempt", "integer", (c) => c.notNull().defaultTo(1))
      .execute();
    await db.schema
      .alterTable("jobs")
      .addColumn("crash_streak", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable("jobs").addColumn("last_crash", "text").execute();
  },
};

// Fractions were PostgreSQL `real` (float4): an evalFraction of 5e-324 or
// 1e-46 could not be stored (a 500) and 0.123456789 came back as 0.12345679,
// while SQLite's REAL keeps the double the API accepted. Now PostgreSQL keeps
// it too; SQLite's REAL is already 8 bytes and has nothing to change.
const doubleFractions: Migration = {
  async up(db: Kysely<unknown>) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
    for (const [table, column] of [
      ["jobs", "eval_fraction"],
      ["dataset_profiles", "progress"],
    ] as const)
      await db.schema
        .alterTable(table)
        .alterColumn(column, (c) => c.setDataType("double precision"))
        .execute();
  },
};

// Pause and resume (POST /v1/jobs/:id/pause|resume): a running job's pause is
// a flag its worker polls, as cancel_requested is; the job then waits as "paused".
const jobPause: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable("jobs")
      .addColumn("pause_requested", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
  },
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return {
      "0001_initial": initial,
      "0002_deployment_upstream": deploymentUpstream,
      "0003_deployment_key_usage": deploymentKeyUsage,
      "0004_dataset_profiles": datasetProfiles,
      "0005_job_base_model_revision": jobBaseModelRevision,
      "0006_deployment_weight_format": deploymentWeightFormat,
      "0007_job_backend_workers": jobBackendWorkers,
      "0008_job_attempts": jobAttempts,
      "0009_openai_jobs": openAiJobsMigration,
      "0010_double_fractions": doubleFractions,
      "0011_project_keys": projectKeysMigration,
      "0012_job_pause": jobPause,
      "0013_trainer_scoring": scoringMigration,
    };
  },
};
