// Projects within an org; a slug is unique per org.

import type { Org, Project } from "@svc/wire";
import type { Kysely } from "kysely";
import type { Database, ProjectsTable } from "../db/schema.js";
import { nowIso, uuidv7 } from "../ids.js";
import { isUniqueViolation } from "./unique.js";

const toProject = (r: ProjectsTable, org: Org): Project => ({
  id: r.id,
  orgId: r.org_id,
  orgSlug: org.slug,
  slug: r.slug,
  name: r.name,
  createdAt: r.created_at,
});

export class ProjectStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Returns null when the slug is already taken in the org. */
  async create(org: Org, slug: string, name: string): Promise<Project | null> {
    const project: Project = {
      id: uuidv7(),
      orgId: org.id,
      orgSlug: org.slug,
      slug,
      name,
      createdAt: nowIso(),
    };
    try {
      await this.db
        .insertInto("projects")
        .values({ id: project.id, org_id: org.id, slug, name, created_at: project.createdAt })
        .execute();
    } catch (error) {
      if (isUniqueViolation(error)) return null;
      throw error;
    }
    return project;
  }

  async list(org: Org): Promise<Project[]> {
    const rows = await this.db
      .selectFrom("projects")
      .selectAll()
      .where("org_id", "=", org.id)
      .orderBy("created_at")
      .execute();
    return rows.map((r) => toProject(r, org));
  }

  async bySlug(org: Org, slug: string): Promise<Project | undefined> {
    const r = await this.db
      .selectFrom("projects")
      .selectAll()
      .where("org_id", "=", org.id)
      .where("slug", "=", slug)
      .executeTakeFirst();
    return r && toProject(r, org);
  }

  /** The org that owns a project (for access checks on objects reached by id). */
  async orgIdOf(projectId: string): Promise<string | undefined> {
    const r = await this.db
      .selectFrom("projects")
      .select("org_id")
      .where("id", "=", projectId)
      .executeTakeFirst();
    return r?.org_id;
  }
}
