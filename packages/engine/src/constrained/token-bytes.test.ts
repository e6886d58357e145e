import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { writeTestTokenizer } from "../testing/test-tokenizer.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { Tokenizer } from "../types.js";
import { tokenBytesTable } from "./token-bytes.js";

const BUNDLED = new URL("../../../../../models/pico-llama/", import.meta.url).pathname;
let dir: string;
let tokenizers: Tokenizer[];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-token-bytes-"));
  await writeTestTokenizer(join(dir, "bpe"), { merges: 300 });
  tokenizers = [await loadTokenizer(join(dir, "bpe")), await loadTokenizer(BUNDLED)];
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("token bytes: byte-level vocabularies, special tokens have none, and decoding any ids equals decoding their bytes", () => {
  const utf8 = new TextDecoder();
  for (const tokenizer of tokenizers) {
    const table = tokenizer.tokenBytes();
    assert.equal(table.length, tokenizer.vocabSize);
    for (const eos of tokenizer.eosTokenIds) assert.equal(table[eos], null);
    // every byte has a one-byte token: the budget steering can always close a value
    const single = new Set(table.filter((b) => b?.length === 1).map((b) => b![0]));
    assert.equal(single.size, 256);
    for (let id = 0; id < tokenizer.vocabSize; id++) {
      const bytes = table[id];
      if (bytes === null) continue;
      const text = utf8.decode(bytes);
      if (!text.includes("\uFFFD")) assert.equal(tokenizer.decode([id]), text, `token ${id}`);
    }
    // runs of tokens, partial characters included, decode to their bytes' text
    const ids = tokenizer.encode('Grüße — 日本語 🙂 {"a": [1, 2.5e3]}');
    const bytes = Buffer.concat(ids.map((id) => table[id]!));
    assert.equal(tokenizer.decode(ids), bytes.toString("utf8"));
  }
});

test("token bytes: SentencePiece decoders (▁ for spaces, <0xHH> byte fallback), and unknown decoders are refused", () => {
  const vocab = ["<s>", "▁hello", "<0xE6>", "▁{", "a▁b"];
  const source = (decoder: unknown) => ({
    vocabSize: vocab.length,
    idToToken: (id: number) => vocab[id],
    addedTokens: new Map([[0, { content: "<s>", special: true }]]),
    decoder,
  });
  const llama = {
    type: "Sequence",
    decoders: [
      { type: "Replace", pattern: { String: "▁" }, content: " " },
      { type: "ByteFallback" },
      { type: "Fuse" },
      { type: "Strip", content: " ", start: 1, stop: 0 },
    ],
  };
  const table = tokenBytesTable(source(llama));
  assert.ok(Array.isArray(table));
  assert.deepEqual(
    table.map((b) => (b === null ? null : [...b])),
    [null, [...Buffer.from(" hello")], [0xe6], [...Buffer.from(" {")], [...Buffer.from("a b")]],
  );
  const metaspace = tokenBytesTable(
    source({ type: "Metaspace", replacement: "▁", prepend_scheme: "always" }),
  );
  assert.ok(Array.isArray(metaspace) && Buffer.from(metaspace[1]!).toString() === " hello");
  assert.match(String(tokenBytesTable(source({ type: "WordPiece", prefix: "##" }))), /WordPiece/);
});
