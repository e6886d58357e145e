import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { EngineError } from "../errors.js";
import { writeTestTokenizer } from "../testing/test-tokenizer.js";
import type { Tokenizer } from "../types.js";
import { loadTokenizer } from "./tokenizer.js";

// A ChatML template shaped like SmolLM2-Instruct's: a default system turn is
// written when the conversation does not start with one.
const CHATML_WITH_DEFAULT_SYSTEM =
  "{% for message in messages %}" +
  "{% if loop.first and messages[0]['role'] != 'system' %}" +
  "{{ '<|im_start|>system\\nYou are a small helpful test model.<|im_end|>\\n' }}{% endif %}" +
  "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** Written by src/testing/tokenizer_reference.py with Hugging Face transformers. */
const REFERENCE_FIXTURE = new URL(
  "../../../src/testing/fixtures/hf-tokenizer-reference.json",
  import.meta.url,
);

const TEXTS = [
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog. 12345 67",
  "héllo wörld — café déjà vu",
  "日本語のテキスト、中文，한국어",
  "emoji: 🙂🚀👩‍👩‍👧 and flags 🇫🇷",
  "  leading and trailing spaces  ",
  "tabs\tand\nnewlines\r\n\n\nblank lines",
  "code: for (let i = 0; i < n; i++) { x[i] += 1; }",
  "\u0000\u0001 control bytes \u007f",
  "",
];

let root: string;
let dirIndex = 0;
async function freshDir(): Promise<string> {
  return join(root, `tok-${dirIndex++}`);
}

async function patchJson(path: string, patch: (json: Record<string, unknown>) => void): Promise<void> {
  const json = JSON.parse(await readFile(path, "utf8"));
  patch(json);
  await writeFile(path, JSON.stringify(json));
}

async function assertEngineError(
  promise: Promise<unknown>,
  code: string,
  messagePattern: RegExp,
): Promise<EngineError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof EngineError, `expected EngineError, got ${error}`);
    assert.equal(error.code, code);
    assert.match(error.message, messagePattern);
    return error;
  }
  assert.fail("expected an EngineError");
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-tokenizer-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("test tokenizer files", () => {
  let bytesOnly: Tokenizer;
  let withMerges: Tokenizer;

  before(async () => {
    const a = await freshDir();
    const b = await freshDir();
    assert.deepEqual(await writeTestTokenizer(a), { vocabSize: 259 });
    const { vocabSize } = await writeTestTokenizer(b, { merges: 150 });
    assert.equal(vocabSize, 409);
    bytesOnly = await loadTokenizer(a);
    withMerges = await loadTokenizer(b);
  });

  test("vocabulary size counts special, byte and merged tokens", () => {
    assert.equal(bytesOnly.vocabSize, 259);
    assert.equal(withMerges.vocabSize, 409);
  });

  test("encode/decode round-trips unicode, emoji, whitespace and control bytes", () => {
    for (const tokenizer of [bytesOnly, withMerges]) {
      for (const text of TEXTS) {
        const ids = tokenizer.encode(text);
        assert.ok(ids.every((id) => Number.isInteger(id) && id >= 0 && id < tokenizer.vocabSize));
        assert.equal(tokenizer.decode(ids), text, JSON.stringify(text));
      }
    }
  });

  test("without merges every UTF-8 byte is one token", () => {
    for (const text of TEXTS) {
      assert.equal(bytesOnly.encode(text).length, Buffer.byteLength(text, "utf8"));
    }
  });

  test("merges learned from the corpus shorten its encoding", () => {
    const text = "The assistant replies politely: the answer is yes, thank you for asking.";
    const merged = withMerges.encode(text).length;
    assert.ok(merged < Buffer.byteLength(text) / 2, `${merged} tokens`);
  });

  test("special tokens are single ids, also inside text", () => {
    for (const tokenizer of [bytesOnly, withMerges]) {
      assert.deepEqual(tokenizer.encode("<|endoftext|>"), [0]);
      assert.deepEqual(tokenizer.encode("<|im_start|>"), [1]);
      assert.deepEqual(tokenizer.encode("<|im_end|>"), [2]);
      const ids = tokenizer.encode("a<|im_end|>b<|im_start|>");
      assert.deepEqual(ids, [...tokenizer.encode("a"), 2, ...tokenizer.encode("b"), 1]);
    }
  });

  test("bos, eos and pad come from tokenizer_config.json", () => {
    assert.equal(bytesOnly.bosTokenId, 1);
    assert.deepEqual(bytesOnly.eosTokenIds, [2]);
    assert.equal(bytesOnly.padTokenId, 2);
  });

  test("decode can skip special tokens; unknown ids and empty input decode to nothing", () => {
    const ids = withMerges.encode("<|im_start|>user\nhi there<|im_end|>");
    assert.equal(withMerges.decode(ids, { skipSpecialTokens: true }), "user\nhi there");
    assert.equal(withMerges.decode([]), "");
    assert.equal(withMerges.decode(new Int32Array([...withMerges.encode("ok"), 100_000])), "ok");
  });

  test("the ChatML template renders the expected text", () => {
    const messages = [
      { role: "system" as const, content: "Be brief." },
      { role: "user" as const, content: "Hi 🙂" },
      { role: "assistant" as const, content: "Hello!" },
      { role: "user" as const, content: "Bye" },
    ];
    const expected =
      "<|im_start|>system\nBe brief.<|im_end|>\n" +
      "<|im_start|>user\nHi 🙂<|im_end|>\n" +
      "<|im_start|>assistant\nHello!<|im_end|>\n" +
      "<|im_start|>user\nBye<|im_end|>\n";
    assert.equal(bytesOnly.applyChatTemplate(messages), expected);
    assert.equal(
      bytesOnly.applyChatTemplate(messages, { addGenerationPrompt: true }),
      expected + "<|im_start|>assistant\n",
    );
    const ids = withMerges.encode(withMerges.applyChatTemplate(messages));
    assert.equal(ids.filter((id) => id === 1).length, 4);
    assert.equal(ids.filter((id) => id === 2).length, 4);
  });

  test("encodings and decodings match Hugging Face tokenizers (fixture from tokenizer_reference.py)", async () => {
    const reference = JSON.parse(await readFile(REFERENCE_FIXTURE, "utf8")) as {
      merges: number;
      vocabSize: number;
      eosTokenId: number;
      texts: { text: string; ids: number[]; decoded: string }[];
    };
    assert.equal(reference.merges, 150);
    assert.equal(withMerges.vocabSize, reference.vocabSize);
    assert.equal(withMerges.eosTokenIds[0], reference.eosTokenId);
    assert.ok(reference.texts.length >= 10);
    for (const { text, ids, decoded } of reference.texts) {
      assert.deepEqual(withMerges.encode(text), ids, JSON.stringify(text));
      assert.equal(withMerges.decode(ids), decoded);
    }
  });

  test("files are deterministic", async () => {
    const a = await freshDir();
    const b = await freshDir();
    await writeTestTokenizer(a, { merges: 50, corpus: "abc abc abd abd abd" });
    await writeTestTokenizer(b, { merges: 50, corpus: "abc abc abd abd abd" });
    for (const name of ["tokenizer.json", "tokenizer_config.json"]) {
      assert.equal(await readFile(join(a, name), "utf8"), await readFile(join(b, name), "utf8"));
    }
  });

  test("merge learning stops when the corpus has no pairs left", async () => {
    const { vocabSize } = await writeTestTokenizer(await freshDir(), { merges: 1000, corpus: "ab ab" });
    // Words "ab" and "Ġab": a+b (seen twice) first, then Ġ+ab; nothing is left to merge.
    assert.equal(vocabSize, 261);
  });
});

describe("tokenizer_config.json variants", () => {
  test("no chat_template falls back to ChatML", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir, { chatTemplate: null });
    const tokenizer = await loadTokenizer(dir);
    assert.equal(
      tokenizer.applyChatTemplate([{ role: "user", content: "hi" }], { addGenerationPrompt: true }),
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  test("a named template list uses the default one; a default system turn renders", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir);
    await patchJson(join(dir, "tokenizer_config.json"), (config) => {
      config.chat_template = [
        { name: "tool_use", template: "{{ 'tools' }}" },
        { name: "default", template: CHATML_WITH_DEFAULT_SYSTEM },
      ];
    });
    const tokenizer = await loadTokenizer(dir);
    assert.equal(
      tokenizer.applyChatTemplate([{ role: "user", content: "hi" }]),
      "<|im_start|>system\nYou are a small helpful test model.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n",
    );
  });

  test("eos as an AddedToken object plus the template's end-of-turn token; pad falls back to eos", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir);
    await patchJson(join(dir, "tokenizer_config.json"), (config) => {
      config.eos_token = { content: "<|endoftext|>", special: true };
      config.bos_token = null;
      delete config.pad_token;
    });
    const tokenizer = await loadTokenizer(dir);
    assert.deepEqual(tokenizer.eosTokenIds, [0, 2]);
    assert.equal(tokenizer.padTokenId, 0);
    assert.equal(tokenizer.bosTokenId, null);
  });

  test("a Llama 3 style end-of-turn token listed only in added_tokens_decoder", async () => {
    const dir = await freshDir();
    const { vocabSize } = await writeTestTokenizer(dir);
    await patchJson(join(dir, "tokenizer_config.json"), (config) => {
      (config.added_tokens_decoder as Record<string, unknown>)[String(vocabSize)] = {
        content: "<|eot_id|>",
        special: true,
      };
      config.eos_token = "<|endoftext|>";
      config.chat_template =
        "{{ bos_token }}{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n\\n' + m['content'] | trim + '<|eot_id|>' }}{% endfor %}";
    });
    const tokenizer = await loadTokenizer(dir);
    assert.equal(tokenizer.vocabSize, vocabSize + 1);
    assert.deepEqual(tokenizer.eosTokenIds, [0, vocabSize]);
    assert.deepEqual(tokenizer.encode("x<|eot_id|>").slice(1), [vocabSize]);
  });

  test("merges in the older 'left right' string form load the same", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir, { merges: 100 });
    const before = await loadTokenizer(dir);
    await patchJson(join(dir, "tokenizer.json"), (json) => {
      const model = json.model as { merges: [string, string][] };
      (model as { merges: unknown }).merges = model.merges.map(([a, b]) => `${a} ${b}`);
    });
    const afterPatch = await loadTokenizer(dir);
    for (const text of TEXTS) assert.deepEqual(afterPatch.encode(text), before.encode(text));
  });
});

describe("loadTokenizer errors name the file and the problem", () => {
  test("missing tokenizer.json", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir);
    await rm(join(dir, "tokenizer.json"));
    const error = await assertEngineError(
      loadTokenizer(dir),
      "missing_file",
      /tokenizer\.json: file not found/,
    );
    assert.equal(error.file, join(dir, "tokenizer.json"));
  });

  test("missing folder", async () => {
    await assertEngineError(loadTokenizer(join(root, "nope")), "missing_file", /nope.*file not found/);
  });

  test("malformed tokenizer_config.json", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir);
    await writeFile(join(dir, "tokenizer_config.json"), '{"eos_token": "<|im_end|>",');
    await assertEngineError(loadTokenizer(dir), "invalid_file", /tokenizer_config\.json: not valid JSON/);
  });

  test("tokenizer.json that is not an object or has no model", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir);
    await writeFile(join(dir, "tokenizer.json"), "[1, 2]");
    await assertEngineError(loadTokenizer(dir), "invalid_file", /tokenizer\.json: expected a JSON object/);
    await writeFile(join(dir, "tokenizer.json"), "{}");
    await assertEngineError(loadTokenizer(dir), "invalid_file", /tokenizer\.json: missing the "model"/);
  });

  test("eos_token that is not in the vocabulary", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir);
    await patchJson(join(dir, "tokenizer_config.json"), (config) => {
      config.eos_token = "</s>";
    });
    await assertEngineError(
      loadTokenizer(dir),
      "invalid_file",
      /tokenizer_config\.json: eos_token "<\/s>" is not in tokenizer\.json's vocabulary/,
    );
  });

  test("a chat_template that is not valid Jinja", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir, { chatTemplate: "{% for m in messages %}{{ m.content }" });
    await assertEngineError(
      loadTokenizer(dir),
      "invalid_file",
      /tokenizer_config\.json: chat_template is not a valid Jinja template/,
    );
  });

  test("a template that raises reports it on render", async () => {
    const dir = await freshDir();
    await writeTestTokenizer(dir, {
      chatTemplate:
        "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}" +
        "{% for m in messages %}{{ m['content'] + '<|im_end|>' }}{% endfor %}",
    });
    const tokenizer = await loadTokenizer(dir);
    assert.throws(
      () => tokenizer.applyChatTemplate([{ role: "system", content: "x" }]),
      (error: unknown) =>
        error instanceof EngineError &&
        error.code === "invalid_argument" &&
        /could not render these messages \(.*System role not supported/.test(error.message),
    );
  });
});
