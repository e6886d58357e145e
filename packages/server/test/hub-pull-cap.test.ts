// A server runs at most MAX_RUNNING_PULLS (4) Hub model pulls at once,
// through a real `svc server` against the loopback Hub (hub-server.ts) slowed
// down so that pulls stay running: a fifth model's pull, and a chat that would
// start one, are 429 too_many_pulls in the one error shape; asking again for
// a running pull still answers it; once the pulls finish, the fifth starts.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { call, type Identity, newIdentity, serverFor, tempDir, until } from "./harness.js";
import { qwen3Repo } from "./hub-repos.js";
import { TestHub } from "./hub-server.js";

const MODELS = [0, 1, 2, 3, 4].map((i) => `test-org/qwen3-capped-${i}`);

describe("the cap on running Hub model pulls", () => {
  let hub: TestHub;
  let server: Awaited<ReturnType<typeof serverFor>>;
  let id: Identity;
  const pull = (model: string) =>
    call(server.apiUrl, "POST", "/v1/models/pull", { token: id.token, json: { model } });

  before(async () => {
    hub = await TestHub.start();
    const repos = tempDir("hub-repos");
    for (const [i, repo] of MODELS.entries()) hub.addRepo({ repo, dir: qwen3Repo(join(repos, String(i))) });
    server = await serverFor(
      "sqlite",
      ["--hub-models", "test-org/*,cached"],
      hub.serverEnv(tempDir("hf-home")),
    );
    id = await newIdentity(server.apiUrl);
  });
  after(async () => {
    hub.chunkDelayMs = 0;
    await server?.cleanup();
    await hub?.close();
  });

  it("refuses a fifth model's pull with 429 too_many_pulls while four run, and starts it once they finish", async () => {
    hub.chunkDelayMs = 5_000; // every file (config.json first) takes seconds
    const running: string[] = [];
    for (const model of MODELS.slice(0, 4)) {
      const started = await pull(model);
      assert.equal(started.status, 202, JSON.stringify(started.body));
      assert.equal(started.body.pull.status, "downloading");
      running.push(started.body.pull.id);
    }
    const refused = await pull(MODELS[4]);
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "too_many_pulls");
    assert.match(
      refused.body.error.message,
      /4 model pulls are already running on this server \(at most 4\)/,
    );
    // a chat that would start the fifth pull is refused the same way
    const chat = await call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
      token: id.token,
      json: { messages: [{ role: "user", content: "hi" }], baseModel: MODELS[4], maxTokens: 2 },
    });
    assert.equal(chat.status, 429, JSON.stringify(chat.body));
    assert.equal(chat.body.error.code, "too_many_pulls");
    // a running pull is still answered
    const again = await pull(MODELS[0]);
    assert.equal(again.status, 202, JSON.stringify(again.body));
    assert.equal(again.body.pull.id, running[0]);

    hub.chunkDelayMs = 0;
    for (const pullId of running) {
      await until(
        `pull ${pullId} to end`,
        async () => {
          const got = await call(server.apiUrl, "GET", `/v1/models/pull/${pullId}`, { token: id.token });
          return got.body.pull.status !== "downloading" && got.body.pull;
        },
        60_000,
      );
    }
    const fifth = await pull(MODELS[4]);
    assert.equal(fifth.status, 202, JSON.stringify(fifth.body));
    assert.equal(fifth.body.pull.model, MODELS[4]);
  });
});
