// Which token ids end a generation (generation_config.json and config.json
// besides tokenizer_config.json), and BOS not being added twice.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers";
import { EngineError } from "../errors.js";
import { writeTestTokenizer } from "../testing/test-tokenizer.js";
import { CHATML_TEMPLATE, loadTokenizer } from "./tokenizer.js";

let root: string;
let dirIndex = 0;
function freshDir(): string {
  return join(root, `tok-${dirIndex++}`);
}

async function patchJson(path: string, patch: (json: Record<string, unknown>) => void): Promise<void> {
  const json = JSON.parse(await readFile(path, "utf8"));
  patch(json);
  await writeFile(path, JSON.stringify(json));
}

async function assertEngineError(promise: Promise<unknown>, code: string, pattern: RegExp): Promise<void> {
  await assert.rejects(
    promise,
    (error: unknown) => error instanceof EngineError && error.code === code && pattern.test(error.message),
  );
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-tokenizer-eos-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("eos ids from generation_config.json and config.json", () => {
  // ChatML test tokenizer: 0 <|endoftext|>, 1 <|im_start|>, 2 <|im_end|> (eos_token and end of turn).
  // A template with no special token, so only the files can give an eos id.
  const PLAIN_TEMPLATE =
    "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}{% endfor %}" +
    "{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}";

  async function folder(files: { generation?: unknown; config?: unknown; plain?: boolean }): Promise<string> {
    const dir = freshDir();
    await writeTestTokenizer(dir, files.plain ? { chatTemplate: PLAIN_TEMPLATE } : {});
    if (files.plain) {
      await patchJson(join(dir, "tokenizer_config.json"), (config) => {
        delete config.eos_token;
        delete config.pad_token;
      });
    }
    if (files.generation !== undefined) {
      await writeFile(join(dir, "generation_config.json"), JSON.stringify(files.generation));
    }
    if (files.config !== undefined) await writeFile(join(dir, "config.json"), JSON.stringify(files.config));
    return dir;
  }

  test("one id in generation_config.json joins eos_token and the end-of-turn token", async () => {
    const tokenizer = await loadTokenizer(await folder({ generation: { eos_token_id: 0 } }));
    assert.deepEqual(tokenizer.eosTokenIds, [2, 0]);
  });

  test("a list in generation_config.json, and config.json's too, without repeats", async () => {
    const tokenizer = await loadTokenizer(
      await folder({ generation: { eos_token_id: [2, 0] }, config: { eos_token_id: [0, 1] } }),
    );
    assert.deepEqual(tokenizer.eosTokenIds, [2, 0, 1]);
  });

  test("an id only in config.json; a null one is no id", async () => {
    const tokenizer = await loadTokenizer(await folder({ config: { model_type: "llama", eos_token_id: 0 } }));
    assert.deepEqual(tokenizer.eosTokenIds, [2, 0]);
    const none = await loadTokenizer(await folder({ config: { eos_token_id: null }, generation: {} }));
    assert.deepEqual(none.eosTokenIds, [2]);
  });

  test("no eos_token in tokenizer_config.json is fine when a file gives the ids", async () => {
    for (const files of [{ generation: { eos_token_id: [0, 2] } }, { config: { eos_token_id: 0 } }]) {
      const tokenizer = await loadTokenizer(await folder({ ...files, plain: true }));
      assert.deepEqual(tokenizer.eosTokenIds, files.generation ? [0, 2] : [0]);
      assert.equal(tokenizer.padTokenId, 0);
    }
  });

  test("refused only when no eos id can be found anywhere", async () => {
    await assertEngineError(
      loadTokenizer(await folder({ plain: true, config: { model_type: "llama" } })),
      "invalid_file",
      /tokenizer_config\.json: no "eos_token", no "eos_token_id" in generation_config\.json or config\.json, and the chat template has no end-of-turn token/,
    );
  });

  test("an eos_token_id that is not an id, or a file that is not JSON, names the file", async () => {
    for (const value of ["</s>", -1, 1.5, [2, "x"]]) {
      await assertEngineError(
        loadTokenizer(await folder({ generation: { eos_token_id: value } })),
        "invalid_file",
        /generation_config\.json: "eos_token_id" must be a token id or a list of token ids/,
      );
    }
    const dir = await folder({});
    await writeFile(join(dir, "config.json"), "{");
    await assertEngineError(loadTokenizer(dir), "invalid_file", /config\.json: not valid JSON/);
  });
});

describe("BOS", () => {
  test("a BOS the template writes is not added again, though tokenizer.json's post-processor would add one", async () => {
    const dir = freshDir();
    await writeTestTokenizer(dir, {
      prependToken: "<|endoftext|>",
      config: { bos_token: "<|endoftext|>" },
      chatTemplate: `{{ bos_token }}${CHATML_TEMPLATE}`,
    });
    const tokenizer = await loadTokenizer(dir);
    const ids = tokenizer.encode(tokenizer.applyChatTemplate([{ role: "user", content: "hi" }]));
    assert.equal(ids[0], 0);
    assert.equal(ids.filter((id) => id === 0).length, 1);
    // The folder's post-processor does prepend it when asked to add special tokens.
    const json = JSON.parse(await readFile(join(dir, "tokenizer.json"), "utf8"));
    const config = JSON.parse(await readFile(join(dir, "tokenizer_config.json"), "utf8"));
    const hf = new HfTokenizer(json, config);
    assert.deepEqual(hf.encode("hi").ids, [0, ...tokenizer.encode("hi")]);
  });
});
