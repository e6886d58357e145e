// svc export against llama.cpp itself (node-llama-cpp, installed in
// bench/llama-cpp by .ci/install): a tiny model of every family with its
// adapter is exported as GGUF and loaded by llama.cpp.
//   f16: on the same prompt ids every logit is within 0.01 + 0.002·max|logit| of
//        the engine's on the merged model at f16 (llama.cpp rounds activations to
//        f16 before its F16 matmuls, a relative error of about 2^-11 per product),
//        and each of llama.cpp's greedy tokens is one the engine ranks within that
//        tolerance of its best (where two tokens tie that closely, f16 may pick
//        either; anywhere else this is the same token).
//   q8_0: the logits differ from the engine's fp32 ones by at most twice
//        what q8_0 itself moves the engine's logits (the engine run on the
//        dequantized q8_0 weights), plus the f16 allowance: llama.cpp also
//        rounds activations to 8 bits for its q8_0 dot products, an error of
//        the same kind and size as the weights'.
// The GGUF carries the chat template, and the Modelfile its Ollama form.
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { tensorType } from "../src/export/gguf-export.js";
import type { GgmlTypeName } from "../src/export/gguf-file.js";
import { decode, encode } from "../src/export/gguf-quant.js";
import { GPT4O_SPLIT, LLAMA3_SPLIT, QWEN2_SPLIT } from "../src/export/gguf-tokenizer.js";
import { exportModel } from "../src/export/index.js";
import { LoadedModel, loadModel } from "../src/load.js";
import { argmax, LLAMA_CPP_PACKAGE, openLlamaCpp } from "../src/testing/llama-cpp-peer.js";
import { createRandomModel } from "../src/testing/random-model.js";
import { writeSentencePieceTokenizer } from "../src/testing/spm-tokenizer.js";
import type { ModelWeights } from "../src/weights.js";

/** packages/engine: the cases below name folders under it. */
const ENGINE = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const installed = existsSync(LLAMA_CPP_PACKAGE);
const skip = installed
  ? false
  : `llama.cpp peer not installed (npm ci --prefix bench/llama-cpp --omit=optional)`;

// one fixture per family, each with its adapter, and each family as transformers
// itself saved it at its config class's defaults (with peft's adapter); Phi-3's
// without its sliding window (llama.cpp's phi3 attends to the whole context,
// which the export says)
const FAMILIES = ["llama", "mistral", "qwen2", "qwen3", "gemma3", "phi3", "smollm3", "olmo2", "granite"];
// The exporter's warning where a family's llama.cpp architecture has no sliding
// window (Mistral's default is 4096 positions: longer than these prompts).
const NO_WINDOW = /llama\.cpp's llama attends to the whole context, not a sliding window of 4096 positions/;
const CASES: [string, string, ((c: Record<string, unknown>) => void)?, RegExp?][] = [
  ["llama", "fixtures/llama-llama3-v5-f16"],
  ["mistral", "fixtures/mistral-classic-f32"],
  ["qwen2", "fixtures/qwen2-classic-bf16"],
  ["qwen3", "fixtures/qwen3-v5-bf16"],
  ["gemma3", "fixtures/gemma3-v5-f32"],
  ["phi3", "fixtures/phi3-mini-v5-f32", (c) => delete c.sliding_window],
  ["phi3 with longrope", "fixtures/phi4-mini-longrope-v5-f16"],
  ["smollm3", "fixtures/smollm3-v5-f32"],
  ["olmo2", "fixtures/olmo2-v5-f32"],
  ["granite", "fixtures/granite-v5-bf16"],
  ...FAMILIES.map((family): [string, string, undefined, RegExp?] => [
    `${family} as transformers saved it`,
    `fixtures-transformers/${family}-defaults`,
    undefined,
    family === "mistral" ? NO_WINDOW : undefined,
  ]),
];
const PROMPT = [5, 40, 77, 100, 3, 250, 17, 60, 9, 200, 33, 120];

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
const maxAbs = (a: Float32Array) => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

/**
 * Follows another runtime's greedy tokens with the engine: each must be within
 * `tolerance` of the engine's best logit at its step (so it is the engine's
 * own pick wherever no other token is that close). Returns the first step that
 * is not, with both logits, or null.
 */
function greedyWithin(
  model: { logits(ids: number[]): Float32Array },
  ids: number[],
  tokens: number[],
  V: number,
  tolerance: number,
): string | null {
  const seq = [...ids];
  for (const [step, token] of tokens.entries()) {
    const logits = model.logits(seq);
    const from = (seq.length - 1) * V;
    const best = argmax(logits, from, seq.length * V);
    if (logits[from + token] < logits[from + best] - tolerance)
      return `step ${step}: token ${token} at ${logits[from + token]}, the engine's ${best} at ${logits[from + best]}`;
    seq.push(token);
  }
  return null;
}

function greedyEngine(
  model: { logits(ids: number[]): Float32Array },
  ids: number[],
  steps: number,
  V: number,
) {
  const seq = [...ids];
  for (let s = 0; s < steps; s++) {
    const logits = model.logits(seq);
    seq.push(argmax(logits, (seq.length - 1) * V, seq.length * V));
  }
  return seq.slice(ids.length);
}

/** The weights as q8_0 stores them (matrices quantized by rows, as the GGUF holds them). */
function q8Weights(w: ModelWeights): ModelWeights {
  const q = (a: Float32Array) => decode("Q8_0", encode("Q8_0", a), a.length);
  const embed = q(w.embed);
  return {
    embed,
    lmHead: w.lmHead === w.embed ? embed : q(w.lmHead),
    finalNorm: w.finalNorm,
    layers: w.layers.map((l) => ({
      ...l,
      q: q(l.q),
      k: q(l.k),
      v: q(l.v),
      o: q(l.o),
      gate: q(l.gate),
      up: q(l.up),
      down: q(l.down),
    })),
  };
}

describe("GGUF exports load in llama.cpp and compute what svc computes", { skip }, () => {
  const root = mkdtempSync(join(tmpdir(), "svc-export-llama-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  for (const [family, fixture, edit, warning] of CASES) {
    it(`${family}: f16 greedy tokens and logits match, q8_0 within its tolerance`, async () => {
      const base = join(root, family, "base");
      cpSync(join(ENGINE, fixture), base, { recursive: true });
      if (edit) {
        const config = JSON.parse(readFileSync(join(base, "config.json"), "utf8"));
        edit(config);
        writeFileSync(join(base, "config.json"), JSON.stringify(config));
      }
      const adapterDir = join(base, "adapter");
      const merged16 = join(root, family, "merged-f16");
      await exportModel({ baseDir: base, adapterDir, format: "merged", quant: "f16", out: merged16 });
      const engine = await loadModel(merged16);
      const V = engine.config.vocabSize;

      const f16 = await exportModel({
        baseDir: base,
        adapterDir,
        format: "gguf",
        quant: "f16",
        out: join(root, family, "f16"),
        name: "tiny",
      });
      if (family.includes("longrope"))
        assert.match(f16.warnings.join(), /long rope factors whenever its context is longer than 7 tokens/);
      else if (warning) assert.match(f16.warnings.join(), warning);
      else assert.deepEqual(f16.warnings, []);
      const peer = await openLlamaCpp(join(f16.dir, f16.files[0]), V);
      assert.ok(peer);
      try {
        const want = engine.logits(PROMPT);
        const got = await peer.logits(PROMPT);
        const tolerance = 0.01 + 0.002 * maxAbs(want);
        assert.ok(
          maxDiff(want, got) <= tolerance,
          `f16 logits differ by ${maxDiff(want, got)} > ${tolerance}`,
        );
        assert.equal(greedyWithin(engine, PROMPT, await peer.greedy(PROMPT, 8), V, tolerance), null);
        // llama.cpp tokenizes chat text as the model's own tokenizer does
        const chat = engine.tokenizer.applyChatTemplate(
          [
            { role: "user", content: "Hello there! What's 12 + 345?  Über naïve café 日本語 🙂" },
            { role: "assistant", content: "It's 357.\n\nAnything else?" },
          ],
          { addGenerationPrompt: false },
        );
        assert.deepEqual(peer.tokenize(chat), engine.tokenizer.encode(chat));
        const template = readFileSync(join(base, "tokenizer_config.json"), "utf8");
        assert.equal(
          (peer.metadata as { tokenizer?: { chat_template?: string } }).tokenizer?.chat_template,
          JSON.parse(template).chat_template,
        );
      } finally {
        await peer.dispose();
      }
      const modelfile = readFileSync(join(f16.dir, "Modelfile"), "utf8");
      assert.match(modelfile, /^FROM \.\/model-f16\.gguf$/m);
      assert.match(modelfile, /TEMPLATE """/);

      // q8_0 against the engine's fp32 merge
      const merged32 = join(root, family, "merged-f32");
      await exportModel({ baseDir: base, adapterDir, format: "merged", quant: "f32", out: merged32 });
      const exact = (await loadModel(merged32)) as LoadedModel;
      const reference = exact.logits(PROMPT);
      const own = new LoadedModel(merged32, exact.config, q8Weights(exact.weights), exact.tokenizer, null, {
        graph: null,
      });
      const quantEffect = maxDiff(reference, own.logits(PROMPT));
      const q8 = await exportModel({
        baseDir: base,
        adapterDir,
        format: "gguf",
        quant: "q8_0",
        out: join(root, family, "q8"),
      });
      const q8peer = await openLlamaCpp(join(q8.dir, q8.files[0]), V);
      assert.ok(q8peer);
      try {
        const got = await q8peer.logits(PROMPT);
        const tolerance = 2 * quantEffect + 0.01 + 0.002 * maxAbs(reference);
        assert.ok(quantEffect > 0, "q8_0 changes the weights");
        assert.ok(
          maxDiff(reference, got) <= tolerance,
          `q8_0 logits differ by ${maxDiff(reference, got)} > ${tolerance}`,
        );
      } finally {
        await q8peer.dispose();
      }
    });
  }

  it("q4_k_m: llama.cpp reads the Q4_K and Q6_K blocks as svc wrote them", async () => {
    // rows of 256 and 512 values are whole K-quant blocks; 8 layers give both Q4_K and Q6_K layers
    const dir = join(root, "k-quants");
    await createRandomModel(dir, {
      hiddenSize: 256,
      intermediateSize: 512,
      numHiddenLayers: 8,
      tieWordEmbeddings: false,
      std: 0.05,
      embedStd: 0.5,
      headStd: 0.2,
    });
    const exact = (await loadModel(dir)) as LoadedModel;
    const L = exact.config.numHiddenLayers;
    const w = exact.weights;
    const types = new Set<GgmlTypeName>();
    const stored = (
      a: Float32Array,
      cols: number,
      role: "embed" | "output" | "attn_v" | "ffn_down" | "matrix",
      layer?: number,
    ) => {
      const type = tensorType(
        { name: "", shape: [a.length / cols, cols], data: a, role, layer },
        "q4_k_m",
        L,
        false,
      );
      types.add(type);
      return decode(type, encode(type, a), a.length);
    };
    const C = exact.config.hiddenSize;
    const weights: ModelWeights = {
      embed: stored(w.embed, C, "embed"),
      lmHead: stored(w.lmHead, C, "output"),
      finalNorm: w.finalNorm,
      layers: w.layers.map((l, i) => ({
        ...l,
        q: stored(l.q, C, "matrix", i),
        k: stored(l.k, C, "matrix", i),
        v: stored(l.v, C, "attn_v", i),
        o: stored(l.o, C, "matrix", i),
        gate: stored(l.gate, C, "matrix", i),
        up: stored(l.up, C, "matrix", i),
        down: stored(l.down, exact.config.intermediateSize, "ffn_down", i),
      })),
    };
    assert.deepEqual([...types].sort(), ["Q4_K", "Q6_K"]);
    const reference = exact.logits(PROMPT);
    const own = new LoadedModel(dir, exact.config, weights, exact.tokenizer, null, { graph: null }).logits(
      PROMPT,
    );
    const q4 = await exportModel({ baseDir: dir, format: "gguf", quant: "q4_k_m", out: join(dir, "gguf") });
    const peer = await openLlamaCpp(join(q4.dir, q4.files[0]), exact.config.vocabSize);
    assert.ok(peer);
    try {
      const got = await peer.logits(PROMPT);
      // llama.cpp also rounds activations to 8 bits (Q8_K) for K-quant dot
      // products; a block layout read differently would put it as far from
      // svc's decoding as from fp32, or farther
      const quantEffect = maxDiff(reference, own);
      assert.ok(
        maxDiff(own, got) < 0.5 * quantEffect,
        `llama.cpp ${maxDiff(own, got)} from svc's q4_k_m decoding, which is ${quantEffect} from fp32`,
      );
    } finally {
      await peer.dispose();
    }
  });

  for (const style of ["llama2", "gemma"] as const) {
    it(`a SentencePiece vocabulary (${style} style) is llama.cpp's "llama" tokenizer: same tokens, same greedy continuation`, async () => {
      const dir = join(root, `spm-${style}`);
      await createRandomModel(dir, { merges: 120 });
      const V = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")).vocab_size as number;
      await writeSentencePieceTokenizer(dir, V, style);
      const model = await loadModel(dir);
      const gguf = await exportModel({ baseDir: dir, format: "gguf", out: join(dir, "gguf") });
      const peer = await openLlamaCpp(join(gguf.dir, gguf.files[0]), V);
      assert.ok(peer);
      try {
        assert.equal(
          (peer.metadata as { tokenizer?: { ggml?: { model?: string } } }).tokenizer?.ggml?.model,
          "llama",
        );
        const texts = [
          "The quick brown fox jumps over the lazy dog.",
          // two spaces, characters the vocabulary lacks (byte fallback)
          "hello there!  Two  spaces, naïve café 日本語 🙂 zzqx",
          model.tokenizer.applyChatTemplate(
            [
              { role: "user", content: "What is the weather like?" },
              { role: "assistant", content: "The answer is yes, thank you." },
            ],
            {},
          ),
        ];
        for (const text of texts) assert.deepEqual(peer.tokenize(text), model.tokenizer.encode(text), text);
        const prompt = model.tokenizer.encode(texts[2]);
        assert.deepEqual(
          await peer.greedy(prompt, 6),
          greedyEngine(roundedModel(model as LoadedModel), prompt, 6, V),
        );
      } finally {
        await peer.dispose();
      }
    });
  }
});

const SPLIT_TEXTS = [
  "I'm sure they'll say DON'T: 12345 apples, 7 pears!\n\n  Indented\ttab\r\nline",
  "Über naïve café 日本語のテキスト。 Emoji too: 🙂🚀 ÀÉÎ ßẞ x/y//z",
];

describe("byte-level pre-tokenizer rules keep their meaning in llama.cpp", { skip }, () => {
  const root = mkdtempSync(join(tmpdir(), "svc-export-split-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const cases: [string, unknown][] = [
    ["gpt-2", { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }],
    ["llama-bpe (Llama 3, OLMo 2, SmolLM3)", LLAMA3_SPLIT],
    ["qwen2 (Qwen2, Qwen3)", QWEN2_SPLIT],
    ["gpt-4o (Phi-4-mini)", GPT4O_SPLIT],
  ];
  for (const [name, rule] of cases) {
    it(name, async () => {
      const dir = join(root, name.split(" ")[0]);
      await createRandomModel(dir, { merges: 60 });
      const file = join(dir, "tokenizer.json");
      const json = JSON.parse(readFileSync(file, "utf8"));
      json.pre_tokenizer =
        typeof rule === "string"
          ? {
              type: "Sequence",
              pretokenizers: [
                { type: "Split", pattern: { Regex: rule }, behavior: "Isolated", invert: false },
                { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
              ],
            }
          : rule;
      writeFileSync(file, JSON.stringify(json));
      const model = await loadModel(dir);
      const gguf = await exportModel({ baseDir: dir, format: "gguf", out: join(dir, "gguf") });
      const peer = await openLlamaCpp(join(gguf.dir, gguf.files[0]), model.config.vocabSize);
      assert.ok(peer);
      try {
        for (const text of SPLIT_TEXTS)
          assert.deepEqual(peer.tokenize(text), model.tokenizer.encode(text), text);
      } finally {
        await peer.dispose();
      }
    });
  }
});

/** The model with its matrices rounded to f16, as an f16 GGUF holds them. */
function roundedModel(m: LoadedModel): LoadedModel {
  const r = (a: Float32Array) => decode("F16", encode("F16", a), a.length);
  const w = m.weights;
  const embed = r(w.embed);
  const weights: ModelWeights = {
    embed,
    lmHead: w.lmHead === w.embed ? embed : r(w.lmHead),
    finalNorm: w.finalNorm,
    layers: w.layers.map((l) => ({
      ...l,
      q: r(l.q),
      k: r(l.k),
      v: r(l.v),
      o: r(l.o),
      gate: r(l.gate),
      up: r(l.up),
      down: r(l.down),
    })),
  };
  return new LoadedModel(m.dir, m.config, weights, m.tokenizer, null, { graph: null });
}
