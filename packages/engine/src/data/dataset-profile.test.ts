// The dataset profile on a small dataset whose numbers are worked out by hand.
// The test tokenizer has no merges: one token per byte, one per special token.
// ChatML writes a user turn as <|im_start|> "user\n" content <|im_end|> "\n"
// (8 + N tokens), an assistant turn as <|im_start|> "assistant\n" content
// <|im_end|> "\n" (13 + M) of which the content and <|im_end|> are trained
// (M + 1), a system turn as 10 + S and a tool turn, like a user turn, as 8 + T.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { EngineError } from "../errors.js";
import { writeTestTokenizer } from "../testing/test-tokenizer.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { DatasetRow, Tokenizer } from "../types.js";
import type { DatasetMessage } from "./dataset.js";
import {
  type DatasetProfile,
  lengthHistogram,
  percentile,
  profileDataset,
  rowsOverMaxLength,
  suggestMaxLength,
} from "./dataset-profile.js";
import { profileDatasetFile } from "./dataset-profile-file.js";

const root = mkdtempSync(join(tmpdir(), "svc-dataset-profile-"));
const TOKENIZER = join(root, "tok");
let tokenizer: Tokenizer;

before(async () => {
  await writeTestTokenizer(TOKENIZER);
  tokenizer = await loadTokenizer(TOKENIZER);
});
after(() => rmSync(root, { recursive: true, force: true }));

const chat = (user: string, assistant: string): DatasetRow => ({
  messages: [
    { role: "user", content: user },
    { role: "assistant", content: assistant },
  ],
});
const x = (n: number) => "x".repeat(n);

// [prompt, answer, total] tokens per row, by the rules above.
const ROWS: DatasetRow[] = [
  chat("ab", "x"), // 1: 22, 2, 24
  chat("ab", "x"), // 2: the same row as 1
  { prompt: "ab", completion: "x" }, // 3: the same conversation as 1
  chat(x(10), x(5)), // 4: 30, 6, 36
  {
    messages: [
      { role: "system", content: "sys" },
      { role: "user", content: "abcd" },
      { role: "assistant", content: "abc" },
    ],
  }, // 5: 13 + 12 + 16 = 41 of which 4 trained: 37, 4, 41
  {
    messages: [
      { role: "user", content: "q1" },
      { role: "assistant", content: "a1" },
      { role: "user", content: "q2" },
      { role: "assistant", content: "a22" },
    ],
  }, // 6: 10 + 15 + 10 + 16 = 51, trained 3 + 4: 44, 7, 51
  chat(x(40), x(2)), // 7: 60, 3, 63
  chat(x(100), x(50)), // 8: 120, 51, 171
  chat(x(5), x(200)), // 9: 25, 201, 226
  {
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: "call" },
      { role: "tool", content: "42" },
      { role: "assistant", content: "ok" },
    ],
  }, // 10: 10 + 17 + 10 + 15 = 52, trained 5 + 3: 44, 8, 52
];

describe("profileDataset", () => {
  let profile: DatasetProfile;
  before(() => {
    profile = profileDataset(tokenizer, ROWS);
  });

  test("counts rows, messages per role and assistant turns per row", () => {
    assert.equal(profile.rows, 10);
    assert.deepEqual(profile.roles, { system: 1, user: 11, assistant: 12, tool: 1 });
    assert.deepEqual(profile.turns, { 1: 8, 2: 2 });
  });

  test("token lengths: nearest-rank p50 and p95, max and mean of prompt, answer and row", () => {
    // Totals sorted: 24 24 24 36 41 51 52 63 171 226; p50 is the 5th, p95 the 10th.
    assert.deepEqual(profile.tokens.total, { p50: 41, p95: 226, max: 226, mean: 71.2 });
    // Prompts sorted: 22 22 22 25 30 37 44 44 60 120.
    assert.deepEqual(profile.tokens.prompt, { p50: 30, p95: 120, max: 120, mean: 42.6 });
    // Answers sorted: 2 2 2 3 4 6 7 8 51 201.
    assert.deepEqual(profile.tokens.answer, { p50: 4, p95: 201, max: 201, mean: 28.6 });
    assert.equal(profile.tokens.sum, 712);
    assert.deepEqual(profile.lengths, [
      [24, 3],
      [36, 1],
      [41, 1],
      [51, 1],
      [52, 1],
      [63, 1],
      [171, 1],
      [226, 1],
    ]);
    assert.deepEqual(
      profile.longest.map((r) => [r.row, r.tokens, r.promptTokens, r.answerTokens]),
      [
        [9, 226, 25, 201],
        [8, 171, 120, 51],
        [7, 63, 60, 3],
        [10, 52, 44, 8],
        [6, 51, 44, 7],
      ],
    );
  });

  test("exact duplicates: a prompt/completion row repeats the chat row it stands for", () => {
    assert.deepEqual(profile.duplicates, {
      rows: 2,
      groups: 1,
      first: [
        { row: 2, duplicateOf: 1 },
        { row: 3, duplicateOf: 1 },
      ],
    });
    // A different weight is a different training example.
    const messages: DatasetMessage[] = [
      { role: "user", content: "ab" },
      { role: "assistant", content: "x", weight: 0 },
      { role: "assistant", content: "x" },
    ];
    const weighted: DatasetRow = { messages };
    const unweighted: DatasetRow = { messages: messages.map((m) => ({ role: m.role, content: m.content })) };
    const other = profileDataset(tokenizer, [weighted, { ...weighted }, unweighted]);
    assert.deepEqual(other.duplicates.first, [{ row: 2, duplicateOf: 1 }]);
  });

  test("rows over maxLength", () => {
    assert.equal(rowsOverMaxLength(profile, 50), 5);
    assert.equal(rowsOverMaxLength(profile, 63), 2);
    assert.equal(rowsOverMaxLength(profile, 226), 0);
  });

  test("suggested maxLength: a multiple of 64 holding the p95 row and the longest answer, capped by the context", () => {
    // The least prompt: empty system (10), user (8) and the assistant turn's untrained 12.
    assert.equal(profile.templateTokens, 30);
    // max(p95 226, 201 + 30 = 231) → 256.
    assert.deepEqual(suggestMaxLength(profile), { maxLength: 256, rowsOver: 0, cappedAtContext: false });
    assert.deepEqual(suggestMaxLength(profile, 128), { maxLength: 128, rowsOver: 2, cappedAtContext: true });
    // Short rows still get 64.
    const short = profileDataset(tokenizer, [chat("a", "b")]);
    assert.equal(short.templateTokens, 20);
    assert.equal(suggestMaxLength(short).maxLength, 64);
  });

  test("histogram: power-of-two bins from the shortest row, outliers in one open-ended bin", () => {
    const bins = lengthHistogram(profile, 64);
    // Rows 24 to 226 in about 24 bins → width 16 from 16: 14 bins to 240, no open end.
    assert.equal(bins.length, 14);
    assert.deepEqual(bins[0], { from: 16, to: 32, rows: 3 });
    assert.deepEqual(bins[13], { from: 224, to: 240, rows: 1 });
    assert.deepEqual(
      bins.filter((b) => b.rows > 0).map((b) => [b.from, b.rows]),
      [
        [16, 3],
        [32, 2],
        [48, 3],
        [160, 1],
        [224, 1],
      ],
    );
    const skewed: DatasetProfile = {
      ...profile,
      tokens: { ...profile.tokens, total: { p50: 24, p95: 24, max: 226, mean: 34 } },
      lengths: [
        [24, 19],
        [226, 1],
      ],
    };
    const open = lengthHistogram(skewed);
    // From 24 to 2 × p95 = 48 → width 1, 24 closed bins and [48, ∞).
    assert.equal(open.length, 25);
    assert.deepEqual(open[0], { from: 24, to: 25, rows: 19 });
    assert.deepEqual(open[24], { from: 48, to: null, rows: 1 });
    // A maxLength below every row starts the bins there.
    assert.deepEqual(lengthHistogram(skewed, 8)[0], { from: 8, to: 10, rows: 0 });
    assert.equal(
      open.reduce((n, b) => n + b.rows, 0),
      20,
    );
  });

  test("percentile is nearest-rank", () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    assert.equal(percentile(sorted, 50), 5);
    assert.equal(percentile(sorted, 95), 10);
    assert.equal(percentile(sorted, 90), 9);
    assert.equal(percentile([7], 50), 7);
  });
});

describe("profileDatasetFile", () => {
  const jsonl = (rows: DatasetRow[]) => `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;

  // Row 10 as a file row must name the call its tool message answers.
  const TOOL_ROW: DatasetRow = {
    tools: [{ type: "function", function: { name: "f" } }],
    messages: [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: "call",
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "42" },
      { role: "assistant", content: "ok" },
    ],
  };
  const FILE_ROWS = [...ROWS.slice(0, 9), TOOL_ROW];

  test("worker threads give the same profile as this thread, with progress", async () => {
    const many = Array.from({ length: 700 }, (_, i) => FILE_ROWS[i % FILE_ROWS.length]);
    const path = join(root, "many.jsonl");
    writeFileSync(path, jsonl(many));
    const progress: number[] = [];
    const threaded = await profileDatasetFile(path, TOKENIZER, {
      threads: 2,
      onProgress: (done) => progress.push(done),
    });
    const here = await profileDatasetFile(path, TOKENIZER, { threads: 1 });
    assert.deepEqual(threaded, here);
    assert.deepEqual(threaded, profileDataset(tokenizer, many));
    assert.equal(progress.at(-1), 700);
    assert.equal(threaded.duplicates.rows, 700 - 8);
  });

  test("a row the chat template refuses fails the profile, naming the file and row", async () => {
    const strict = join(root, "strict");
    await writeTestTokenizer(strict, {
      chatTemplate:
        "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system turns here') }}{% endif %}" +
        "{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}" +
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    });
    const rows = Array.from({ length: 600 }, () => chat("a", "b"));
    rows[520] = ROWS[4];
    const path = join(root, "strict.jsonl");
    writeFileSync(path, jsonl(rows));
    for (const threads of [1, 2]) {
      await assert.rejects(
        profileDatasetFile(path, strict, { threads }),
        (error: Error) =>
          error instanceof EngineError &&
          /^strict\.jsonl row 521: .*no system turns here/.test(error.message) &&
          error.code === "invalid_argument",
        `threads ${threads}`,
      );
    }
  });

  test("an invalid file is refused with readDataset's line-numbered error", async () => {
    const path = join(root, "bad.jsonl");
    writeFileSync(path, `${jsonl([chat("a", "b")])}{"messages": []}\n`);
    await assert.rejects(
      profileDatasetFile(path, TOKENIZER),
      /bad\.jsonl line 2: "messages" must be a non-empty array/,
    );
  });
});
