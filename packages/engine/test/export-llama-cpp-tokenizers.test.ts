// Tokenizers in llama.cpp (node-llama-cpp, installed in bench/llama-cpp by
// .ci/install): a GGUF that svc exports carries a tokenizer llama.cpp reads
// as the model's own. A SentencePiece vocabulary becomes llama.cpp's "llama"
// tokenizer, with the same tokens and greedy continuation; each byte-level
// pre-tokenizer rule svc names keeps its meaning there.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { GPT4O_SPLIT, LLAMA3_SPLIT, QWEN2_SPLIT } from "../src/export/gguf-tokenizer.js";
import { exportModel } from "../src/export/index.js";
import { LoadedModel, loadModel } from "../src/loading/load.js";
import { argmax, LLAMA_CPP_SKIP, openLlamaCpp, weightsAs } from "../src/testing/llama-cpp-peer.js";
import { createRandomModel } from "../src/testing/random-model.js";
import { writeSentencePieceTokenizer } from "../src/testing/spm-tokenizer.js";

const skip = LLAMA_CPP_SKIP;

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

describe("SentencePiece vocabularies in llama.cpp", { skip }, () => {
  const root = mkdtempSync(join(tmpdir(), "svc-export-spm-"));
  after(() => rmSync(root, { recursive: true, force: true }));

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
  return new LoadedModel(m.dir, m.config, weightsAs("F16", m.weights), m.tokenizer, null, { graph: null });
}
