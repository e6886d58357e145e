// .svc/state.json: the project scope { orgSlug, projectSlug, projectId } sent to
// the cloud API. Created lazily, and only for anonymous credentials, by the first
// call that needs a scope; with OAuth credentials its absence is an error that
// says what to write. A state naming a project the current identity cannot see
// (~/.svc deleted, a new anonymous identity, a copied folder) is recreated for
// anonymous credentials, the old file kept beside it; for OAuth it is an error
// that says what to write instead.
import { randomBytes } from "node:crypto";
import { copyFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import type { Project } from "@svc/wire";
import { type CloudApiClient, CloudApiError } from "./client.js";
import type { Credentials } from "./credentials.js";
import { readTextIfExists, writeJsonFileAtomically } from "./json-file.js";

export interface ProjectState {
  orgSlug: string;
  projectSlug: string;
  projectId: string;
}

export class MissingProjectStateError extends Error {
  readonly path: string;
  constructor(path: string, orgSlug: string) {
    super(
      `${path} is missing. Signed in with OAuth, svc does not create a project for you: ` +
        `write {"orgSlug":"${orgSlug}","projectSlug":"<project slug>","projectId":"<project id>"} to ${path} ` +
        `(svc whoami shows your org; GET /v1/projects?orgSlug=${orgSlug} lists its projects)`,
    );
    this.name = "MissingProjectStateError";
    this.path = path;
  }
}

export class StaleProjectStateError extends Error {
  readonly path: string;
  constructor(path: string, stale: ProjectState, orgSlug: string, fix: Project | null) {
    const write = JSON.stringify(
      fix
        ? { orgSlug: fix.orgSlug ?? orgSlug, projectSlug: fix.slug, projectId: fix.id }
        : { orgSlug, projectSlug: "<project slug>", projectId: "<project id>" },
    );
    super(
      `${path} names org "${stale.orgSlug}" and project "${stale.projectSlug}", which the account you are signed in with ` +
        `(OAuth, org "${orgSlug}") cannot see. Signed in with OAuth, svc does not create a project for you: ` +
        `write ${write} to ${path}` +
        (fix
          ? ` (your project "${fix.slug}"; GET /v1/projects?orgSlug=${orgSlug} lists the others)`
          : ` after creating a project with POST /v1/projects {"orgSlug":"${orgSlug}","slug":"<slug>","name":"<name>"}`) +
        `, or run svc login as an account that can see ${stale.orgSlug}/${stale.projectSlug}`,
    );
    this.name = "StaleProjectStateError";
    this.path = path;
  }
}

export class ProjectStateFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProjectStateFileError";
  }
}

export function projectStatePath(projectDir: string): string {
  return join(resolve(projectDir), ".svc", "state.json");
}

export async function readProjectState(projectDir: string): Promise<ProjectState | null> {
  const path = projectStatePath(projectDir);
  const text = await readTextIfExists(path);
  if (text === null) return null;
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ProjectStateFileError(`${path} is not valid JSON`);
  }
  for (const k of ["orgSlug", "projectSlug", "projectId"]) {
    if (typeof value?.[k] !== "string" || (value[k] as string).length === 0) {
      throw new ProjectStateFileError(`${path}: field "${k}" must be a non-empty string`);
    }
  }
  return {
    orgSlug: value.orgSlug as string,
    projectSlug: value.projectSlug as string,
    projectId: value.projectId as string,
  };
}

export async function writeProjectState(projectDir: string, state: ProjectState): Promise<void> {
  await writeJsonFileAtomically(projectStatePath(projectDir), state);
}

/** A project slug from the directory name: lower-case letters, digits and dashes, 2-50 characters. */
export function projectSlugFor(projectDir: string): string {
  const slug = basename(resolve(projectDir))
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  return slug.length >= 2 ? slug : `project-${slug}`.replace(/-+$/, "");
}

/** The project the state names, when the current identity can see it; null when it cannot (the org or the project answers 404 or is absent). */
async function visibleProject(client: CloudApiClient, state: ProjectState): Promise<Project | null> {
  let projects: Project[];
  try {
    projects = await client.listProjects(state.orgSlug);
  } catch (err) {
    if (err instanceof CloudApiError && (err.status === 404 || err.status === 403)) return null;
    throw err;
  }
  // The scope sent to the API is org + project slug; the id is informational.
  return projects.find((p) => p.slug === state.projectSlug) ?? null;
}

export interface EnsureProjectStateOptions {
  /** Told in one line when a stale state was replaced. Default: stderr. */
  onNotice?: (line: string) => void;
}

export async function ensureProjectState(
  projectDir: string,
  client: CloudApiClient,
  credentials: Credentials,
  options: EnsureProjectStateOptions = {},
): Promise<ProjectState> {
  const path = projectStatePath(projectDir);
  const existing = await readProjectState(projectDir);
  if (existing && (await visibleProject(client, existing))) return existing;
  if (existing && credentials.mode !== "anonymous") {
    const own = await client.listProjects(credentials.orgSlug).catch(() => [] as Project[]);
    throw new StaleProjectStateError(path, existing, credentials.orgSlug, own[0] ?? null);
  }
  if (!existing && credentials.mode !== "anonymous") {
    throw new MissingProjectStateError(path, credentials.orgSlug);
  }
  let backup: string | null = null;
  if (existing) {
    backup = `${path}.bak-${new Date().toISOString().replace(/[:.]/g, "-")}`;
    await copyFile(path, backup);
  }
  const state = await createProjectState(projectDir, client, credentials.orgSlug);
  if (existing) {
    const line =
      `svc: project ${existing.orgSlug}/${existing.projectSlug} from ${path} was not found for the current identity; ` +
      `created ${state.orgSlug}/${state.projectSlug} (old file kept as ${backup})`;
    (options.onNotice ?? ((l) => process.stderr.write(`${l}\n`)))(line);
  }
  return state;
}

async function createProjectState(
  projectDir: string,
  client: CloudApiClient,
  orgSlug: string,
): Promise<ProjectState> {
  const base = projectSlugFor(projectDir);
  let slug = base;
  for (let attempt = 0; ; attempt++) {
    try {
      const project = await client.createProject({
        orgSlug,
        slug,
        name: basename(resolve(projectDir)),
      });
      const state = {
        orgSlug: project.orgSlug ?? orgSlug,
        projectSlug: project.slug,
        projectId: project.id,
      };
      await writeProjectState(projectDir, state);
      return state;
    } catch (err) {
      if (!(err instanceof CloudApiError) || err.status !== 409 || attempt >= 5) throw err;
      slug = `${base}-${randomBytes(3).toString("hex")}`;
    }
  }
}
