// The one storage interface: repositories over one Kysely database, the same
// code for SQLite and PostgreSQL.
import type { Kysely } from "kysely";
import type { DatabaseKind, OpenedDatabase } from "../db/connect.js";
import type { Database } from "../db/schema.js";
import { DatasetProfileStore } from "./dataset-profile-store.js";
import { DatasetStore } from "./dataset-store.js";
import { DeploymentStore } from "./deployment-store.js";
import { IdentityStore } from "./identity-store.js";
import { JobStore } from "./job-store.js";
import { KeyUsageStore } from "./key-usage-store.js";
import { ProjectStore } from "./project-store.js";

export class Store {
  readonly db: Kysely<Database>;
  readonly kind: DatabaseKind;
  readonly identity: IdentityStore;
  readonly projects: ProjectStore;
  readonly datasets: DatasetStore;
  readonly datasetProfiles: DatasetProfileStore;
  readonly jobs: JobStore;
  readonly deployments: DeploymentStore;
  readonly keyUsage: KeyUsageStore;

  constructor(readonly opened: OpenedDatabase) {
    this.db = opened.db;
    this.kind = opened.kind;
    this.identity = new IdentityStore(this.db);
    this.projects = new ProjectStore(this.db);
    this.datasets = new DatasetStore(this.db);
    this.datasetProfiles = new DatasetProfileStore(this.db);
    this.jobs = new JobStore(this.db, this.kind);
    this.keyUsage = new KeyUsageStore(this.db, this.kind);
    this.deployments = new DeploymentStore(this.db, this.kind, this.keyUsage);
  }

  close(): Promise<void> {
    return this.db.destroy();
  }
}
