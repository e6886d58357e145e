// The committed base model folder against what the recipe promises: a Hugging Face Llama
// folder within the size limit, tokens and logits the engine computes equal to PyTorch's
// (tools/pretrain/golden.json), and a chat turn that the model closes with <|im_end|>.
//
// Run: node --test tools/pretrain/base-model.test.mjs   (needs packages/engine built)
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadModel } from "@svc/engine";
import { needs } from "@svc/engine/testing";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dir = join(repo, "models", "pico-llama");
const golden = JSON.parse(readFileSync(join(repo, "tools", "pretrain", "golden.json"), "utf8"));

test("models/pico-llama is a tied-embedding LlamaForCausalLM folder of at most 30 MB", () => {
  const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
  assert.deepEqual(config.architectures, ["LlamaForCausalLM"]);
  assert.equal(config.tie_word_embeddings, true);
  assert.equal(config.hidden_size, config.num_attention_heads * config.head_dim);
  const bytes = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "generation_config.json",
  ]
    .map((f) => statSync(join(dir, f)).size)
    .reduce((a, b) => a + b, 0);
  assert.ok(bytes <= 30 * 1024 * 1024, `folder is ${bytes} bytes`);
  const tokenizerConfig = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
  assert.equal(tokenizerConfig.eos_token, "<|im_end|>");
});

test("the engine's chat tokens and logits equal PyTorch's golden values", async () => {
  const model = await loadModel(dir);
  const rendered = model.tokenizer.applyChatTemplate(golden.messages, { addGenerationPrompt: true });
  assert.deepEqual(model.tokenizer.encode(rendered), golden.ids);
  const V = model.config.vocabSize;
  const logits = model.logits(golden.ids);
  for (let t = 0; t < golden.ids.length; t++) {
    const row = logits.subarray(t * V, (t + 1) * V);
    golden.probe_ids.forEach((id, k) => {
      assert.ok(Math.abs(row[id] - golden.probe_logits[t][k]) < 1e-3, `position ${t}, token ${id}`);
    });
    let best = 0;
    for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
    assert.equal(best, golden.argmax[t], `argmax at position ${t}`);
  }
});

test("greedy decoding of a chat prompt ends the turn with <|im_end|>", async () => {
  const model = await loadModel(dir);
  const imEnd = model.tokenizer.encode("<|im_end|>");
  assert.equal(imEnd.length, 1);
  assert.deepEqual(model.tokenizer.eosTokenIds, imEnd);
  const ids = [...golden.ids];
  const V = model.config.vocabSize;
  let ended = false;
  for (let step = 0; step < 48 && !ended; step++) {
    const logits = model.logits(ids);
    const row = logits.subarray((ids.length - 1) * V, ids.length * V);
    let best = 0;
    for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
    if (best === imEnd[0]) ended = true;
    else ids.push(best);
  }
  const reply = model.tokenizer.decode(ids.slice(golden.ids.length));
  assert.ok(ended, `no <|im_end|> within 48 tokens; reply so far: ${JSON.stringify(reply)}`);
  assert.ok(reply.trim().length > 0, "the reply is empty");
});

// The recipe's PyTorch model is svc's torch backend (tools/pretrain/llama.py): loaded from the
// committed folder, it computes the golden logits the recipe recorded.
const python = process.env.SVC_PYTHON ?? "/usr/bin/python3";
const noTorch =
  spawnSync(python, ["-c", "import torch"]).status === 0 ? false : needs("torch", `${python} has no torch`);
test("PyTorch through svc's torch backend computes the golden logits", { skip: noTorch }, () => {
  const script = `
import json, sys, torch
sys.path.insert(0, ${JSON.stringify(join(repo, "packages", "trainer-torch"))})
from llama import LlamaConfig, LlamaForCausalLM
from svc_trainer.safetensors_io import read_safetensors
c = json.load(open(${JSON.stringify(join(dir, "config.json"))}))
keys = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta")
model = LlamaForCausalLM(LlamaConfig(**{k: c[k] for k in keys}))
model.load_state_dict(read_safetensors(${JSON.stringify(join(dir, "model.safetensors"))})[0])
ids = json.loads(sys.stdin.read())
with torch.no_grad():
    logits = model(torch.tensor([ids]))[0]
print(json.dumps({"probe": logits[:, ::97].tolist(), "argmax": logits.argmax(-1).tolist()}))
`;
  const run = spawnSync(python, ["-c", script], {
    cwd: join(repo, "tools", "pretrain"),
    input: JSON.stringify(golden.ids),
    encoding: "utf8",
  });
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout);
  assert.deepEqual(out.argmax, golden.argmax);
  for (const [t, row] of out.probe.entries()) {
    for (const [k, v] of row.entries()) {
      assert.ok(Math.abs(v - golden.probe_logits[t][k]) < 1e-4, `position ${t}, probe ${k}`);
    }
  }
});
