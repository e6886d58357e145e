// The GGUF exporter's output pinned byte for byte: every fixture model (each
// family, each rope form, as svc's reference and as transformers saved them)
// and every family's tiny test config is exported at f16 and q8_0, and each
// file's SHA-256, its warnings or its refusal must equal the hashes in
// gguf-golden.json, which were computed before the family facts moved into
// families/<x>.ts. The Modelfile of every published chat template is pinned
// the same way. SVC_WRITE_GGUF_GOLDEN=1 rewrites the file (only when an output
// is meant to change: say why in the commit).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { FamilyName } from "../families/index.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { writeModelFolder } from "../testing/model-folder.js";
import { CHATML_TEMPLATE } from "../text/tokenizer.js";
import { exportModel } from "./index.js";
import { modelfile } from "./modelfile.js";

// dist/src/export/ → packages/engine
const ENGINE = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const GOLDEN = join(ENGINE, "src", "export", "gguf-golden.json");
const TEMPLATES = join(ENGINE, "src", "testing", "fixtures", "chat-templates");
const QUANTS = ["f16", "q8_0"] as const;

/** Configs that reach the exporter's other branches: its refusals, rope metadata, biases. */
const EDGES: Record<string, Record<string, unknown>> = {
  "gemma3 classic rope without rope_local_base_freq": {
    ...FAMILY_CONFIGS.gemma3,
    rope_parameters: undefined,
    rope_theta: 1000000,
    rope_scaling: { rope_type: "linear", factor: 8 },
  },
  "qwen2 llama3 rope": {
    ...FAMILY_CONFIGS.qwen2,
    rope_parameters: { ...(FAMILY_CONFIGS.llama.rope_parameters as object) },
  },
  "llama longrope": {
    ...FAMILY_CONFIGS.llama,
    rope_parameters: {
      rope_type: "longrope",
      rope_theta: 10000,
      original_max_position_embeddings: 16,
      short_factor: [1, 1],
      long_factor: [2, 3],
    },
  },
  "llama yarn attention_factor": {
    ...FAMILY_CONFIGS.llama,
    rope_parameters: { rope_type: "yarn", rope_theta: 10000, factor: 2, attention_factor: 1.1 },
  },
  "llama yarn truncate false": {
    ...FAMILY_CONFIGS.llama,
    rope_parameters: { rope_type: "yarn", rope_theta: 10000, factor: 2, truncate: false },
  },
  "qwen3 yarn": {
    ...FAMILY_CONFIGS.qwen3,
    rope_parameters: {
      rope_type: "yarn",
      rope_theta: 10000,
      factor: 4,
      original_max_position_embeddings: 16,
    },
  },
  "mistral linear": {
    ...FAMILY_CONFIGS.llama,
    architectures: ["MistralForCausalLM"],
    model_type: "mistral",
    attention_bias: undefined,
    rope_parameters: { rope_type: "linear", rope_theta: 10000, factor: 2 },
  },
  "llama mlp biases": { ...FAMILY_CONFIGS.llama, mlp_bias: true },
  "phi3 yarn, top-level original": {
    ...FAMILY_CONFIGS.phi3,
    sliding_window: undefined,
    original_max_position_embeddings: 16,
    rope_scaling: { type: "yarn", factor: 4 },
  },
  "smollm3 every 4th layer": { ...FAMILY_CONFIGS.smollm3, num_hidden_layers: 4, no_rope_layer_interval: 4 },
  "olmo2 tied": { ...FAMILY_CONFIGS.olmo2, tie_word_embeddings: true },
};

const MIXED_MARKERS = [
  "<|im_start|> <|start_header_id|>",
  "<|im_start|> ## Metadata <|start_header_id|>",
  "<|start_of_role|> <|user|>",
  "<|start_of_role|> <|end|>",
  "<start_of_turn> <|im_start|>",
  "<|user|> <|end|>",
  "'<|' + message['role'] + '|>' <|end|> <|user|>",
];

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

async function exported(baseDir: string, out: string, quant: string, name: string): Promise<string> {
  try {
    const result = await exportModel({ baseDir, format: "gguf", quant, out, name });
    const gguf = sha256(readFileSync(join(out, result.files[0])));
    const warnings = result.warnings.map((w) => `\n  warning: ${w}`).join("");
    return `${gguf} modelfile ${sha256(readFileSync(join(out, "Modelfile")))}${warnings}`;
  } catch (e) {
    return `refused: ${(e as Error).message.replaceAll(baseDir, "<model>")}`;
  }
}

test("GGUF exports and Modelfiles are byte-identical to the pinned ones", async () => {
  const root = mkdtempSync(join(tmpdir(), "svc-gguf-golden-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const got: Record<string, string> = {};
  const models: [string, string][] = [];
  for (const set of ["fixtures", "fixtures-transformers"]) {
    for (const name of readdirSync(join(ENGINE, set)).sort()) {
      const dir = join(ENGINE, set, name);
      if (existsSync(join(dir, "config.json"))) models.push([`${set}/${name}`, dir]);
    }
  }
  for (const family of Object.keys(FAMILY_CONFIGS).sort() as FamilyName[]) {
    const dir = join(root, "configs", family);
    // the byte-level test tokenizer has 259 tokens
    await writeModelFolder(dir, { ...FAMILY_CONFIGS[family], vocab_size: 300 }, { seed: 7 });
    models.push([`family-configs/${family}`, dir]);
  }
  for (const [name, config] of Object.entries(EDGES)) {
    const dir = join(root, "edges", name.replace(/\W+/g, "-"));
    // JSON drops the undefined keys: a key set to undefined above is removed from the family's config
    await writeModelFolder(dir, JSON.parse(JSON.stringify({ ...config, vocab_size: 300 })), { seed: 7 });
    models.push([`edge/${name}`, dir]);
  }
  for (const [key, dir] of models) {
    for (const quant of QUANTS) {
      got[`${key} ${quant}`] = await exported(dir, join(root, "out", key, quant), quant, key);
    }
  }
  const templates = readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja"));
  for (const file of templates.sort()) {
    got[`modelfile ${file}`] = sha256(modelfile("m.gguf", readFileSync(join(TEMPLATES, file), "utf8")));
  }
  got["modelfile chatml"] = sha256(modelfile("m.gguf", CHATML_TEMPLATE));
  got["modelfile none"] = sha256(modelfile("m.gguf", null));
  // templates with two formats' markers: which format wins is pinned too
  for (const markers of MIXED_MARKERS) got[`modelfile ${markers}`] = sha256(modelfile("m.gguf", markers));
  if (process.env.SVC_WRITE_GGUF_GOLDEN === "1") {
    writeFileSync(GOLDEN, `${JSON.stringify(got, null, 2)}\n`);
  }
  const want = JSON.parse(readFileSync(GOLDEN, "utf8")) as Record<string, string>;
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
  for (const key of Object.keys(want)) assert.equal(got[key], want[key], key);
  assert.ok(models.length >= 60, `${models.length} models`);
});
