// The end-to-end path: anonymous token → dataset → a job trains a tiny
// model → events → deploy the final adapter → openai client 200 → disable 404
// → revoke the key 401.
import assert from "node:assert/strict";
import { it } from "node:test";
import OpenAI from "openai";
import { call, chatJsonl, eventsUntilEnd, type ServerProcess, TINY_MODEL } from "../harness.js";
import { uniqueSlug } from "./deployments.js";

export function endToEndTests(server: () => ServerProcess) {
  it("trains, deploys and serves a fine-tuned adapter through the edge", async () => {
    const api = server().apiUrl;
    const auth = await call(api, "POST", "/v1/auth/anonymous");
    const token = auth.body.token as string;
    const orgSlug = auth.body.org.slug as string;
    assert.equal(
      (await call(api, "POST", "/v1/projects", { token, json: { orgSlug, slug: "e2e" } })).status,
      201,
    );
    const scope = `orgSlug=${orgSlug}&projectSlug=e2e`;
    const upload = await call(api, "POST", `/v1/datasets?${scope}&name=arith.jsonl`, {
      token,
      body: chatJsonl(24),
    });
    assert.equal(upload.status, 201);
    const job = await call(api, "POST", `/v1/jobs?${scope}`, {
      token,
      json: {
        name: "e2e",
        baseModel: TINY_MODEL,
        datasetId: upload.body.dataset.id,
        evalFraction: 0.25,
        hyperparameters: {
          lora: { r: 4, alpha: 8 },
          maxSteps: 6,
          batchSize: 2,
          saveSteps: 3,
          evalSteps: 3,
          learningRate: 1e-3,
        },
      },
    });
    assert.equal(job.status, 201);
    const jobId = job.body.job.id as string;

    const frames = await eventsUntilEnd(api, token, jobId);
    const seen = new Set(frames.map((f) => f.event));
    for (const type of ["training.started", "training.log", "checkpoint.saved", "training.completed", "end"])
      assert.ok(seen.has(type), type);
    assert.equal(frames.at(-1)?.event, "end");
    assert.equal(frames.at(-2)?.event, "training.completed");
    const logs = frames.filter((f) => f.event === "training.log").map((f) => JSON.parse(f.data));
    assert.ok(
      logs.some((l) => typeof l.evalLoss === "number"),
      "eval loss reported",
    );
    // Every eval reports the task metrics as fractions; other steps carry them as null.
    for (const l of logs) {
      for (const metric of [l.evalTokenAccuracy, l.evalExactMatch]) {
        if (l.evalLoss === null) assert.equal(metric, null);
        else assert.ok(typeof metric === "number" && metric >= 0 && metric <= 1, JSON.stringify(l));
      }
    }
    assert.equal(JSON.parse(frames.at(-2)!.data).metrics.steps, 6);

    const created = await call(api, "POST", `/v1/endpoints?${scope}`, {
      token,
      json: { slug: uniqueSlug("e2e"), target: { kind: "adapter", adapter: { kind: "final", jobId } } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const deployment = created.body.deployment;
    const issued = await call(api, "POST", `/v1/endpoints/${deployment.id}/keys`, {
      token,
      json: { label: "e2e" },
    });
    const key = issued.body.key;
    const openai = new OpenAI({
      apiKey: key.plaintext,
      baseURL: `${server().edgeUrl}/d/${deployment.slug}/v1`,
      maxRetries: 0,
    });

    const completion = await openai.chat.completions.create({
      model: "anything",
      messages: [{ role: "user", content: "What is 4 plus one?" }],
      max_tokens: 8,
      // Sampled at temperature 1, an unseeded draw can pick EOS first and answer "".
      seed: 7,
    });
    assert.ok((completion.choices[0].message.content ?? "").length > 0);

    await call(api, "PATCH", `/v1/endpoints/${deployment.id}`, { token, json: { enabled: false } });
    await assert.rejects(
      openai.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }] }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );

    await call(api, "PATCH", `/v1/endpoints/${deployment.id}`, { token, json: { enabled: true } });
    await call(api, "DELETE", `/v1/endpoints/${deployment.id}/keys/${key.id}`, { token });
    await assert.rejects(
      openai.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }] }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError,
    );
  });
}
