// Assistant-only labels with the real chat templates of fixtures/chat-templates/:
// for every family, exactly each assistant message's content and the end-of-turn
// token after it are trained (examples.ts states the rule).
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CHAT_FAMILIES, chatFamily, writeFamilyTokenizer } from "../testing/chat-families.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { TokenizedExample, Tokenizer } from "../types.js";
import type { DatasetMessage } from "./dataset.js";
import { IGNORE_INDEX, tokenizeExample } from "./examples.js";

const SYSTEM: DatasetMessage = { role: "system", content: "Be brief." };
const TURNS: DatasetMessage[] = [
  { role: "user", content: "What is 2+2?" },
  { role: "assistant", content: "It is 4." },
  { role: "user", content: "And 3+3?" },
  { role: "assistant", content: "6, of course 🙂" },
];

const PINNED = () => new Date(2025, 6, 10, 12);

/** Runs of consecutive trained tokens, decoded; checks each trained label is its own position's id. */
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

let root: string;
const tokenizers = new Map<string, Tokenizer>();

async function familyTokenizer(name: string, now: () => Date = PINNED): Promise<Tokenizer> {
  const dir = join(root, name);
  if (!tokenizers.has(name)) {
    await writeFamilyTokenizer(dir, chatFamily(name));
    tokenizers.set(name, await loadTokenizer(dir, { now: PINNED }));
  }
  return now === PINNED ? tokenizers.get(name)! : loadTokenizer(dir, { now });
}

/** The conversation's labels, after checking its ids are its rendering's own tokenization. */
function label(
  tokenizer: Tokenizer,
  messages: DatasetMessage[],
): { example: TokenizedExample; text: string } {
  const example = tokenizeExample(tokenizer, { messages });
  const text = tokenizer.applyChatTemplate(messages);
  assert.deepEqual([...example.inputIds], tokenizer.encode(text));
  assert.equal(tokenizer.decode(example.inputIds), text);
  return { example, text };
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-examples-families-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("each family trains exactly its assistant contents and their end-of-turn tokens", () => {
  for (const family of CHAT_FAMILIES) {
    test(`${family.name} (${family.model})`, async () => {
      const tokenizer = await familyTokenizer(family.name);
      // Mistral v0.3 writes " </s>" after the content: the space is part of the turn's end.
      const end = (family.name === "mistral-v0.3" ? " " : "") + family.endOfTurn;
      for (const messages of [[SYSTEM, ...TURNS], TURNS]) {
        const { example } = label(tokenizer, messages);
        assert.deepEqual(trainedRuns(tokenizer, example), [`It is 4.${end}`, `6, of course 🙂${end}`]);
      }
      const row = tokenizeExample(tokenizer, { prompt: "Say hi", completion: "hi there" });
      assert.deepEqual(trainedRuns(tokenizer, row), [`hi there${end}`]);
      const unweighted: DatasetMessage[] = [TURNS[0], { ...TURNS[1], weight: 0 }, TURNS[2], TURNS[3]];
      const weighted = tokenizeExample(tokenizer, { messages: unweighted });
      assert.deepEqual(trainedRuns(tokenizer, weighted), [`6, of course 🙂${end}`]);
    });
  }
});

describe("what each template does around the content stays untrained", () => {
  test("Llama 3 and Gemma trim contents: the trimmed content is trained, not the same words in a user turn", async () => {
    const messages: DatasetMessage[] = [
      { role: "user", content: "  Say: It is 4.  " },
      { role: "assistant", content: "  It is 4.\n" },
    ];
    for (const [name, end] of [
      ["llama-3.1", "<|eot_id|>"],
      ["llama-3.2", "<|eot_id|>"],
      ["gemma-3", "<end_of_turn>"],
    ]) {
      const tokenizer = await familyTokenizer(name);
      const { example, text } = label(tokenizer, messages);
      assert.deepEqual(trainedRuns(tokenizer, example), [`It is 4.${end}`], name);
      assert.match(text, /Say: It is 4\./);
    }
  });

  test("Llama 3's system preamble and Granite's dated default system prompt are not trained", async () => {
    for (const [name, preamble] of [
      ["llama-3.2", "Cutting Knowledge Date: December 2023\nToday Date: 10 Jul 2025\n\n"],
      ["granite-3.3", "Today's Date: July 10, 2025. You are Granite, developed by IBM."],
    ]) {
      const tokenizer = await familyTokenizer(name);
      const { example, text } = label(tokenizer, TURNS);
      assert.ok(text.includes(preamble), name);
      assert.ok(
        trainedRuns(tokenizer, example).every((run) => !run.includes("Date")),
        name,
      );
    }
  });

  test("Gemma: the system prompt folded into the first user turn and the 'model' role header are not trained", async () => {
    const tokenizer = await familyTokenizer("gemma-3");
    const { example, text } = label(tokenizer, [SYSTEM, ...TURNS]);
    assert.ok(
      text.startsWith(
        "<bos><start_of_turn>user\nBe brief.\n\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
      ),
    );
    assert.deepEqual(trainedRuns(tokenizer, example), [
      "It is 4.<end_of_turn>",
      "6, of course 🙂<end_of_turn>",
    ]);
    assert.equal(example.labels[0], IGNORE_INDEX);
    assert.equal(tokenizer.decode([example.inputIds[0]]), "<bos>");
  });

  test("Qwen3: the empty thinking block before the last answer is not trained", async () => {
    const tokenizer = await familyTokenizer("qwen3");
    const { example, text } = label(tokenizer, TURNS);
    assert.ok(text.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n6, of course 🙂<|im_end|>\n"));
    assert.deepEqual(trainedRuns(tokenizer, example), ["It is 4.<|im_end|>", "6, of course 🙂<|im_end|>"]);
  });

  test("Qwen3: reasoning in a content is dropped from earlier turns and trained in the last", async () => {
    const tokenizer = await familyTokenizer("qwen3");
    const messages: DatasetMessage[] = [
      { role: "user", content: "Q1" },
      { role: "assistant", content: "<think>\nr1\n</think>\n\nA1" },
      { role: "user", content: "Q2" },
      { role: "assistant", content: "<think>r2</think>A2" },
    ];
    const { example, text } = label(tokenizer, messages);
    assert.ok(!text.includes("r1"));
    assert.deepEqual(trainedRuns(tokenizer, example), [
      "A1<|im_end|>",
      "<think>\nr2\n</think>\n\nA2<|im_end|>",
    ]);
  });

  test("SmolLM3: leading newlines are stripped; without reasoning its empty thinking block is not trained", async () => {
    const tokenizer = await familyTokenizer("smollm3");
    const answer: DatasetMessage[] = [
      { role: "user", content: "Q1" },
      { role: "assistant", content: "\n\nA1" },
    ];
    for (const messages of [
      answer,
      [{ role: "system" as const, content: "Be brief. /no_think" }, ...answer],
    ]) {
      const { example, text } = label(tokenizer, messages);
      assert.deepEqual(trainedRuns(tokenizer, example), ["A1<|im_end|>"]);
      assert.equal(text.includes("<think>\n\n</think>\nA1"), messages.length === 3);
    }
  });

  test("Mistral Nemo: the system prompt goes with the last user turn, so a training conversation has none", async () => {
    const tokenizer = await familyTokenizer("mistral-nemo");
    const { example, text } = label(tokenizer, [SYSTEM, ...TURNS]);
    assert.equal(text, "<s>[INST]What is 2+2?[/INST]It is 4.</s>[INST]And 3+3?[/INST]6, of course 🙂</s>");
    assert.deepEqual(trainedRuns(tokenizer, example), ["It is 4.</s>", "6, of course 🙂</s>"]);
  });

  test("Phi-3.5: the EOS the template appends after the last turn is not trained; a literal <|end|> in a content is", async () => {
    const tokenizer = await familyTokenizer("phi-3.5");
    const { example, text } = label(tokenizer, [
      { role: "user", content: "Q1" },
      { role: "assistant", content: "ends with <|end|>" },
    ]);
    assert.ok(text.endsWith("<|assistant|>\nends with <|end|><|end|>\n<|endoftext|>"));
    assert.deepEqual(trainedRuns(tokenizer, example), ["ends with <|end|><|end|>"]);
  });

  test("OLMo 2: its BOS is its EOS; the leading one is not trained, each one ending an answer is", async () => {
    const tokenizer = await familyTokenizer("olmo-2");
    const { example, text } = label(tokenizer, TURNS);
    assert.ok(text.startsWith("<|endoftext|><|user|>\n"));
    assert.equal(example.labels[0], IGNORE_INDEX);
    assert.deepEqual(trainedRuns(tokenizer, example), [
      "It is 4.<|endoftext|>",
      "6, of course 🙂<|endoftext|>",
    ]);
  });

  test("an empty answer trains only its end-of-turn token", async () => {
    const tokenizer = await familyTokenizer("gemma-3");
    const { example } = label(tokenizer, [
      { role: "user", content: "Say nothing" },
      { role: "assistant", content: "" },
    ]);
    assert.deepEqual(trainedRuns(tokenizer, example), ["<end_of_turn>"]);
  });

  test("a date that changes between renders is caught and the conversation rendered again", async () => {
    let armed = false;
    let calls = 0;
    // Once armed, the first render sees 10 July and every later one 11 July.
    const clock = () => new Date(2025, 6, armed && ++calls > 1 ? 11 : 10, 12);
    const tokenizer = await familyTokenizer("llama-3.2", clock);
    armed = true;
    const example = tokenizeExample(tokenizer, { messages: TURNS });
    assert.ok(calls > 2);
    const text = tokenizer.decode(example.inputIds);
    assert.match(text, /Today Date: 11 Jul 2025/);
    assert.deepEqual(trainedRuns(tokenizer, example), ["It is 4.<|eot_id|>", "6, of course 🙂<|eot_id|>"]);
  });
});
