// Studio's loopback API over a real `svc server`: credentials minted on demand
// (never sent to the browser), lazy project state, deployment routes mapping
// CloudApiError to the upstream status, the OAuth missing-state error, the
// train stream with its job id header, and the SSE proxy's Last-Event-ID.
import assert from "node:assert/strict";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  LOOKUP_ORDER_TOOL,
  startTestModelServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "../cli/harness.js";
import {
  makeProject,
  type StudioProcess,
  startStudio,
  studioFetch,
  TRAINER_SOURCE,
} from "./studio-process.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read fields of JSON bodies
type Json = Record<string, any>;

const json = async (r: Response): Promise<Json> => (await r.json()) as Json;
const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

describe("Studio API against svc server", { timeout: 300_000 }, () => {
  let server: TestServer;
  let studio: StudioProcess;
  before(async () => {
    const serverHome = await tempDir("studio-api-server");
    server = await startTestModelServer(serverHome);
    const project = await makeProject({
      source: TRAINER_SOURCE.replace('"svc/pico-llama"', `"${TEST_MODEL}" as "svc/pico-llama"`).replace(
        "maxSteps: 12",
        "maxSteps: 6",
      ),
    });
    studio = await startStudio({
      ...project,
      env: { SVC_CLOUD_API_URL: server.apiUrl, SVC_EXTRA_MODELS: TEST_MODEL },
    });
  });
  after(async () => {
    await studio?.stop();
    await server?.stop();
  });

  test("GET /api/credentials mints anonymous credentials when the file is missing, and never returns the token", async () => {
    const credentialsFile = join(studio.home, ".svc", "credentials.json");
    assert.equal(await exists(credentialsFile), false);
    const r = await studioFetch(studio, "/api/credentials");
    const text = await r.text();
    assert.equal(r.status, 200, text);
    const stored = JSON.parse(await readFile(credentialsFile, "utf8"));
    assert.equal(stored.mode, "anonymous");
    assert.ok(!text.includes(stored.token), "bearer token reached the browser");
    const body = JSON.parse(text);
    assert.deepEqual(body, {
      mode: "anonymous",
      orgSlug: stored.orgSlug,
      projectSlug: null,
      apiHost: new URL(server.apiUrl).host,
      minted: true,
    });
    assert.equal((await json(await studioFetch(studio, "/api/credentials"))).minted, false);
    assert.equal(
      await exists(join(studio.projectDir, ".svc", "state.json")),
      false,
      "svc dev writes no state file",
    );
  });

  test("GET /api/models lists the server's base models", async () => {
    const body = await json(await studioFetch(studio, "/api/models"));
    assert.deepEqual(
      body.models.map((m: Json) => m.name),
      [TEST_MODEL],
    );
  });

  test("POST /api/models/pull passes the server's refusal through with its status; bad bodies and unknown pulls are refused", async () => {
    const pull = (body: string) => studioFetch(studio, "/api/models/pull", { method: "POST", body });
    const refused = await pull(JSON.stringify({ model: "someorg/some-model" }));
    const refusedBody = await json(refused);
    assert.equal(refused.status, 400, JSON.stringify(refusedBody));
    assert.equal(refusedBody.error.code, "hub_model_refused");
    assert.match(refusedBody.error.message, /svc server --hub-models cached/);
    const noModel = await pull(JSON.stringify({ name: "x" }));
    assert.equal(noModel.status, 400);
    assert.equal((await json(noModel)).error.message, "model: expected a string");
    const notJson = await pull("{");
    assert.equal(notJson.status, 400);
    const unknown = await studioFetch(studio, "/api/models/pull/nope");
    assert.equal(unknown.status, 404);
    assert.equal((await json(unknown)).error.code, "not_found");
  });

  test("deployments: empty without state; the first create writes .svc/state.json; errors keep the upstream status", async () => {
    assert.deepEqual(await json(await studioFetch(studio, "/api/deployments")), { deployments: [] });
    const create = (body: unknown) =>
      studioFetch(studio, "/api/deployments", { method: "POST", body: JSON.stringify(body) });
    const target = { kind: "base_model", baseModel: TEST_MODEL };
    const created = await create({ slug: "api-e2e", target });
    const createdBody = await json(created);
    assert.equal(created.status, 201, JSON.stringify(createdBody));
    const d = createdBody.deployment;
    assert.equal(d.authMode, "fixed_api_key", "default auth mode");
    const state = JSON.parse(await readFile(join(studio.projectDir, ".svc", "state.json"), "utf8"));
    assert.deepEqual(Object.keys(state).sort(), ["orgSlug", "projectId", "projectSlug"]);

    const taken = await create({ slug: "api-e2e", target });
    assert.equal(taken.status, 409);
    const takenBody = await json(taken);
    assert.deepEqual(Object.keys(takenBody), ["error"]);
    assert.equal(typeof takenBody.error.message, "string");
    assert.equal(typeof takenBody.error.code, "string");
    assert.equal((await create({ slug: "www", target })).status, 400, "reserved slug");
    assert.equal((await create({ slug: "A", target })).status, 400, "invalid slug");

    const list = await json(await studioFetch(studio, "/api/deployments"));
    assert.deepEqual(
      list.deployments.map((x: Json) => x.slug),
      ["api-e2e"],
    );
    assert.equal(
      (await json(await studioFetch(studio, `/api/deployments/${d.id}`))).deployment.slug,
      "api-e2e",
    );
    assert.equal(
      (await studioFetch(studio, "/api/deployments/00000000-0000-0000-0000-000000000000")).status,
      404,
    );

    const patched = await studioFetch(studio, `/api/deployments/${d.id}`, {
      method: "PATCH",
      body: JSON.stringify({ enabled: false, authMode: "none" }),
    });
    assert.equal(patched.status, 200);
    assert.deepEqual((({ enabled, authMode }) => ({ enabled, authMode }))((await json(patched)).deployment), {
      enabled: false,
      authMode: "none",
    });

    const issued = await studioFetch(studio, `/api/deployments/${d.id}/keys`, {
      method: "POST",
      body: JSON.stringify({ label: "k1" }),
    });
    assert.equal(issued.status, 201);
    const key = (await json(issued)).key;
    assert.equal(typeof key.plaintext, "string");
    const keys = await json(await studioFetch(studio, `/api/deployments/${d.id}/keys`));
    assert.equal(keys.keys.length, 1);
    assert.equal(keys.keys[0].plaintext, undefined, "plaintext appears only once");
    assert.ok(key.plaintext.startsWith(keys.keys[0].prefix));
    const tooLong = await studioFetch(studio, `/api/deployments/${d.id}/keys`, {
      method: "POST",
      body: JSON.stringify({ label: "x".repeat(81) }),
    });
    assert.equal(tooLong.status, 400);
    // The key's 30-day usage comes through with the list, as Studio's keys table shows it.
    assert.deepEqual(keys.keys[0].usage, { days: 30, requests: 0, promptTokens: 0, completionTokens: 0 });
    const keyed = await studioFetch(studio, `/api/deployments/${d.id}`, {
      method: "PATCH",
      body: JSON.stringify({ enabled: true, authMode: "fixed_api_key" }),
    });
    assert.equal(keyed.status, 200);
    const served = await fetch(`${server.edgeUrl}/d/api-e2e/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.plaintext}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
    });
    assert.equal(served.status, 200);
    const { usage } = await json(served);
    let listedUsage: Json = {};
    // the request is counted when it starts and its tokens when its answer ends: wait for both
    const settled = () =>
      listedUsage.requests === 1 && listedUsage.completionTokens === usage.completion_tokens;
    for (const deadline = Date.now() + 30_000; !settled() && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      listedUsage = (await json(await studioFetch(studio, `/api/deployments/${d.id}/keys`))).keys[0].usage;
    }
    assert.deepEqual(listedUsage, {
      days: 30,
      requests: 1,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
    });
    const revoked = await studioFetch(studio, `/api/deployments/${d.id}/keys/${key.id}`, {
      method: "DELETE",
    });
    assert.equal((await json(revoked)).key.enabled, false);

    assert.equal((await studioFetch(studio, `/api/deployments/${d.id}`, { method: "DELETE" })).status, 204);
    assert.equal((await studioFetch(studio, `/api/deployments/${d.id}`)).status, 404);
  });

  test("POST /api/train streams svc start's raw output and sends the job id header; the SSE proxy resumes from Last-Event-ID", async () => {
    const res = await studioFetch(studio, "/api/train", { method: "POST" });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    const jobId = res.headers.get("X-Svc-Job-Id") ?? "";
    assert.match(jobId, /^[0-9a-f-]{36}$/);
    const output = await res.text();
    assert.match(output, new RegExp(`^job ${jobId} submitted: support-bot`, "m"));
    assert.match(output, new RegExp(`done: job ${jobId}`));

    const jobs = await json(await studioFetch(studio, "/api/jobs"));
    assert.ok(jobs.jobs.some((j: Json) => j.id === jobId && j.status === "completed"));

    // Query token on the event stream; every frame has an id; `end` closes it.
    const all = await fetch(
      `${studio.url}/api/jobs/${jobId}/events?studioToken=${encodeURIComponent(studio.token)}`,
    );
    assert.equal(all.status, 200);
    assert.match(all.headers.get("content-type") ?? "", /^text\/event-stream/);
    const frames = parseFrames(await all.text());
    const names = frames.map((f) => f.event);
    assert.equal(names[0], "training.started");
    assert.equal(names.at(-1), "end");
    assert.ok(names.includes("training.completed"));
    const third = frames[2];
    assert.ok(third.id, "frames carry ids");
    const resumed = await studioFetch(studio, `/api/jobs/${jobId}/events`, {
      headers: { "Last-Event-ID": third.id },
    });
    const rest = parseFrames(await resumed.text());
    assert.deepEqual(
      rest.map((f) => f.id),
      frames.slice(3).map((f) => f.id),
    );

    const cancelled = await studioFetch(studio, `/api/jobs/${jobId}/cancel`, { method: "POST" });
    assert.ok(
      cancelled.status === 200 || cancelled.status === 409,
      `cancel of a finished job: ${cancelled.status}`,
    );
  });

  test("POST /api/inference/chat streams NDJSON deltas from the base model", async () => {
    const r = await studioFetch(studio, "/api/inference/chat", {
      method: "POST",
      body: JSON.stringify({
        baseModel: TEST_MODEL,
        messages: [{ role: "user", content: "hi" }],
        maxTokens: 4,
        seed: 1,
      }),
    });
    assert.equal(r.status, 200);
    const lines = (await r.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    assert.ok(lines.length >= 1);
    for (const l of lines) assert.equal(typeof l.delta, "string");
    const unknownModel = await studioFetch(studio, "/api/inference/chat", {
      method: "POST",
      body: JSON.stringify({ baseModel: "nobody/nothing", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.ok(
      unknownModel.status >= 400 && unknownModel.status < 500,
      `upstream status kept: ${unknownModel.status}`,
    );
    assert.equal(typeof (await json(unknownModel)).error.message, "string");
  });

  test("POST /api/inference/chat with tools answers the calls; responseFormat streams valid JSON", async () => {
    const tools = [LOOKUP_ORDER_TOOL];
    const messages = [{ role: "user", content: "Where is A1?" }];
    const r = await studioFetch(studio, "/api/inference/chat", {
      method: "POST",
      body: JSON.stringify({
        baseModel: TEST_MODEL,
        messages,
        tools,
        toolChoice: "required",
        parallelToolCalls: false,
        maxTokens: 200,
      }),
    });
    assert.equal(r.status, 200);
    const lines = (await r.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const calls = lines.find((l) => l.toolCalls)?.toolCalls;
    assert.equal(calls?.length, 1, JSON.stringify(lines));
    assert.equal(calls[0].function.name, "lookup_order");
    assert.ok(["A1", "B2"].includes(JSON.parse(calls[0].function.arguments).order_id));

    // The call goes back as history with the tool's answer.
    const followUp = await studioFetch(studio, "/api/inference/chat", {
      method: "POST",
      body: JSON.stringify({
        baseModel: TEST_MODEL,
        tools,
        maxTokens: 4,
        messages: [
          ...messages,
          { role: "assistant", content: null, tool_calls: calls },
          { role: "tool", tool_call_id: calls[0].id, content: "shipped" },
        ],
      }),
    });
    assert.equal(followUp.status, 200);

    const formatted = await studioFetch(studio, "/api/inference/chat", {
      method: "POST",
      body: JSON.stringify({
        baseModel: TEST_MODEL,
        messages,
        responseFormat: { type: "json_object" },
        maxTokens: 200,
      }),
    });
    const text = (await formatted.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).delta)
      .join("");
    assert.equal(typeof JSON.parse(text), "object");

    const badSchema = await studioFetch(studio, "/api/inference/chat", {
      method: "POST",
      body: JSON.stringify({
        baseModel: TEST_MODEL,
        messages,
        responseFormat: {
          type: "json_schema",
          json_schema: { name: "r", schema: { type: "string", format: "email" } },
        },
      }),
    });
    assert.equal(badSchema.status, 400);
    assert.match((await json(badSchema)).error.message, /"format"/);
  });
});

describe("Studio with OAuth credentials and no .svc/state.json", () => {
  test("a deployment create fails with the missing-state error and writes no file", async () => {
    const project = await makeProject();
    await mkdir(join(project.home, ".svc"), { recursive: true });
    await writeFile(
      join(project.home, ".svc", "credentials.json"),
      JSON.stringify({
        mode: "oauth",
        accessToken: "header.payload.signature",
        issuer: "http://127.0.0.1:9/issuer",
        clientId: "svc-cli",
        orgSlug: "acme",
        apiUrl: "http://127.0.0.1:9",
      }),
    );
    const studio = await startStudio({ ...project, env: { SVC_CLOUD_API_URL: "http://127.0.0.1:9" } });
    try {
      const r = await studioFetch(studio, "/api/deployments", {
        method: "POST",
        body: JSON.stringify({ slug: "x-bot", target: { kind: "base_model", baseModel: TEST_MODEL } }),
      });
      const body = await json(r);
      assert.equal(r.status, 409);
      assert.equal(body.error.code, "missing_project_state");
      assert.match(body.error.message, /state\.json/);
      assert.equal(await exists(join(project.projectDir, ".svc", "state.json")), false);
      const id = await json(await studioFetch(studio, "/api/credentials"));
      assert.equal(id.mode, "oauth");
      assert.equal(id.orgSlug, "acme");
    } finally {
      await studio.stop();
    }
  });
});

function parseFrames(text: string): { id: string; event: string; data: string }[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() && !block.startsWith(":"))
    .map((block) => {
      const f = { id: "", event: "message", data: "" };
      for (const line of block.split("\n")) {
        if (line.startsWith("id:")) f.id = line.slice(3).trim();
        else if (line.startsWith("event:")) f.event = line.slice(6).trim();
        else if (line.startsWith("data:")) f.data += line.slice(5).trim();
      }
      return f;
    })
    .filter((f) => f.event !== "ping");
}
