import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { EngineError } from "../errors.js";
import { loadModel } from "../loading/load.js";
import { createRandomModel } from "../testing/random-model.js";
import { writeTestTokenizer } from "../testing/test-tokenizer.js";
import { loadTokenizer } from "../text/tokenizer.js";
import { prepareSets, train } from "../training/train.js";
import type { DatasetRow, LoraSpec, TokenizedExample, Tokenizer, TrainHyperparameters } from "../types.js";
import type { DatasetMessage } from "./dataset.js";
import { IGNORE_INDEX, tokenizeExample } from "./examples.js";
import { fitRow } from "./truncation.js";

const root = mkdtempSync(join(tmpdir(), "svc-truncation-"));
let tokenizer: Tokenizer;
const LORA: LoraSpec = { r: 2, alpha: 4, targetModules: ["q_proj"] };

before(async () => {
  await writeTestTokenizer(join(root, "tok"), { merges: 150 });
  tokenizer = await loadTokenizer(join(root, "tok"));
});
after(() => rmSync(root, { recursive: true, force: true }));

const long = (word: string, n: number) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(" ");
const MULTI_TURN: DatasetMessage[] = [
  { role: "system", content: "Answer in one word." },
  { role: "user", content: `First question: ${long("alpha", 40)}` },
  { role: "assistant", content: "first answer" },
  { role: "user", content: `Second question: ${long("beta", 40)}` },
  { role: "assistant", content: "second answer" },
  { role: "user", content: "Last question?" },
  { role: "assistant", content: "the last answer" },
];

const length = (messages: DatasetMessage[]) => tokenizer.encode(tokenizer.applyChatTemplate(messages)).length;
const text = (example: TokenizedExample) => tokenizer.decode(example.inputIds);
const fitted = (row: DatasetRow, maxLength: number, truncation?: "keep_answers" | "end" | "strict") => {
  const result = fitRow(tokenizer, row, { maxLength, truncation });
  assert.ok(result.example, "the row is kept");
  return result as { example: TokenizedExample; truncated: boolean };
};

describe('truncation "keep_answers" (the default)', () => {
  test("a row that fits is the full example, not counted as truncated", () => {
    const { example, truncated } = fitted({ messages: MULTI_TURN }, 10_000);
    assert.equal(truncated, false);
    assert.deepEqual(example, tokenizeExample(tokenizer, { messages: MULTI_TURN }));
  });

  test("drops the earliest exchanges first, keeping the system message and the last answer in full", () => {
    // Room for everything but the first exchange.
    const withoutFirst = [MULTI_TURN[0], ...MULTI_TURN.slice(3)];
    const { example, truncated } = fitted({ messages: MULTI_TURN }, length(withoutFirst));
    assert.equal(truncated, true);
    assert.equal(text(example), tokenizer.applyChatTemplate(withoutFirst));
    // The labels follow the usual rules on the re-rendered row.
    assert.deepEqual(example, tokenizeExample(tokenizer, { messages: withoutFirst }));

    const lastOnly = [MULTI_TURN[0], ...MULTI_TURN.slice(5)];
    const tight = fitted({ messages: MULTI_TURN }, length(lastOnly)).example;
    assert.equal(text(tight), tokenizer.applyChatTemplate(lastOnly));
    assert.ok(text(tight).includes("the last answer<|im_end|>"));
  });

  test("cuts the head of a long final user turn, keeping its tail", () => {
    const question = `${long("gamma", 60)} so what is the answer?`;
    const row: DatasetRow = { prompt: question, completion: "forty-two" };
    const maxLength = Math.floor(length([{ role: "user", content: question }]) / 2);
    const { example, truncated } = fitted(row, maxLength);
    assert.equal(truncated, true);
    assert.ok(example.inputIds.length <= maxLength);
    const rendered = text(example);
    assert.ok(rendered.includes("so what is the answer?<|im_end|>"), rendered);
    assert.ok(!rendered.includes("gamma0 "), "the head of the question is gone");
    assert.ok(rendered.endsWith("forty-two<|im_end|>\n"), rendered);
    const trained = example.labels.filter((l) => l !== IGNORE_INDEX).length;
    assert.equal(trained, tokenizer.encode("forty-two<|im_end|>").length);
  });

  test("cuts the system message's tail only when the user turn is already empty", () => {
    const messages: DatasetMessage[] = [
      { role: "system", content: `Rules first. ${long("delta", 50)}` },
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
    ];
    const maxLength = length([
      { ...messages[0], content: "Rules first." },
      { ...messages[1], content: "" },
      messages[2],
    ]);
    const rendered = text(fitted({ messages }, maxLength).example);
    assert.ok(rendered.startsWith("<|im_start|>system\nRules first."), rendered);
    assert.ok(rendered.includes("<|im_start|>user\n<|im_end|>"), "the user turn was emptied first");
    assert.ok(rendered.includes("hello<|im_end|>"));
  });

  test("a row whose answer alone exceeds maxLength is dropped, with the reason", () => {
    const row: DatasetRow = { prompt: "q", completion: long("epsilon", 40) };
    const result = fitRow(tokenizer, row, { maxLength: 32 });
    assert.equal(result.example, null);
    assert.match(
      (result as { dropped: string }).dropped,
      /^the answer alone needs \d+ tokens, over maxLength 32/,
    );
  });
});

test('truncation "end" is tokenizeExample: cut from the end; a row left with no trained token is dropped', () => {
  const full = tokenizeExample(tokenizer, { messages: MULTI_TURN });
  const firstTrained = full.labels.findIndex((l) => l !== IGNORE_INDEX);
  const cut = fitted({ messages: MULTI_TURN }, firstTrained + 3, "end");
  assert.equal(cut.truncated, true);
  assert.deepEqual(
    cut.example,
    tokenizeExample(tokenizer, { messages: MULTI_TURN }, { maxLength: firstTrained + 3 }),
  );
  const none = fitRow(tokenizer, { messages: MULTI_TURN }, { maxLength: firstTrained, truncation: "end" });
  assert.equal(none.example, null);
});

test('truncation "strict" fails on a row over maxLength, naming the row', () => {
  const rows: DatasetRow[] = [
    { prompt: "short", completion: "ok" },
    { prompt: long("zeta", 40), completion: "ok" },
  ];
  assert.throws(
    () => prepareSets(tokenizer, rows, undefined, { lora: LORA, maxLength: 24, truncation: "strict" }),
    (error: unknown) =>
      error instanceof EngineError &&
      error.code === "invalid_dataset" &&
      error.line === 2 &&
      /^trainSet row 2: \d+ tokens, over maxLength 24 \(truncation "strict"\)$/.test(error.message),
  );
});

describe("prepareSets: counts per set, and rows that cannot train", () => {
  const hp: TrainHyperparameters = { lora: LORA, maxLength: 32 };
  const rows: DatasetRow[] = [
    { prompt: "cat says", completion: "meow" },
    { prompt: long("eta", 30), completion: "moo" }, // truncated
    { prompt: "q", completion: long("theta", 40) }, // dropped
    { prompt: "dog says", completion: "woof" },
  ];

  test("an answer longer than maxLength is dropped and counted while the other rows train", async () => {
    const prepared = prepareSets(tokenizer, rows, rows.slice(2), hp, { eval: [7, 8] });
    assert.equal(prepared.train.examples.length, 3);
    assert.deepEqual(prepared.train.truncated, [2]);
    assert.deepEqual(
      prepared.train.dropped.map((d) => d.row),
      [3],
    );
    assert.deepEqual(
      prepared.eval?.dropped.map((d) => d.row),
      [7],
    );
    for (const example of prepared.train.examples) assert.ok(example.inputIds.length <= 32);

    await createRandomModel(join(root, "model"), { seed: 3, hiddenSize: 16, numHiddenLayers: 1 });
    const model = await loadModel(join(root, "model"));
    const result = await train({
      model,
      trainSet: rows,
      hyperparameters: { ...hp, maxSteps: 2, batchSize: 2 },
      outputDir: join(root, "out"),
    });
    assert.equal(result.status, "completed");
  });

  test("a set where every row is unusable fails with a clear error", () => {
    assert.throws(
      () => prepareSets(tokenizer, [rows[2], rows[2]], undefined, hp),
      (error: unknown) =>
        error instanceof EngineError &&
        error.code === "invalid_dataset" &&
        error.message.startsWith(
          "trainSet: no usable rows: all 2 were dropped as too long for maxLength 32 (row 1: ",
        ),
    );
  });

  test("an unknown truncation is refused by name", () => {
    assert.throws(
      () => prepareSets(tokenizer, rows, undefined, { ...hp, truncation: "middle" as "end" }),
      /hyperparameters\.truncation must be "keep_answers", "end" or "strict"/,
    );
  });
});
