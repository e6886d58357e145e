// Exports through the cloud API as a real process: a finished job's final
// adapter as GGUF (with its Modelfile), a checkpoint merged into its base
// model (reloaded by the engine: the logits of base + that checkpoint), a
// base model on its own; bad requests refused with the field named and
// nothing written; another org's export is not found.
import assert from "node:assert/strict";
import { cpSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { loadModel } from "@svc/engine";
import {
  call,
  type Identity,
  identityWithFinishedJob,
  newIdentity,
  serverFor,
  TINY_MODEL,
  tempDir,
  tinyModel,
} from "./harness.js";

/** A model GGUF cannot carry (YaRN with beta_fast 16), copied from the engine's fixtures. */
function yarnModel(): string {
  const from = join(dirname(fileURLToPath(import.meta.url)), "../../../engine/fixtures/llama-yarn-v5-f16");
  const dir = join(tempDir("yarn"), "model");
  cpSync(from, dir, { recursive: true });
  return dir;
}

describe("exports through svc server", () => {
  let server: Awaited<ReturnType<typeof serverFor>>;
  let api: string;
  let id: Identity;
  let jobId: string;
  before(async () => {
    server = await serverFor("sqlite", ["--model", `test/yarn=${yarnModel()}`]);
    api = server.apiUrl;
    ({ id, jobId } = await identityWithFinishedJob(api));
  });
  after(async () => server?.cleanup());

  const download = async (path: string, token = id.token) => {
    const response = await fetch(`${api}${path}`, { headers: { authorization: `Bearer ${token}` } });
    return {
      status: response.status,
      headers: response.headers,
      bytes: Buffer.from(await response.arrayBuffer()),
    };
  };
  const post = (json: unknown, identity = id) =>
    call(api, "POST", `/v1/exports?${identity.scope}`, { token: identity.token, json });
  /** Starts an export (202, running) and polls it until it is ready or failed. */
  const exported = async (json: unknown) => {
    const started = await post(json);
    assert.equal(started.status, 202, JSON.stringify(started.body));
    assert.equal(started.body.export.status, "running");
    assert.deepEqual(started.body.export.files, []);
    for (;;) {
      const reply = await call(api, "GET", `/v1/exports/${started.body.export.id}`, { token: id.token });
      assert.equal(reply.status, 200);
      if (reply.body.export.status !== "running") return reply;
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it("writes a job's final adapter as GGUF q8_0 with an Ollama Modelfile, downloadable file by file", async () => {
    const reply = await exported({ adapter: { kind: "final", jobId }, format: "gguf", quant: "q8_0" });
    assert.equal(reply.body.export.status, "ready", JSON.stringify(reply.body));
    assert.equal(reply.body.export.progress, null);
    const info = reply.body.export;
    assert.equal(info.format, "gguf");
    assert.equal(info.quant, "q8_0");
    assert.equal(info.jobId, jobId);
    assert.equal(info.step, null);
    assert.deepEqual(
      info.files.map((f: { path: string }) => f.path),
      ["model-q8_0.gguf", "Modelfile"],
    );
    const gguf = await download(`/v1/exports/${info.id}/model-q8_0.gguf`);
    assert.equal(gguf.status, 200);
    assert.equal(gguf.bytes.subarray(0, 4).toString("ascii"), "GGUF");
    assert.equal(gguf.bytes.readUInt32LE(4), 3);
    assert.equal(gguf.bytes.length, info.files[0].bytes);
    assert.match(gguf.headers.get("content-disposition") ?? "", /filename="model-q8_0.gguf"/);
    const modelfile = (await download(`/v1/exports/${info.id}/Modelfile`)).bytes.toString();
    assert.match(modelfile, /^FROM \.\/model-q8_0\.gguf$/m);
    assert.match(modelfile, /PARAMETER stop "<\|im_end\|>"/);
    const described = await call(api, "GET", `/v1/exports/${info.id}`, { token: id.token });
    assert.deepEqual(described.body.export, info);
  });

  it("merges a checkpoint into its base model: the folder reloads with the logits of base + that checkpoint", async () => {
    const reply = await exported({
      adapter: { kind: "checkpoint", jobId, step: 1 },
      format: "merged",
      quant: "f32",
    });
    assert.equal(reply.body.export.status, "ready", JSON.stringify(reply.body));
    const info = reply.body.export;
    assert.equal(info.step, 1);
    const merged = join(tempDir("merged"), "model");
    mkdirSync(merged);
    for (const file of info.files) {
      writeFileSync(join(merged, file.path), (await download(`/v1/exports/${info.id}/${file.path}`)).bytes);
    }
    const adapter = join(tempDir("adapter"), "checkpoint-1");
    mkdirSync(adapter);
    for (const file of ["adapter_config.json", "adapter_model.safetensors"]) {
      const bytes = (await download(`/v1/jobs/${jobId}/artifacts/checkpoint-1/${file}`)).bytes;
      writeFileSync(join(adapter, file), bytes);
    }
    const prompt = [1, 40, 77, 100, 3, 250, 17];
    const want = (await loadModel(await tinyModel(), { adapter })).logits(prompt);
    const got = (await loadModel(merged)).logits(prompt);
    let diff = 0;
    for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(want[i] - got[i]));
    assert.ok(diff < 1e-4, `merged logits differ by ${diff}`);
  });

  it("exports a base model on its own, and refuses what it cannot write, naming the field", async () => {
    const base = await exported({ baseModel: TINY_MODEL, format: "gguf" });
    assert.equal(base.body.export.status, "ready", JSON.stringify(base.body));
    assert.equal(base.body.export.quant, "f16");
    assert.equal(base.body.export.jobId, null);
    const before = readdirSync(join(server.dataDir, "exports")).length;
    const cases: [unknown, number, RegExp][] = [
      [{ baseModel: TINY_MODEL, format: "peft" }, 400, /"format": format peft needs an adapter/],
      [
        { adapter: { kind: "final", jobId }, format: "gguf", quant: "q3_k" },
        400,
        /"quant": quant "q3_k" is not one of f16, q8_0, q4_k_m/,
      ],
      [
        { adapter: { kind: "final", jobId }, format: "onnx" },
        400,
        /"format" must be one of "peft", "merged", "gguf"/,
      ],
      [{ format: "gguf" }, 400, /"adapter" or "baseModel" is required/],
      [
        { adapter: { kind: "checkpoint", jobId, step: 7 }, format: "merged" },
        400,
        /"adapter.step": job .* has no checkpoint at step 7/,
      ],
      [{ baseModel: "test/none", format: "merged" }, 400, /test\/none/],
    ];
    for (const [json, status, message] of cases) {
      const reply = await post(json);
      assert.equal(reply.status, status, JSON.stringify(reply.body));
      assert.match(reply.body.error.message, message);
    }
    assert.equal(
      readdirSync(join(server.dataDir, "exports")).length,
      before,
      "a refused export writes nothing",
    );
  });

  it("an export the engine refuses ends failed with its reason, its files gone and nothing to download", async () => {
    const reply = await exported({ baseModel: "test/yarn", format: "gguf" });
    const info = reply.body.export;
    assert.equal(info.status, "failed");
    assert.equal(info.error.code, "unsupported_architecture");
    assert.match(
      info.error.message,
      /cannot export to GGUF: yarn beta_fast 16 \(llama.cpp's llama uses 32\)/,
    );
    assert.deepEqual(info.files, []);
    assert.deepEqual(readdirSync(join(server.dataDir, "exports", info.id)), ["manifest.json"]);
    assert.equal((await download(`/v1/exports/${info.id}/model-f16.gguf`)).status, 404);
  });

  it("an export is another org's business: not found, not downloadable, not deletable", async () => {
    const mine = (await exported({ adapter: { kind: "final", jobId }, format: "peft" })).body.export;
    assert.deepEqual(
      mine.files.map((f: { path: string }) => f.path),
      ["adapter_config.json", "adapter_model.safetensors"],
    );
    const other = await newIdentity(api, "elsewhere");
    assert.equal((await call(api, "GET", `/v1/exports/${mine.id}`, { token: other.token })).status, 404);
    assert.equal((await download(`/v1/exports/${mine.id}/adapter_config.json`, other.token)).status, 404);
    assert.equal((await call(api, "DELETE", `/v1/exports/${mine.id}`, { token: other.token })).status, 404);
    const theirs = await post({ adapter: { kind: "final", jobId }, format: "peft" }, other);
    assert.equal(theirs.status, 404, "a job of another project is not found");
    assert.equal((await call(api, "DELETE", `/v1/exports/${mine.id}`, { token: id.token })).status, 200);
    assert.equal((await call(api, "GET", `/v1/exports/${mine.id}`, { token: id.token })).status, 404);
  });
});
