// Users, their bearer tokens (stored as SHA-256 hashes), orgs and memberships.

import type { Org } from "@svc/wire";
import type { Kysely } from "kysely";
import type { Database, OrgsTable, UsersTable } from "../db/schema.js";
import { nowIso, randomBase62, sha256Hex, uuidv7 } from "../ids.js";
import { isUniqueViolation } from "./unique.js";

export type UserRow = UsersTable;

export const toOrg = (row: OrgsTable): Org => ({ id: row.id, slug: row.slug, name: row.name });

export class IdentityStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Creates an anonymous user with a personal org and returns its new plaintext token. */
  async createAnonymous(): Promise<{ token: string; user: UserRow; org: Org }> {
    const id = uuidv7();
    const user: UserRow = { id, mode: "anonymous", subject: id, email: null, created_at: nowIso() };
    const token = `svc_tok_${randomBase62(40)}`;
    const org = await this.db.transaction().execute(async (trx) => {
      await trx.insertInto("users").values(user).execute();
      await trx
        .insertInto("tokens")
        .values({ token_hash: sha256Hex(token), user_id: id, created_at: user.created_at })
        .execute();
      return this.createPersonalOrg(trx, id, "anon", "Anonymous");
    });
    return { token, user, org };
  }

  /** The user of an OIDC subject, created with a personal org the first time it is seen. */
  async userForOidcSubject(subject: string, email: string | null): Promise<UserRow> {
    const existing = await this.db
      .selectFrom("users")
      .selectAll()
      .where("subject", "=", subject)
      .executeTakeFirst();
    if (existing) {
      if (email && existing.email !== email) {
        await this.db.updateTable("users").set({ email }).where("id", "=", existing.id).execute();
        return { ...existing, email };
      }
      return existing;
    }
    const user: UserRow = { id: uuidv7(), mode: "oauth", subject, email, created_at: nowIso() };
    try {
      await this.db.transaction().execute(async (trx) => {
        await trx.insertInto("users").values(user).execute();
        const base = (email?.split("@")[0] ?? "user")
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, "-")
          .replace(/^-+|-+$/g, "");
        await this.createPersonalOrg(trx, user.id, base.slice(0, 30) || "user", email ?? "Personal");
      });
    } catch (error) {
      // Two first requests of the same subject raced: the other one created it.
      if (!isUniqueViolation(error)) throw error;
      return this.db.selectFrom("users").selectAll().where("subject", "=", subject).executeTakeFirstOrThrow();
    }
    return user;
  }

  async userForToken(token: string): Promise<UserRow | undefined> {
    return this.db
      .selectFrom("tokens")
      .innerJoin("users", "users.id", "tokens.user_id")
      .selectAll("users")
      .where("tokens.token_hash", "=", sha256Hex(token))
      .executeTakeFirst();
  }

  async orgsOf(userId: string): Promise<Org[]> {
    const rows = await this.db
      .selectFrom("orgs")
      .innerJoin("org_members", "org_members.org_id", "orgs.id")
      .selectAll("orgs")
      .where("org_members.user_id", "=", userId)
      .orderBy("orgs.created_at")
      .execute();
    return rows.map(toOrg);
  }

  /** The org with this slug if the user is a member of it. */
  async memberOrgBySlug(userId: string, slug: string): Promise<Org | undefined> {
    const row = await this.db
      .selectFrom("orgs")
      .innerJoin("org_members", "org_members.org_id", "orgs.id")
      .selectAll("orgs")
      .where("org_members.user_id", "=", userId)
      .where("orgs.slug", "=", slug)
      .executeTakeFirst();
    return row && toOrg(row);
  }

  async isMember(userId: string, orgId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom("org_members")
      .select("org_id")
      .where("user_id", "=", userId)
      .where("org_id", "=", orgId)
      .executeTakeFirst();
    return row !== undefined;
  }

  private async createPersonalOrg(
    trx: Kysely<Database>,
    userId: string,
    base: string,
    name: string,
  ): Promise<Org> {
    const row: OrgsTable = {
      id: uuidv7(),
      slug: `${base}-${randomBase62(8).toLowerCase()}`,
      name,
      created_at: nowIso(),
    };
    await trx.insertInto("orgs").values(row).execute();
    await trx.insertInto("org_members").values({ org_id: row.id, user_id: userId }).execute();
    return toOrg(row);
  }
}
