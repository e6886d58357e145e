// Loss masks of tool-use conversations with the real chat templates of
// fixtures/chat-templates/ and the bundled model's: each assistant turn's tool
// calls, in the family's own syntax, and its answers are trained with their
// end-of-turn token; tool results, the tool listing and the scaffolding are not.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chatFamily, writeFamilyTokenizer } from "../testing/chat-families.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { TokenizedExample, Tokenizer, ToolDefinition } from "../types.js";
import type { DatasetMessage } from "./dataset.js";
import { IGNORE_INDEX, tokenizeExample } from "./examples.js";
import { fitRow } from "./truncation.js";

const PINNED = () => new Date(2025, 6, 10, 12);
const BUNDLED = new URL("../../../../../models/pico-llama/", import.meta.url);

const TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "lookup_order",
      description: "Find an order by its id",
      parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
    },
  },
];
// Nine letters and digits: Mistral's templates refuse other call ids.
const call = (id: string, orderId: string) => ({
  id,
  type: "function" as const,
  function: { name: "lookup_order", arguments: JSON.stringify({ order_id: orderId }) },
});
const MESSAGES: DatasetMessage[] = [
  { role: "system", content: "You help with orders." },
  { role: "user", content: "Where is order A17?" },
  { role: "assistant", content: "", tool_calls: [call("call00001", "A17")] },
  { role: "tool", tool_call_id: "call00001", content: '{"status": "shipped"}' },
  { role: "assistant", content: "It has shipped." },
];

/** Runs of consecutive trained tokens, decoded; checks each trained label is its own position's id. */
function trainedRuns(tokenizer: Tokenizer, example: TokenizedExample): string[] {
  const runs: string[] = [];
  let run: number[] = [];
  example.labels.forEach((label, i) => {
    if (label !== IGNORE_INDEX) {
      assert.equal(label, example.inputIds[i]);
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
async function familyTokenizer(name: string): Promise<Tokenizer> {
  if (name === "pico-llama") return loadTokenizer(BUNDLED.pathname);
  const dir = join(root, name);
  await writeFamilyTokenizer(dir, chatFamily(name));
  return loadTokenizer(dir, { now: PINNED });
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-examples-tools-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const HERMES_CALL = '<tool_call>\n{"name": "lookup_order", "arguments": {"order_id": "A17"}}\n</tool_call>';
const LLAMA_CALL = '{"name": "lookup_order", "parameters": {"order_id": "A17"}}';

// family → [syntax, who writes it, the trained call turn, the end-of-turn token]
const CASES: [string, string, string, string, string][] = [
  ["qwen2.5", "hermes", "template", HERMES_CALL, "<|im_end|>"],
  ["qwen3", "hermes", "template", HERMES_CALL, "<|im_end|>"],
  ["llama-3.1", "llama3", "template", LLAMA_CALL, "<|eot_id|>"],
  ["llama-3.2", "llama3", "template", LLAMA_CALL, "<|eot_id|>"],
  ["gemma-3", "hermes", "svc", HERMES_CALL, "<end_of_turn>"],
  ["phi-3.5", "hermes", "svc", HERMES_CALL, "<|end|>"],
  ["pico-llama", "hermes", "svc", HERMES_CALL, "<|im_end|>"],
];

describe("tool calls and answers are trained, tool results are not", () => {
  for (const [name, syntax, writtenBy, callTurn, end] of CASES) {
    test(`${name}: ${syntax} calls written by the ${writtenBy}`, async () => {
      const tokenizer = await familyTokenizer(name);
      assert.equal(tokenizer.toolSyntax?.name, syntax);
      assert.equal(tokenizer.toolSyntax?.writtenBy, writtenBy);
      const example = tokenizeExample(tokenizer, { messages: MESSAGES, tools: TOOLS });
      const text = tokenizer.applyChatTemplate(MESSAGES, { tools: TOOLS });
      assert.deepEqual([...example.inputIds], tokenizer.encode(text));
      assert.ok(text.includes("Find an order by its id"), "the tools are listed in the prompt");
      assert.ok(text.includes("shipped"), "the tool result is in the prompt");
      assert.deepEqual(trainedRuns(tokenizer, example), [`${callTurn}${end}`, `It has shipped.${end}`]);

      // weight 0 on the call turn: only the answer is trained.
      const weighted = MESSAGES.map((m, i): DatasetMessage => (i === 2 ? { ...m, weight: 0 } : m));
      const answerOnly = tokenizeExample(tokenizer, { messages: weighted, tools: TOOLS });
      assert.deepEqual(trainedRuns(tokenizer, answerOnly), [`It has shipped.${end}`]);

      // keep_answers truncation keeps the final answer; a dropped exchange takes its tool results with it.
      const full = example.inputIds.length;
      const fitted = fitRow(
        tokenizer,
        {
          messages: [
            ...MESSAGES,
            { role: "user", content: "Thanks!" },
            { role: "assistant", content: "Glad to help." },
          ],
          tools: TOOLS,
        },
        { maxLength: full },
      );
      assert.ok(fitted.example !== null);
      const runs = trainedRuns(tokenizer, fitted.example);
      assert.equal(runs.at(-1), `Glad to help.${end}`);
      const kept = tokenizer.decode(fitted.example.inputIds);
      if (!runs.some((r) => r.includes("lookup_order"))) assert.ok(!kept.includes("shipped"), kept);
    });
  }

  test("parallel calls in one turn are one trained span (Qwen2.5)", async () => {
    const tokenizer = await familyTokenizer("qwen2.5");
    const messages: DatasetMessage[] = [
      { role: "user", content: "A17 and B2?" },
      {
        role: "assistant",
        content: "Checking both.",
        tool_calls: [call("call00001", "A17"), call("call00002", "B2")],
      },
      { role: "tool", tool_call_id: "call00001", content: "shipped" },
      { role: "tool", tool_call_id: "call00002", content: "packed" },
      { role: "assistant", content: "A17 shipped, B2 is packed." },
    ];
    const runs = trainedRuns(tokenizer, tokenizeExample(tokenizer, { messages, tools: TOOLS }));
    assert.deepEqual(runs, [
      `Checking both.\n${HERMES_CALL}\n${HERMES_CALL.replace("A17", "B2")}<|im_end|>`,
      "A17 shipped, B2 is packed.<|im_end|>",
    ]);
  });

  test("a template with a syntax svc does not parse still trains its calls (Mistral v0.3)", async () => {
    const tokenizer = await familyTokenizer("mistral-v0.3");
    assert.equal(tokenizer.toolSyntax, null);
    const runs = trainedRuns(
      tokenizer,
      tokenizeExample(tokenizer, { messages: MESSAGES.slice(1), tools: TOOLS }),
    );
    assert.equal(runs.length, 2);
    assert.match(
      runs[0],
      /^\[TOOL_CALLS\] \[\{"name": "lookup_order", "arguments": \{"order_id": "A17"\}, "id": "call00001"\}\]/,
    );
    assert.match(runs[1], /^It has shipped\./);
  });
});
