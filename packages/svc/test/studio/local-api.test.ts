// Studio routes that need no cloud API: the manifest (built from the project's
// source on every call), the header identity from on-disk credentials, and
// input validation at the edge.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  DEAD_CLOUD_API,
  makeProject,
  type StudioProcess,
  startStudio,
  studioFetch,
  TRAINER_SOURCE,
} from "./studio-process.js";

describe("GET /api/manifest", () => {
  let studio: StudioProcess;
  before(async () => {
    studio = await startStudio({ ...(await makeProject()), env: { SVC_CLOUD_API_URL: DEAD_CLOUD_API } });
  });
  after(() => studio?.stop());

  const manifest = async () => {
    const r = await studioFetch(studio, "/api/manifest");
    return {
      status: r.status,
      body: (await r.json()) as { trainer?: unknown; error: { code: string; message: string } },
    };
  };
  const source = (text: string) => writeFile(join(studio.projectDir, "src", "svc", "index.ts"), text);

  test("names the project's trainer, and picks up source edits on the next call", async () => {
    assert.deepEqual(await manifest(), { status: 200, body: { trainer: { name: "support-bot" } } });
    await source(TRAINER_SOURCE.replace('name: "support-bot"', 'name: "triage-bot"'));
    assert.deepEqual(await manifest(), { status: 200, body: { trainer: { name: "triage-bot" } } });
  });

  test("a bundle that exposes no trainer answers trainer: null", async () => {
    await source("export const nothing = 1;\n");
    assert.deepEqual(await manifest(), { status: 200, body: { trainer: null } });
  });

  test("a build failure answers 422 with the build error text", async () => {
    await source("export default createSvc({ trainer: \n");
    const r = await manifest();
    assert.equal(r.status, 422);
    assert.equal(r.body.error.code, "manifest_build_failed");
    assert.match(r.body.error.message, /index\.ts/);
  });
});

describe("GET /api/credentials", () => {
  let studio: StudioProcess;
  const secret = "anon-token-that-must-stay-in-the-cli-process";
  before(async () => {
    const project = await makeProject();
    await mkdir(join(project.home, ".svc"), { recursive: true });
    await writeFile(
      join(project.home, ".svc", "credentials.json"),
      JSON.stringify({ mode: "anonymous", token: secret, orgSlug: "anon-1234", apiUrl: DEAD_CLOUD_API }),
    );
    studio = await startStudio({ ...project, env: { SVC_CLOUD_API_URL: DEAD_CLOUD_API } });
  });
  after(() => studio?.stop());

  test("returns the header identity and never the bearer token", async () => {
    const r = await studioFetch(studio, "/api/credentials");
    const text = await r.text();
    assert.equal(r.status, 200);
    assert.ok(!text.includes(secret), "bearer token sent to the browser");
    assert.deepEqual(JSON.parse(text), {
      mode: "anonymous",
      orgSlug: "anon-1234",
      projectSlug: null,
      apiHost: "127.0.0.1:9",
      minted: false,
    });
  });

  test("shows the project once .svc/state.json exists", async () => {
    await mkdir(join(studio.projectDir, ".svc"), { recursive: true });
    await writeFile(
      join(studio.projectDir, ".svc", "state.json"),
      JSON.stringify({ orgSlug: "anon-1234", projectSlug: "demo-project", projectId: "p1" }),
    );
    const body = (await (await studioFetch(studio, "/api/credentials")).json()) as {
      projectSlug: string | null;
    };
    assert.equal(body.projectSlug, "demo-project");
  });

  test("the header hides the host of the default (local) cloud API", async () => {
    const home = studio.home;
    const other = await startStudio({
      projectDir: studio.projectDir,
      home,
      env: { SVC_CLOUD_API_URL: "http://127.0.0.1:4100/" },
    });
    try {
      const body = (await (await studioFetch(other, "/api/credentials")).json()) as {
        apiHost: string | null;
      };
      assert.equal(body.apiHost, null);
    } finally {
      await other.stop();
    }
  });

  test("POST /api/train streams svc start's error as printed when no job starts (no job id header)", async () => {
    const started = Date.now();
    const r = await studioFetch(studio, "/api/train", { method: "POST" });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("X-Svc-Job-Id"), null);
    assert.match(await r.text(), /^svc start: cannot reach the cloud API at http:\/\/127\.0\.0\.1:9/);
    assert.ok(Date.now() - started < 10_000, "answers when svc start exits, without waiting for a job id");
  });

  test("bad input is a 400 naming the field, before any upstream call", async () => {
    const cases: [string, string, unknown, RegExp][] = [
      ["/api/inference/chat", "POST", { messages: [] }, /^messages: /],
      ["/api/inference/chat", "POST", { messages: [{ role: "user", content: 3 }] }, /^messages\[0\]: /],
      [
        "/api/inference/chat",
        "POST",
        { messages: [{ role: "user", content: "hi" }], temperature: "hot" },
        /^temperature: /,
      ],
      ["/api/deployments", "POST", [1, 2], /JSON object/],
    ];
    for (const [path, method, body, message] of cases) {
      const r = await studioFetch(studio, path, { method, body: JSON.stringify(body) });
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}`);
      assert.match(((await r.json()) as { error: { message: string } }).error.message, message);
    }
    const notJson = await studioFetch(studio, "/api/deployments", { method: "POST", body: "{nope" });
    assert.equal(notJson.status, 400);
  });
});
