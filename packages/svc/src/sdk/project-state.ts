// .svc/state.json: the project scope { orgSlug, projectSlug, projectId } sent to
// the cloud API. Created lazily, and only for anonymous credentials, by the first
// call that needs a scope; with OAuth credentials its absence is an error that
// says what to write.
import { randomBytes } from "node:crypto";
import { basename, join, resolve } from "node:path";
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

export async function ensureProjectState(
  projectDir: string,
  client: CloudApiClient,
  credentials: Credentials,
): Promise<ProjectState> {
  const existing = await readProjectState(projectDir);
  if (existing) return existing;
  if (credentials.mode !== "anonymous") {
    throw new MissingProjectStateError(projectStatePath(projectDir), credentials.orgSlug);
  }
  const base = projectSlugFor(projectDir);
  let slug = base;
  for (let attempt = 0; ; attempt++) {
    try {
      const project = await client.createProject({
        orgSlug: credentials.orgSlug,
        slug,
        name: basename(resolve(projectDir)),
      });
      const state = {
        orgSlug: project.orgSlug ?? credentials.orgSlug,
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
