// Deployments served in a weight format (docs/serving-formats.md): the
// weightFormat field (validated, stored, patched, refused with an upstream),
// the server's default (svc server --weights), and the edge answering through
// the official OpenAI client with exactly what the engine gives in that format;
// the inference process's log says what it holds (no fp32 copy behind a
// converted format; a format left idle by a switch released, and loaded again).
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createGenerator, loadModel, type WeightFormat } from "@svc/engine";
import { call, edgeClient, type Identity, newIdentity, serverFor } from "./harness.js";
import { uniqueSlug } from "./suites/deployments.js";

// The bundled model: a random tiny one answers the same in every format.
const PICO_DIR = join(fileURLToPath(new URL("../../../..", import.meta.url)), "models/pico-llama");
const PICO = "svc/pico-llama";
const MAX_TOKENS = 40;

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Greedy answers of the engine in-process, per format, to the same chat the edge renders. */
async function engineAnswer(format: WeightFormat, content: string): Promise<string> {
  const model = await loadModel(PICO_DIR);
  const generator = createGenerator(model, { weightFormat: format });
  const result = await generator.complete({
    messages: [{ role: "user", content }],
    temperature: 0,
    maxTokens: MAX_TOKENS,
  });
  return result.text;
}

describe("deployments in a weight format", () => {
  let server: Awaited<ReturnType<typeof serverFor>>;
  let id: Identity;
  // a prompt on which the greedy answer in int8 differs from fp32's
  let prompt = "";
  const answers = {} as Record<WeightFormat, string>;

  before(async () => {
    server = await serverFor(
      "sqlite",
      ["--weights", "int8", "--model", `${PICO}=${PICO_DIR}`, "--upstream", "up=http://127.0.0.1:9/v1"],
      // a format idle while another of its model serves is released at once (default: 10 minutes)
      { ...process.env, SVC_FORMAT_RELEASE_MS: "0" },
    );
    id = await newIdentity(server.apiUrl);
    const subjects = ["the sea", "the president", "the war", "the law", "a ship", "the church", "the city"];
    for (const subject of subjects) {
      const content = `Tell me about ${subject}.`;
      for (const f of ["fp32", "bf16", "int8"] as const) answers[f] = await engineAnswer(f, content);
      if (answers.int8 !== answers.fp32) {
        prompt = content;
        break;
      }
    }
    assert.ok(prompt, "no prompt tells int8 from fp32 on the bundled model");
  });
  after(() => server.cleanup());

  const create = (json: unknown) =>
    call(server.apiUrl, "POST", `/v1/endpoints?${id.scope}`, { token: id.token, json });
  const patch = (deploymentId: string, json: unknown) =>
    call(server.apiUrl, "PATCH", `/v1/endpoints/${deploymentId}`, { token: id.token, json });
  const list = async () =>
    (await call(server.apiUrl, "GET", `/v1/endpoints?${id.scope}`, { token: id.token })).body.deployments as {
      slug: string;
    }[];
  const keyOf = async (deploymentId: string) =>
    (
      await call(server.apiUrl, "POST", `/v1/endpoints/${deploymentId}/keys`, {
        token: id.token,
        json: { label: "k" },
      })
    ).body.key.plaintext as string;
  const ask = async (slug: string, key: string) => {
    const completion = await edgeClient(server.edgeUrl, slug, key).chat.completions.create({
      model: "x",
      messages: [{ role: "user", content: prompt }],
      temperature: 0,
      max_tokens: MAX_TOKENS,
    });
    return completion.choices[0].message.content;
  };

  it("serves an int8 deployment through the edge with the engine's int8 answer", async () => {
    const slug = uniqueSlug("int8");
    const reply = await create({
      slug,
      target: { kind: "base_model", baseModel: PICO },
      weightFormat: "int8",
    });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    assert.equal(reply.body.deployment.weightFormat, "int8");
    const got = await call(server.apiUrl, "GET", `/v1/endpoints/${reply.body.deployment.id}`, {
      token: id.token,
    });
    assert.equal(got.body.deployment.weightFormat, "int8");
    assert.equal(await ask(slug, await keyOf(reply.body.deployment.id)), answers.int8);
    // the first format this server loads: read and converted from the checkpoint, no fp32 copy
    assert.match(server.output(), /loaded \S*pico-llama in int8 .*no fp32 copy held/);
  });

  it("serves a deployment without a format in the server's default (--weights int8); PATCH changes it", async () => {
    const slug = uniqueSlug("default");
    const reply = await create({ slug, target: { kind: "base_model", baseModel: PICO } });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    assert.equal(reply.body.deployment.weightFormat, null);
    const key = await keyOf(reply.body.deployment.id);
    assert.equal(await ask(slug, key), answers.int8);
    const changed = await patch(reply.body.deployment.id, { weightFormat: "fp32" });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal(changed.body.deployment.weightFormat, "fp32");
    assert.equal(await ask(slug, key), answers.fp32);
    const bf16 = await patch(reply.body.deployment.id, { weightFormat: "bf16" });
    assert.equal(bf16.body.deployment.weightFormat, "bf16");
    assert.equal(await ask(slug, key), answers.bf16);
    const back = await patch(reply.body.deployment.id, { weightFormat: null });
    assert.equal(back.body.deployment.weightFormat, null);
    assert.equal(await ask(slug, key), answers.int8);
  });

  it("switches a deployment fp32 → int8 → fp32: the idle fp32 weights are released, then loaded again", async () => {
    const loadsOf = (format: string) =>
      server.output().match(new RegExp(`loaded \\S*pico-llama in ${format} `, "g"))?.length ?? 0;
    const releasesOf = (format: string) =>
      server.output().match(new RegExp(`released \\S*pico-llama in ${format} `, "g"))?.length ?? 0;
    const slug = uniqueSlug("switch");
    const reply = await create({
      slug,
      target: { kind: "base_model", baseModel: PICO },
      weightFormat: "fp32",
    });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    const key = await keyOf(reply.body.deployment.id);
    assert.equal(await ask(slug, key), answers.fp32);
    const fp32Loads = loadsOf("fp32");
    const fp32Releases = releasesOf("fp32");
    assert.equal((await patch(reply.body.deployment.id, { weightFormat: "int8" })).status, 200);
    assert.equal(await ask(slug, key), answers.int8);
    await until(() => releasesOf("fp32") > fp32Releases, "the fp32 weights released");
    assert.equal((await patch(reply.body.deployment.id, { weightFormat: "fp32" })).status, 200);
    assert.equal(await ask(slug, key), answers.fp32);
    assert.equal(loadsOf("fp32"), fp32Loads + 1, "fp32 loaded again from disk");
    assert.equal(await ask(slug, key), answers.fp32);
  });

  it("refuses an unknown format and a format with an upstream, naming the field, creating nothing", async () => {
    const before = (await list()).length;
    const target = { kind: "base_model", baseModel: PICO };
    const unknown = await create({ slug: uniqueSlug("bad"), target, weightFormat: "int4" });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error.message, /"weightFormat"/);
    assert.match(unknown.body.error.message, /q4_0/);
    const withUpstream = await create({
      slug: uniqueSlug("up"),
      target,
      upstream: { name: "up", model: "m" },
      weightFormat: "int8",
    });
    assert.equal(withUpstream.status, 400);
    assert.equal(withUpstream.body.error.code, "weight_format_with_upstream");
    assert.equal((await list()).length, before);

    const slug = uniqueSlug("q4");
    const q4 = await create({ slug, target, weightFormat: "q4_0" });
    assert.equal(q4.status, 201);
    const moved = await patch(q4.body.deployment.id, { upstream: { name: "up", model: "m" } });
    assert.equal(moved.status, 400);
    assert.equal(moved.body.error.code, "weight_format_with_upstream");
    const unchanged = await call(server.apiUrl, "GET", `/v1/endpoints/${q4.body.deployment.id}`, {
      token: id.token,
    });
    assert.equal(unchanged.body.deployment.upstream, null);
    assert.equal(unchanged.body.deployment.weightFormat, "q4_0");
    const both = await patch(q4.body.deployment.id, {
      upstream: { name: "up", model: "m" },
      weightFormat: null,
    });
    assert.equal(both.status, 200, JSON.stringify(both.body));
    assert.equal(both.body.deployment.weightFormat, null);
  });
});
