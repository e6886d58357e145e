// svc export against llama.cpp itself (node-llama-cpp, installed in
// bench/llama-cpp by .ci/install): a tiny model of every family with its
// adapter is exported as GGUF and loaded by llama.cpp.
//   f16: on the same prompt ids every logit is within 0.01 + 0.002·max|logit| of
//        the engine's on the merged model at f16 (llama.cpp rounds activations to
//        f16 before its F16 matmuls, a relative error of about 2^-11 per product),
//        and llama.cpp's 8 greedy tokens are the engine's own. The one exception,
//        NEAR_TIES, is a step where the engine's best two tokens lie closer than
//        that tolerance (OLMo 2's defaults model, 0.0003 apart at the prompt's
//        end, where llama.cpp takes the second): there llama.cpp's token may be
//        either of the two, and at every other step it is the engine's own.
//   q8_0: the logits differ from the engine's fp32 ones by at most twice
//        what q8_0 itself moves the engine's logits (the engine run on the
//        dequantized q8_0 weights), plus the f16 allowance: llama.cpp also
//        rounds activations to 8 bits for its q8_0 dot products, an error of
//        the same kind and size as the weights'.
// The GGUF carries the chat template, and the Modelfile its Ollama form.
// (Tokenizers in llama.cpp: export-llama-cpp-tokenizers.test.ts.)
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { tensorType } from "../src/export/gguf-export.js";
import type { GgmlTypeName } from "../src/export/gguf-file.js";
import { decode, encode } from "../src/export/gguf-quant.js";
import { exportModel } from "../src/export/index.js";
import { FAMILY_BY_NAME } from "../src/families/index.js";
import type { ModelWeights } from "../src/graph/weights.js";
import { LoadedModel, loadModel } from "../src/loading/load.js";
import { argmax, LLAMA_CPP_SKIP, openLlamaCpp, weightsAs } from "../src/testing/llama-cpp-peer.js";
import { createRandomModel } from "../src/testing/random-model.js";

/** packages/engine: the cases below name folders under it. */
const ENGINE = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const skip = LLAMA_CPP_SKIP;

// one fixture per family, each with its adapter, and each family as transformers
// itself saved it at its config class's defaults (with peft's adapter); Phi-3's
// without its sliding window (llama.cpp's phi3 attends to the whole context,
// which the export says)
const FAMILIES = Object.keys(FAMILY_BY_NAME);
// A case's last field is the warning its export must give, where llama.cpp
// computes differently from svc beyond these prompts: Mistral's default window
// of 4096 positions (llama.cpp's llama has none), longrope's factor switch.
const NO_WINDOW = /llama\.cpp's llama attends to the whole context, not a sliding window of 4096 positions/;
const CASES: [string, string, ((c: Record<string, unknown>) => void)?, RegExp?][] = [
  ["llama", "fixtures/llama-llama3-v5-f16"],
  ["mistral", "fixtures/mistral-classic-f32"],
  ["qwen2", "fixtures/qwen2-classic-bf16"],
  ["qwen3", "fixtures/qwen3-v5-bf16"],
  ["gemma3", "fixtures/gemma3-v5-f32"],
  ["phi3", "fixtures/phi3-mini-v5-f32", (c) => delete c.sliding_window],
  [
    "phi3 with longrope",
    "fixtures/phi4-mini-longrope-v5-f16",
    undefined,
    /long rope factors whenever its context is longer than 7 tokens/,
  ],
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
/** Cases whose greedy continuation meets a near tie (docs/exporting.md): the step it is at. */
const NEAR_TIES = new Map([["olmo2 as transformers saved it", 0]]);
const GREEDY_STEPS = 8;

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
const maxAbs = (a: Float32Array) => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

/**
 * Follows another runtime's greedy tokens with the engine. Returns the steps
 * where the token is not the engine's best, each with the engine's best and
 * how far below it the token's logit is.
 */
function greedyDifferences(
  model: { logits(ids: number[]): Float32Array },
  ids: number[],
  tokens: number[],
  V: number,
): { step: number; token: number; best: number; gap: number }[] {
  const seq = [...ids];
  const differences = [];
  for (const [step, token] of tokens.entries()) {
    const logits = model.logits(seq);
    const from = (seq.length - 1) * V;
    const best = argmax(logits, from, seq.length * V);
    if (token !== best)
      differences.push({ step, token, best, gap: logits[from + best] - logits[from + token] });
    seq.push(token);
  }
  return differences;
}

describe("GGUF exports load in llama.cpp and compute what svc computes", { skip }, () => {
  const root = mkdtempSync(join(tmpdir(), "svc-export-llama-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  for (const [family, fixture, edit, warning] of CASES) {
    const tie = NEAR_TIES.get(family);
    const greedy =
      tie === undefined
        ? "greedy tokens identical"
        : `greedy tokens identical but at step ${tie}'s near tie (within the tolerance)`;
    it(`${family}: f16 ${greedy}, logits within tolerance; q8_0 within its tolerance`, async (t) => {
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
      if (warning) assert.match(f16.warnings.join(), warning);
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
        const tokens = await peer.greedy(PROMPT, GREEDY_STEPS);
        const differences = greedyDifferences(engine, PROMPT, tokens, V);
        if (tie === undefined) assert.deepEqual(differences, [], `llama.cpp's greedy tokens ${tokens}`);
        else {
          // the engine's best two at the tie are closer than f16's error: llama.cpp may take either, nowhere else
          const logits = engine.logits([...PROMPT, ...tokens.slice(0, tie)]);
          const row = logits.subarray((PROMPT.length + tie - 1) * V, (PROMPT.length + tie) * V);
          const [first, second] = [...row].sort((a, b) => b - a);
          assert.ok(first - second < tolerance, `step ${tie}: the best two are ${first - second} apart`);
          t.diagnostic(
            `step ${tie}: the engine's best two are ${first - second} apart; llama.cpp took ${differences.length ? "the second" : "the best"}`,
          );
          assert.ok(
            differences.every((d) => d.step === tie && d.gap === first - second),
            `llama.cpp's greedy tokens ${tokens}: ${JSON.stringify(differences)}`,
          );
        }
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
      const own = new LoadedModel(
        merged32,
        exact.config,
        weightsAs("Q8_0", exact.weights),
        exact.tokenizer,
        null,
        {
          graph: null,
        },
      );
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
});
