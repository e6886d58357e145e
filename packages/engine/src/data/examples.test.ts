import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { EngineError } from "../errors.js";
import { writeTestTokenizer } from "../testing/test-tokenizer.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { TokenizedExample, Tokenizer } from "../types.js";
import type { DatasetMessage } from "./dataset.js";
import { IGNORE_INDEX, tokenizeExample } from "./examples.js";

const CONVERSATION: DatasetMessage[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "What is 2+2?" },
  { role: "assistant", content: "It is 4." },
  { role: "user", content: "And 3+3?" },
  { role: "assistant", content: "6, of course 🙂" },
];

/** Runs of consecutive trained tokens, decoded. */
function trainedRuns(tokenizer: Tokenizer, example: TokenizedExample): string[] {
  const runs: string[] = [];
  let run: number[] = [];
  example.labels.forEach((label, i) => {
    if (label !== IGNORE_INDEX) {
      assert.equal(label, example.inputIds[i], "a trained label is the token at its own position");
      run.push(label);
    } else if (run.length > 0) {
      runs.push(tokenizer.decode(run));
      run = [];
    }
  });
  if (run.length > 0) runs.push(tokenizer.decode(run));
  return runs;
}

/**
 * The labels expected for ChatML, built independently of examples.ts: the text is
 * cut into scaffolding and "content<|im_end|>" pieces, each tokenized on its own.
 */
function expectedChatMl(
  tokenizer: Tokenizer,
  messages: DatasetMessage[],
): { ids: number[]; labels: number[] } {
  const ids: number[] = [];
  const labels: number[] = [];
  const push = (text: string, trained: boolean) => {
    for (const id of tokenizer.encode(text)) {
      ids.push(id);
      labels.push(trained ? id : IGNORE_INDEX);
    }
  };
  for (const m of messages) {
    push(`<|im_start|>${m.role}\n`, false);
    if (m.role === "assistant" && m.weight !== 0) push(`${m.content}<|im_end|>`, true);
    else push(`${m.content}<|im_end|>`, false);
    push("\n", false);
  }
  return { ids, labels };
}

let root: string;
let tokenizer: Tokenizer;
let bytesOnly: Tokenizer;

async function tokenizerWith(patch: (config: Record<string, unknown>) => void): Promise<Tokenizer> {
  const dir = await mkdtemp(join(root, "tok-"));
  await writeTestTokenizer(dir, { merges: 150 });
  const path = join(dir, "tokenizer_config.json");
  const config = JSON.parse(await readFile(path, "utf8"));
  patch(config);
  await writeFile(path, JSON.stringify(config));
  return loadTokenizer(dir);
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-examples-"));
  await writeTestTokenizer(join(root, "merged"), { merges: 150 });
  await writeTestTokenizer(join(root, "bytes"));
  tokenizer = await loadTokenizer(join(root, "merged"));
  bytesOnly = await loadTokenizer(join(root, "bytes"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("assistant-only labels with ChatML", () => {
  test("exactly the assistant contents and their <|im_end|> are trained", () => {
    const example = tokenizeExample(tokenizer, { messages: CONVERSATION });
    assert.deepEqual(trainedRuns(tokenizer, example), ["It is 4.<|im_end|>", "6, of course 🙂<|im_end|>"]);
    assert.equal(tokenizer.decode(example.inputIds), tokenizer.applyChatTemplate(CONVERSATION));
    const expected = expectedChatMl(tokenizer, CONVERSATION);
    assert.deepEqual([...example.inputIds], expected.ids);
    assert.deepEqual([...example.labels], expected.labels);
  });

  test("pieces tokenized separately equal the whole text's tokenization, for awkward contents", () => {
    const contents = [
      " leading space",
      "\n\nleading newlines",
      "trailing newlines\n\n",
      "  ",
      "",
      "12345 digits 6",
      "emoji 👩‍👩‍👧🇫🇷 and 日本語",
      "a literal <|im_start|>user\nfake turn",
      "ends with <|im_end|>",
      "'s 're 'll contractions",
      "the answer is yes, thank you for asking.",
    ];
    for (const t of [tokenizer, bytesOnly]) {
      for (const content of contents) {
        for (const other of ["Hi", " Hi\n", "the answer is"]) {
          const messages: DatasetMessage[] = [
            { role: "user", content: other },
            { role: "assistant", content },
            { role: "user", content: other },
            { role: "assistant", content: other },
          ];
          const example = tokenizeExample(t, { messages });
          const expected = expectedChatMl(t, messages);
          const label = JSON.stringify([content, other]);
          assert.deepEqual([...example.inputIds], expected.ids, label);
          assert.deepEqual([...example.labels], expected.labels, label);
        }
      }
    }
  });

  test("a prompt/completion row is a user turn and an assistant turn", () => {
    const fromCompletion = tokenizeExample(tokenizer, { prompt: "Say hi", completion: "hi there" });
    const fromMessages = tokenizeExample(tokenizer, {
      messages: [
        { role: "user", content: "Say hi" },
        { role: "assistant", content: "hi there" },
      ],
    });
    assert.deepEqual(fromCompletion, fromMessages);
    assert.deepEqual(trainedRuns(tokenizer, fromCompletion), ["hi there<|im_end|>"]);
    assert.equal(
      tokenizer.decode(fromCompletion.inputIds),
      "<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\nhi there<|im_end|>\n",
    );
  });

  test("assistant messages with weight 0 stay as context but are not trained", () => {
    const messages: DatasetMessage[] = [
      { role: "user", content: "weather?" },
      { role: "assistant", content: "let me check", weight: 0 },
      { role: "tool", content: '{"temp": 21}' },
      { role: "assistant", content: "21 degrees", weight: 1 },
    ];
    const example = tokenizeExample(tokenizer, { messages });
    assert.deepEqual(trainedRuns(tokenizer, example), ["21 degrees<|im_end|>"]);
    assert.deepEqual([...example.labels], expectedChatMl(tokenizer, messages).labels);
  });

  test('lossOn "all" trains every token', () => {
    const example = tokenizeExample(tokenizer, { messages: CONVERSATION }, { lossOn: "all" });
    assert.deepEqual([...example.labels], [...example.inputIds]);
  });
});

test("labels match the assistant mask transformers computes (fixture from tokenizer_reference.py)", async () => {
  const fixture = new URL("../../../src/testing/fixtures/hf-tokenizer-reference.json", import.meta.url);
  const reference = JSON.parse(await readFile(fixture, "utf8")) as {
    conversations: { messages: DatasetMessage[]; text: string; ids: number[]; assistantMask: number[] }[];
  };
  assert.ok(reference.conversations.length >= 3);
  for (const { messages, text, ids, assistantMask } of reference.conversations) {
    assert.equal(tokenizer.applyChatTemplate(messages), text);
    const example = tokenizeExample(tokenizer, { messages });
    assert.deepEqual([...example.inputIds], ids);
    assert.deepEqual(
      [...example.labels].map((label) => (label === IGNORE_INDEX ? 0 : 1)),
      assistantMask,
    );
  }
});

describe("maxLength", () => {
  test("truncates from the end and keeps the labels aligned", () => {
    const full = tokenizeExample(tokenizer, { messages: CONVERSATION });
    const firstTrained = full.labels.findIndex((l) => l !== IGNORE_INDEX);
    for (const maxLength of [
      firstTrained + 1,
      firstTrained + 5,
      full.inputIds.length - 1,
      full.inputIds.length,
    ]) {
      const cut = tokenizeExample(tokenizer, { messages: CONVERSATION }, { maxLength });
      assert.equal(cut.inputIds.length, maxLength);
      assert.deepEqual(cut.inputIds, full.inputIds.slice(0, maxLength));
      assert.deepEqual(cut.labels, full.labels.slice(0, maxLength));
    }
    const roomy = tokenizeExample(tokenizer, { messages: CONVERSATION }, { maxLength: 10_000 });
    assert.deepEqual(roomy, full);
  });

  test("reports an example whose trained tokens all fall beyond maxLength", () => {
    const full = tokenizeExample(tokenizer, { messages: CONVERSATION });
    const firstTrained = full.labels.findIndex((l) => l !== IGNORE_INDEX);
    assert.throws(
      () => tokenizeExample(tokenizer, { messages: CONVERSATION }, { maxLength: firstTrained }),
      (error: unknown) =>
        error instanceof EngineError &&
        error.code === "invalid_dataset" &&
        error.message ===
          `no trained tokens remain after truncating to maxLength ${firstTrained}: ` +
            `the first assistant token is token ${firstTrained + 1} of ${full.inputIds.length}`,
    );
  });

  test("rejects a maxLength that is not an integer of at least 2", () => {
    for (const maxLength of [0, 1, 2.5, Number.NaN]) {
      assert.throws(
        () => tokenizeExample(tokenizer, { messages: CONVERSATION }, { maxLength }),
        (error: unknown) => error instanceof EngineError && error.code === "invalid_argument",
      );
    }
  });
});

describe("other chat templates", () => {
  test("a default system turn written by the template is not trained", async () => {
    const t = await tokenizerWith((config) => {
      config.chat_template =
        "{% for message in messages %}" +
        "{% if loop.first and messages[0]['role'] != 'system' %}" +
        "{{ '<|im_start|>system\\nYou are a small helpful test model.<|im_end|>\\n' }}{% endif %}" +
        "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    });
    const example = tokenizeExample(t, { prompt: "Say hi", completion: "hi there" });
    assert.deepEqual(trainedRuns(t, example), ["hi there<|im_end|>"]);
    assert.match(t.decode(example.inputIds), /^<\|im_start\|>system\nYou are a small helpful test model/);
  });

  test("a Llama 3 style template that trims contents and ends turns with its own token", async () => {
    const t = await tokenizerWith((config) => {
      config.bos_token = "<|endoftext|>";
      config.eos_token = "<|endoftext|>";
      config.chat_template =
        "{{ bos_token }}{% for m in messages %}" +
        "{{ '<|im_start|>' + m['role'] + '\\n\\n' + m['content'] | trim + '<|im_end|>' }}{% endfor %}" +
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n\\n' }}{% endif %}";
    });
    assert.deepEqual(t.eosTokenIds, [0, 2]);
    const example = tokenizeExample(t, {
      messages: [
        { role: "user", content: "  hello  " },
        { role: "assistant", content: "  hi there\n" },
      ],
    });
    assert.deepEqual(trainedRuns(t, example), ["hi there<|im_end|>"]);
    assert.equal(example.inputIds[0], 0);
  });

  test("a token that straddles the start of an assistant message is trained", async () => {
    const dir = await mkdtemp(join(root, "tok-"));
    await writeTestTokenizer(dir, {
      merges: 40,
      corpus: "assistanthello ".repeat(5),
      chatTemplate:
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + m['content'] + '<|im_end|>' }}{% endfor %}",
    });
    const t = await loadTokenizer(dir);
    // The role and the content merge into one token, so the pieces do not
    // concatenate to the whole text's ids and boundaries come from shared prefixes.
    assert.equal(t.encode("assistanthello").length, 1);
    assert.notDeepEqual(t.encode("assistanthello"), [...t.encode("assistant"), ...t.encode("hello")]);
    const example = tokenizeExample(t, {
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
      ],
    });
    assert.deepEqual(trainedRuns(t, example), ["assistanthello<|im_end|>"]);
  });

  test('a template that writes an assistant content twice is refused, pointing to lossOn "all"', async () => {
    const t = await tokenizerWith((config) => {
      config.chat_template =
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + ' ' + m['content'] + '<|im_end|>' }}{% endfor %}";
    });
    const row = { prompt: "Say hi", completion: "hi" };
    assert.throws(
      () => tokenizeExample(t, row),
      (error: unknown) =>
        error instanceof EngineError &&
        error.code === "invalid_argument" &&
        /content once.*lossOn "all"/.test(error.message),
    );
    assert.ok(tokenizeExample(t, row, { lossOn: "all" }).labels.length > 0);
  });

  test("a template without an end-of-turn token trains the content up to its trailing whitespace", async () => {
    const t = await tokenizerWith((config) => {
      config.chat_template =
        "{% for m in messages %}{{ '### ' + m['role'] + ':\\n' + m['content'] + '\\n\\n' }}{% endfor %}" +
        "{% if add_generation_prompt %}{{ '### assistant:\\n' }}{% endif %}";
    });
    const example = tokenizeExample(t, {
      messages: [
        { role: "user", content: "ping" },
        { role: "assistant", content: "pong" },
      ],
    });
    assert.deepEqual(trainedRuns(t, example), ["pong"]);
  });
});
