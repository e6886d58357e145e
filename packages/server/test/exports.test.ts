// Exports through the cloud API as a real process: a finished job's final
// adapter as GGUF (with its Modelfile), a checkpoint merged into its base
// model (reloaded by the engine: the logits of base + that checkpoint), a
// base model on its own; bad requests refused with the field named and
// nothing written; another org's export is not found.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
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

describe("exports through svc server", () => {
  let server: Awaited<ReturnType<typeof serverFor>>;
  let api: string;
  let id: Identity;
  let jobId: string;
  before(async () => {
    server = await serverFor("sqlite");
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

  it("writes a job's final adapter as GGUF q8_0 with an Ollama Modelfile, downloadable file by file", async () => {
    const reply = await post({ adapter: { kind: "final", jobId }, format: "gguf", quant: "q8_0" });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
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
    const reply = await post({
      adapter: { kind: "checkpoint", jobId, step: 1 },
      format: "merged",
      quant: "f32",
    });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
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
    const base = await post({ baseModel: TINY_MODEL, format: "gguf" });
    assert.equal(base.status, 201, JSON.stringify(base.body));
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

  it("an export is another org's business: not found, not downloadable, not deletable", async () => {
    const mine = (await post({ adapter: { kind: "final", jobId }, format: "peft" })).body.export;
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
