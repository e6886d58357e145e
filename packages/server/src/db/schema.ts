// Table shapes as Kysely sees them. Columns are portable across SQLite and
// PostgreSQL: text for ids, JSON and ISO 8601 timestamps (which sort as text),
// integer for counters and 0/1 flags.
import type { WeightFormat } from "@svc/engine";
import type { Generated } from "kysely";

export interface UsersTable {
  id: string;
  mode: "anonymous" | "oauth";
  /** Anonymous: the user id; OIDC: "<issuer>#<sub>". */
  subject: string;
  email: string | null;
  created_at: string;
}

export interface TokensTable {
  token_hash: string;
  user_id: string;
  created_at: string;
}

export interface OrgsTable {
  id: string;
  slug: string;
  name: string;
  created_at: string;
}

export interface OrgMembersTable {
  org_id: string;
  user_id: string;
}

export interface ProjectsTable {
  id: string;
  org_id: string;
  slug: string;
  name: string;
  created_at: string;
}

export interface DatasetsTable {
  id: string;
  project_id: string;
  name: string;
  rows: number;
  bytes: number;
  /** Relative to the data dir. */
  path: string;
  created_at: string;
}

/**
 * The profile of a dataset for one base model's tokenizer (@svc/wire's dataset-profiles.ts),
 * computed in the background by whichever API process claimed it (a lease it
 * renews, like a job's); `profile` is the engine's DatasetProfile as JSON.
 */
export interface DatasetProfilesTable {
  dataset_id: string;
  base_model: string;
  status: "pending" | "ready" | "failed";
  profile: string | null;
  error: string | null;
  /** Share of rows measured while pending, 0 to 1. */
  progress: number;
  lease_owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface JobsTable {
  id: string;
  project_id: string;
  name: string;
  status: "queued" | "running" | "paused" | "completed" | "failed" | "cancelled";
  base_model: string;
  /** The commit sha of a Hub base model (docs/hub.md); null until resolved and for bundled/local models. */
  base_model_revision: string | null;
  dataset_id: string;
  eval_dataset_id: string | null;
  eval_fraction: number | null;
  hyperparameters: string;
  dry_run: number;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  cancel_requested: number;
  /** 1 while a pause waits for the job's worker to checkpoint and stop (routes/job-pause.ts). */
  pause_requested: number;
  lease_owner: string | null;
  lease_expires_at: string | null;
  /** Checkpoint folder (relative to the data dir) the next run resumes from. */
  resume_from: string | null;
  /** Claims of the job so far (each start by a runner, resumes included). */
  attempts: number;
  /** The job's attempt, 1-based: each restart after a crash of its runner or training process is the next. */
  attempt: number;
  /** Crashes in a row since the job's last checkpoint (the restart limit, --job-crash-restarts, counts these). */
  crash_streak: number;
  /** Why the latest attempt before this one ended (a crash); null before any crash. */
  last_crash: string | null;
  /** The training backend the job asks for (docs/gpu-training.md): any worker's, the engine's or PyTorch's. */
  backend: "auto" | "engine" | "torch";
  /** Why svc paused the job itself ("scorer_gone": store/scoring-store.ts); null for a user's pause. */
  paused_reason: string | null;
  /** When a claim for the job's scoring batches (its trainer's scorer) last came. */
  scorer_seen_at: string | null;
}

/** A job runner that claims jobs (a server's own or `svc worker`), as it last said it was alive. */
export interface WorkersTable {
  owner: string;
  backend: "engine" | "torch";
  /** "cpu" or "cuda". */
  device: string;
  /** Jobs it could start now (its concurrency less the jobs it runs). */
  free_slots: number;
  /** When it last polled for jobs; one not seen for a while is gone. */
  seen_at: string;
}

export interface JobEventsTable {
  job_id: string;
  seq: number;
  type: string;
  payload: string;
  created_at: string;
}

export interface ArtifactsTable {
  job_id: string;
  name: string;
  kind: "final" | "checkpoint" | "tensorboard";
  step: number;
  /** Relative to the data dir. */
  dir: string;
  files: string;
  created_at: string;
}

export interface DeploymentsTable {
  id: string;
  project_id: string;
  slug: string;
  target: string;
  /** JSON DeploymentUpstream, or null when the built-in engine serves. */
  upstream: string | null;
  /** The engine's weight format for this deployment; null: the server's default. */
  weight_format: WeightFormat | null;
  auth_mode: "fixed_api_key" | "none";
  enabled: number;
  custom_domain: string | null;
  run_retention_mode: "days" | "forever" | "none";
  run_retention_days: number | null;
  created_at: string;
  updated_at: string;
}

export interface DeploymentKeysTable {
  id: string;
  deployment_id: string;
  label: string;
  prefix: string;
  key_hash: string;
  enabled: number;
  created_at: string;
  last_used_at: string | null;
}

/**
 * Requests and tokens of one deployment key on one UTC day. The counters are
 * bigint (a busy key can pass 2^31 tokens in a day); PostgreSQL returns them as
 * strings, so readers convert with Number().
 */
export interface DeploymentKeyUsageTable {
  key_id: string;
  /** YYYY-MM-DD, UTC. */
  day: string;
  requests: number | string;
  prompt_tokens: number | string;
  completion_tokens: number | string;
}

export interface Database {
  users: UsersTable;
  tokens: TokensTable;
  orgs: OrgsTable;
  org_members: OrgMembersTable;
  projects: ProjectsTable;
  datasets: DatasetsTable;
  dataset_profiles: DatasetProfilesTable;
  jobs: JobsTable;
  workers: WorkersTable;
  job_events: JobEventsTable;
  artifacts: ArtifactsTable;
  deployments: DeploymentsTable;
  deployment_keys: DeploymentKeysTable;
  deployment_key_usage: DeploymentKeyUsageTable;
}

export type { Generated };
