// Model families through `svc server`: models registered with --model are
// described by the engine (family, architecture, size, context, LoRA
// targets); a job's LoRA targets are checked against its model's family; a
// folder the engine cannot read stops the server with the engine's reason;
// and a LoRA job on a tiny Qwen3 and a tiny Gemma 3 trains the family's
// modules, deploys and answers the official openai client through the edge,
// also on the two as transformers itself saved them at their config classes'
// defaults (engine/fixtures-transformers).
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  call,
  chatJsonl,
  edgeClient,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  serverFor,
  spawnReady,
  tempDir,
  uploadDataset,
} from "./harness.js";

/** packages/engine/fixtures and fixtures-transformers, from packages/server/dist/test/. */
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "../../../engine/fixtures");
const TRANSFORMERS_FIXTURES = `${FIXTURES}-transformers`;
const MODEL_FILES = [
  "config.json",
  "generation_config.json",
  "model.safetensors",
  "tokenizer.json",
  "tokenizer_config.json",
];

/** A copy of a committed engine fixture's model files (the fixtures stay read-only). */
function fixtureModel(root: string, fixture: string, folder = FIXTURES): string {
  const dir = join(root, fixture);
  mkdirSync(dir);
  for (const file of MODEL_FILES) {
    const from = join(folder, fixture, file);
    if (existsSync(from)) copyFileSync(from, join(dir, file));
  }
  return dir;
}

const QWEN3 = "test/qwen3";
const GEMMA3 = "test/gemma3";
const PHI3 = "test/phi3";
const QWEN3_HF = "test/qwen3-transformers";
const GEMMA3_HF = "test/gemma3-transformers";
const SEPARATE = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"];
const FUSED = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"];

/** The module names (q_proj, …) an adapter's safetensors holds LoRA factors for. */
function adapterModules(safetensors: Buffer): string[] {
  const header = JSON.parse(safetensors.subarray(8, 8 + Number(safetensors.readBigUInt64LE(0))).toString());
  const names = Object.keys(header)
    .filter((k) => k !== "__metadata__")
    .map((k) => /\.(\w+)\.lora_[AB]\.weight$/.exec(k)?.[1] ?? k);
  return [...new Set(names)].sort();
}

describe("model families through svc server", () => {
  let server: Awaited<ReturnType<typeof serverFor>>;
  let api: string;
  let id: Identity;
  before(async () => {
    const models = tempDir("families");
    const flags = [
      [QWEN3, fixtureModel(models, "qwen3-v5-bf16")],
      [GEMMA3, fixtureModel(models, "gemma3-v5-f32")],
      [PHI3, fixtureModel(models, "phi3-mini-v5-f32")],
      [QWEN3_HF, fixtureModel(models, "qwen3-defaults", TRANSFORMERS_FIXTURES)],
      [GEMMA3_HF, fixtureModel(models, "gemma3-defaults", TRANSFORMERS_FIXTURES)],
    ].flatMap(([name, dir]) => ["--model", `${name}=${dir}`]);
    server = await serverFor("sqlite", [...flags, "--job-poll-ms", "100"]);
    api = server.apiUrl;
    id = await newIdentity(api);
  });
  after(async () => server?.cleanup());

  it("GET /v1/models describes each model as the engine reads it", async () => {
    const reply = await call(api, "GET", "/v1/models", { token: id.token });
    assert.equal(reply.status, 200);
    const byName = new Map(reply.body.models.map((m: { name: string }) => [m.name, m]));
    const expected: [string, string, string, string[], number][] = [
      [QWEN3, "qwen3", "Qwen3ForCausalLM", SEPARATE, 512],
      [GEMMA3, "gemma3", "Gemma3ForCausalLM", SEPARATE, 512],
      [PHI3, "phi3", "Phi3ForCausalLM", FUSED, 512],
      [QWEN3_HF, "qwen3", "Qwen3ForCausalLM", SEPARATE, 32768],
      [GEMMA3_HF, "gemma3", "Gemma3ForCausalLM", SEPARATE, 131072],
    ];
    for (const [name, family, architecture, loraTargets, contextLength] of expected) {
      const model = byName.get(name) as Record<string, unknown>;
      assert.ok(model, `${name} in ${JSON.stringify(reply.body)}`);
      assert.equal(model.family, family);
      assert.equal(model.architecture, architecture);
      assert.deepEqual(model.loraTargets, loraTargets);
      assert.equal(model.contextLength, contextLength);
      assert.ok(typeof model.parameters === "number" && model.parameters > 0);
    }
  });

  it("refuses LoRA targets the model's family does not have, naming the field and the valid names, and creates nothing", async () => {
    const other = await newIdentity(api, "refusals");
    const dataset = await uploadDataset(api, other, chatJsonl(4));
    const job = (baseModel: string, targetModules: string[]) =>
      call(api, "POST", `/v1/jobs?${other.scope}`, {
        token: other.token,
        json: {
          name: "targets",
          baseModel,
          datasetId: dataset.id,
          hyperparameters: { lora: { r: 4, alpha: 8, targetModules }, maxSteps: 1 },
        },
      });
    const cases: [string, string[], RegExp][] = [
      [
        PHI3,
        ["qkv_proj", "q_proj"],
        /^"hyperparameters\.lora\.targetModules\[1\]": "q_proj" is not a LoRA target of test\/phi3 \(Phi3ForCausalLM\); valid: "qkv_proj", "o_proj", "gate_up_proj", "down_proj", or "all-linear" alone$/,
      ],
      [
        QWEN3,
        ["qkv_proj"],
        /^"hyperparameters\.lora\.targetModules\[0\]": "qkv_proj" is not a LoRA target of test\/qwen3 \(Qwen3ForCausalLM\); valid: "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", or "all-linear" alone$/,
      ],
      [GEMMA3, ["x_proj"], /"x_proj" is not a LoRA target of test\/gemma3/],
      [
        GEMMA3,
        ["all-linear", "q_proj"],
        /"hyperparameters\.lora\.targetModules\[0\]": "all-linear" means every module/,
      ],
    ];
    for (const [model, targets, message] of cases) {
      const reply = await job(model, targets);
      assert.equal(reply.status, 400, `${model} ${targets} → ${reply.status} ${JSON.stringify(reply.body)}`);
      assert.equal(reply.body.error.code, "invalid_request");
      assert.match(reply.body.error.message, message);
    }
    const jobs = await call(api, "GET", `/v1/jobs?${other.scope}`, { token: other.token });
    assert.deepEqual(jobs.body.jobs, []);
    // The fused names are Phi-3's own, and "all-linear" alone is any model's.
    for (const [model, targets] of [
      [PHI3, ["qkv_proj", "gate_up_proj"]],
      [QWEN3, ["all-linear"]],
    ] as const) {
      const reply = await job(model, [...targets]);
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      await call(api, "POST", `/v1/jobs/${reply.body.job.id}/cancel`, { token: other.token });
    }
  });

  for (const [model, targetModules] of [
    [QWEN3, undefined],
    [GEMMA3, ["all-linear"]],
    [QWEN3_HF, undefined],
    [GEMMA3_HF, ["all-linear"]],
  ] as const) {
    it(`trains a LoRA job on ${model} over its family's modules, deploys it and answers the openai client at the edge`, async () => {
      const dataset = await uploadDataset(api, id, chatJsonl(8));
      const created = await call(api, "POST", `/v1/jobs?${id.scope}`, {
        token: id.token,
        json: {
          name: `${model} lora`,
          baseModel: model,
          datasetId: dataset.id,
          hyperparameters: {
            lora: { r: 4, alpha: 8, ...(targetModules ? { targetModules } : {}) },
            maxSteps: 3,
            batchSize: 2,
            saveSteps: 3,
            learningRate: 1e-3,
          },
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const jobId = created.body.job.id as string;
      const frames = await eventsUntilEnd(api, id.token, jobId, 120_000);
      assert.equal(frames.at(-2)?.event, "training.completed", frames.map((f) => f.data).join("\n"));
      assert.equal(JSON.parse(frames.at(-2)!.data).metrics.steps, 3);

      // The adapter adapts every linear layer of the family (PEFT's all-linear).
      const file = (name: string) =>
        fetch(`${api}/v1/jobs/${jobId}/artifacts/final/${name}`, {
          headers: { authorization: `Bearer ${id.token}` },
        });
      const adapterConfig = (await (await file("adapter_config.json")).json()) as {
        target_modules: string[];
      };
      assert.deepEqual([...adapterConfig.target_modules].sort(), [...SEPARATE].sort());
      const weights = Buffer.from(await (await file("adapter_model.safetensors")).arrayBuffer());
      assert.deepEqual(adapterModules(weights), [...SEPARATE].sort());

      const slug = `${model.split("/")[1]}-${process.pid}`;
      const deployment = await call(api, "POST", `/v1/endpoints?${id.scope}`, {
        token: id.token,
        json: { slug, target: { kind: "adapter", adapter: { kind: "final", jobId } } },
      });
      assert.equal(deployment.status, 201, JSON.stringify(deployment.body));
      const key = await call(api, "POST", `/v1/endpoints/${deployment.body.deployment.id}/keys`, {
        token: id.token,
        json: { label: "families" },
      });
      assert.equal(key.status, 201, JSON.stringify(key.body));
      const { data: completion, response } = await edgeClient(server.edgeUrl, slug, key.body.key.plaintext)
        .chat.completions.create({
          model: "anything",
          messages: [{ role: "user", content: "What is 4 plus one?" }],
          max_tokens: 4,
        })
        .withResponse();
      assert.equal(response.status, 200);
      assert.equal(completion.object, "chat.completion");
      assert.ok(completion.choices.length > 0, JSON.stringify(completion));
      assert.equal(completion.choices[0].message.role, "assistant");
      assert.equal(typeof completion.choices[0].message.content, "string");
      const usage = completion.usage!;
      assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens > 0, JSON.stringify(usage));
      assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    });
  }
});

describe("a model folder the engine cannot read", () => {
  const qwen3 = JSON.parse(readFileSync(join(FIXTURES, "qwen3-v5-bf16", "config.json"), "utf8"));
  for (const [what, config, reason] of [
    [
      "an unsupported architecture",
      { ...qwen3, architectures: ["MambaForCausalLM"], model_type: "mamba" },
      /architecture MambaForCausalLM is not supported \(supported: LlamaForCausalLM/,
    ],
    [
      "a config key the family does not know",
      { ...qwen3, turbo_attention: true },
      /key "turbo_attention" is not understood for the qwen3 family/,
    ],
  ] as const) {
    it(`given with --model, stops svc server with the engine's reason: ${what}`, async () => {
      const dir = join(tempDir("bad-model"), "bad");
      mkdirSync(dir);
      writeFileSync(join(dir, "config.json"), JSON.stringify(config));
      const args = [
        "--port",
        "0",
        "--edge-port",
        "0",
        "--data-dir",
        tempDir("data"),
        "--bundled-models",
        "none",
      ];
      await assert.rejects(spawnReady("server", [...args, "--model", `me/bad=${dir}`]), (error: Error) => {
        assert.match(error.message, /exited with 1 before it was ready/);
        assert.match(error.message, new RegExp(`svc server: could not start: --model me/bad=${dir}: `));
        assert.match(error.message, reason);
        return true;
      });
    });
  }
});
