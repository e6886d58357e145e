// The wire's route table (@svc/wire ROUTES and OPENAI_ROUTES) against the
// routes the cloud API app mounts: a route added to the server and not to the
// table, or one in the table that nothing serves, fails here. The app is the
// real one (createApiApp) on a real SQLite store; only its route list is read,
// so the rest of the context, which the handlers read per request, is left out.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { DEFAULT_JOB_LIMITS, OPENAI_ROUTES, ROUTES, type Route } from "@svc/wire";
import { createApiApp } from "../src/api-app.js";
import type { ServerContext } from "../src/context.js";
import { DataDir } from "../src/data-dir.js";
import { openDatabase } from "../src/db/connect.js";
import { Store } from "../src/store/store.js";
import { tempDir } from "./harness.js";

const dir = tempDir("route-table");
after(() => rmSync(dir, { recursive: true, force: true }));

async function mountedRoutes(): Promise<Set<string>> {
  const dataDir = new DataDir(join(dir, "data"));
  const store = new Store(await openDatabase({ sqlitePath: dataDir.sqlitePath }));
  try {
    const ctx = { store, dataDir, jobLimits: DEFAULT_JOB_LIMITS } as Partial<ServerContext> as ServerContext;
    const app = createApiApp(ctx);
    // middleware is registered as ALL; /healthz is the load balancer's, outside /v1
    return new Set(
      app.routes
        .filter((r) => r.method !== "ALL" && r.path.startsWith("/v1/"))
        .map((r) => `${r.method} ${r.path}`),
    );
  } finally {
    await store.close();
  }
}

const key = (r: Route) => `${r.method} ${r.path}`;

test("every route of the wire's table is mounted, and every mounted /v1 route is in the table", async () => {
  const mounted = await mountedRoutes();
  const table = [...Object.values(ROUTES), ...Object.values(OPENAI_ROUTES)] as Route[];
  const listed = new Set(table.map(key));
  assert.equal(listed.size, table.length, "two table entries name the same method and path");
  assert.deepEqual(
    [...listed].filter((r) => !mounted.has(r)),
    [],
    "in the wire's route table (packages/wire/src/routes.ts) but not mounted",
  );
  assert.deepEqual(
    [...mounted].filter((r) => !listed.has(r)),
    [],
    "mounted but not in the wire's route table (packages/wire/src/routes.ts): add it there",
  );
});
