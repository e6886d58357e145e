// OpenAI's cursor lists: { object: "list", data, has_more } (files add
// first_id and last_id), `after` an object id and `limit` a count. Query
// parameters a route does not know are refused, naming them.
import type { Context } from "hono";
import { badRequest, quoteInput } from "../../http/api-error.js";
import { integerQuery } from "../../http/validate.js";

/** The scope's query parameters, accepted on every route (openai-scope.ts). */
const SCOPE_QUERY = ["orgSlug", "projectSlug"];

/** Refuses a query parameter outside `known` (and the scope's); `metadata[key]` when `metadataFilter`. */
export function checkQuery(c: Context, known: string[], metadataFilter = false): void {
  for (const key of Object.keys(c.req.query())) {
    if (known.includes(key) || SCOPE_QUERY.includes(key)) continue;
    if (metadataFilter && /^metadata\[.+\]$/.test(key)) continue;
    throw badRequest(
      `${quoteInput(key)} (query parameter) is not a known parameter of ${c.req.method} ${c.req.path}`,
    );
  }
}

/** ?limit= from 1 to `max`, `fallback` when absent. */
export const limitQuery = (c: Context, max: number, fallback: number): number =>
  integerQuery(c.req.query("limit"), "limit", { integer: true, min: 1, max }, fallback);

/** The items after the one whose id is `after` (all of them without `after`), at most `limit`, and whether more follow. */
export function pageAfter<T extends { id: string }>(
  items: T[],
  after: string | undefined,
  limit: number,
): { data: T[]; has_more: boolean } {
  let start = 0;
  if (after !== undefined) {
    const index = items.findIndex((item) => item.id === after);
    if (index < 0) throw badRequest(`"after" (query parameter): no object ${quoteInput(after)} in this list`);
    start = index + 1;
  }
  const data = items.slice(start, start + limit);
  return { data, has_more: start + limit < items.length };
}

/** The metadata[key]=value filters of a request's query. */
export function metadataFilters(c: Context): [string, string][] {
  return Object.entries(c.req.query())
    .map(([key, value]) => [/^metadata\[(.+)\]$/.exec(key)?.[1], value] as const)
    .filter((entry): entry is [string, string] => entry[0] !== undefined);
}
