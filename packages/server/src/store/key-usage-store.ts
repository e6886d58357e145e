// Per-day usage of deployment keys (requests, prompt and completion tokens).
// Writers add increments (the edge's KeyUsageRecorder, once a second), so
// several server processes on one PostgreSQL database add up instead of
// overwriting each other.

import type { DeploymentKeyUsage, KeyUsageDay, KeyUsageSummary, KeyUsageTotals } from "@svc/wire";
import { KEY_USAGE_SUMMARY_DAYS } from "@svc/wire";
import type { Kysely } from "kysely";
import type { DatabaseKind } from "../db/connect.js";
import type { Database } from "../db/schema.js";

/** An increment for one key on one UTC day. */
export interface KeyUsageIncrement extends KeyUsageTotals {
  keyId: string;
  day: string;
}

const DAY_MS = 86_400_000;

/** The UTC day (YYYY-MM-DD) of a time in ms since the epoch. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The `days` UTC days ending today, oldest first. */
export function lastDays(days: number, now = Date.now()): string[] {
  const today = Date.parse(utcDay(now));
  return Array.from({ length: days }, (_, i) => utcDay(today - (days - 1 - i) * DAY_MS));
}

const zero = (): KeyUsageTotals => ({ requests: 0, promptTokens: 0, completionTokens: 0 });

/** Rows per statement: 5 parameters each stays far below both databases' parameter limits. */
const CHUNK = 500;

export class KeyUsageStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly kind: DatabaseKind,
  ) {}

  /** Adds the increments in one transaction; keys that no longer exist (deleted since the request) are skipped. */
  async add(increments: KeyUsageIncrement[]): Promise<void> {
    if (increments.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      const ids = [...new Set(increments.map((i) => i.keyId))];
      const live = new Set<string>();
      for (let at = 0; at < ids.length; at += CHUNK) {
        let existing = trx
          .selectFrom("deployment_keys")
          .select("id")
          .where("id", "in", ids.slice(at, at + CHUNK));
        // PostgreSQL: a deletion of these keys waits for this transaction, then
        // deletes the rows it added (DeploymentStore.delete deletes keys before usage).
        if (this.kind === "postgres") existing = existing.forShare();
        for (const r of await existing.execute()) live.add(r.id);
      }
      const rows = increments
        .filter((i) => live.has(i.keyId))
        .map((i) => ({
          key_id: i.keyId,
          day: i.day,
          requests: i.requests,
          prompt_tokens: i.promptTokens,
          completion_tokens: i.completionTokens,
        }));
      for (let at = 0; at < rows.length; at += CHUNK) {
        await trx
          .insertInto("deployment_key_usage")
          .values(rows.slice(at, at + CHUNK))
          .onConflict((oc) =>
            oc.columns(["key_id", "day"]).doUpdateSet((eb) => ({
              requests: eb("deployment_key_usage.requests", "+", eb.ref("excluded.requests")),
              prompt_tokens: eb("deployment_key_usage.prompt_tokens", "+", eb.ref("excluded.prompt_tokens")),
              completion_tokens: eb(
                "deployment_key_usage.completion_tokens",
                "+",
                eb.ref("excluded.completion_tokens"),
              ),
            })),
          )
          .execute();
      }
    });
  }

  /** Totals of the last KEY_USAGE_SUMMARY_DAYS days per key; every key asked for gets an entry. */
  async summaries(keyIds: string[], now = Date.now()): Promise<Map<string, KeyUsageSummary>> {
    const out = new Map<string, KeyUsageSummary>(
      keyIds.map((id) => [id, { days: KEY_USAGE_SUMMARY_DAYS, ...zero() }]),
    );
    if (keyIds.length === 0) return out;
    const rows = await this.db
      .selectFrom("deployment_key_usage")
      .select((eb) => [
        "key_id",
        eb.fn.sum("requests").as("requests"),
        eb.fn.sum("prompt_tokens").as("prompt_tokens"),
        eb.fn.sum("completion_tokens").as("completion_tokens"),
      ])
      .where("key_id", "in", keyIds)
      .where("day", ">=", lastDays(KEY_USAGE_SUMMARY_DAYS, now)[0])
      .groupBy("key_id")
      .execute();
    for (const r of rows) {
      out.set(r.key_id, {
        days: KEY_USAGE_SUMMARY_DAYS,
        requests: Number(r.requests),
        promptTokens: Number(r.prompt_tokens),
        completionTokens: Number(r.completion_tokens),
      });
    }
    return out;
  }

  /** One row per day of the last `days` UTC days, oldest first, zeros where the key was not used. */
  async daily(keyId: string, days: number, now = Date.now()): Promise<DeploymentKeyUsage> {
    const range = lastDays(days, now);
    const rows = await this.db
      .selectFrom("deployment_key_usage")
      .selectAll()
      .where("key_id", "=", keyId)
      .where("day", ">=", range[0])
      .execute();
    const byDay = new Map(rows.map((r) => [r.day, r]));
    const totals = zero();
    const daily = range.map((day): KeyUsageDay => {
      const r = byDay.get(day);
      const row = {
        day,
        requests: Number(r?.requests ?? 0),
        promptTokens: Number(r?.prompt_tokens ?? 0),
        completionTokens: Number(r?.completion_tokens ?? 0),
      };
      totals.requests += row.requests;
      totals.promptTokens += row.promptTokens;
      totals.completionTokens += row.completionTokens;
      return row;
    });
    return { keyId, from: range[0], to: range[range.length - 1], totals, daily };
  }
}
