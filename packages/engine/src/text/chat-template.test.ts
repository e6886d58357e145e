import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { EngineError } from "../errors.js";
import {
  CHAT_FAMILIES,
  type ChatFamily,
  chatFamily,
  writeFamilyTokenizer,
} from "../testing/chat-families.js";
import type { ChatMessage, Tokenizer } from "../types.js";
import { ChatTemplate, strftime } from "./chat-template.js";
import { loadTokenizer } from "./tokenizer.js";

/** Written by src/testing/chat_template_reference.py with Hugging Face transformers. */
const reference = JSON.parse(
  readFileSync(
    new URL("../../../src/testing/fixtures/chat-templates/reference.json", import.meta.url),
    "utf8",
  ),
) as {
  now: string;
  conversations: Record<string, { messages: ChatMessage[]; addGenerationPrompt: boolean }>;
  families: Record<
    string,
    Record<string, { text: string; ids: number[]; addSpecialTokensPrepends: number[] }>
  >;
};

/** The time reference.json was rendered at. */
const PINNED = () => new Date(2025, 6, 10, 12);

let root: string;
const folders = new Map<string, { dir: string; ids: Map<string, number> }>();

async function familyFolder(family: ChatFamily): Promise<{ dir: string; ids: Map<string, number> }> {
  let folder = folders.get(family.name);
  if (folder === undefined) {
    const dir = join(root, family.name);
    folder = { dir, ids: await writeFamilyTokenizer(dir, family) };
    folders.set(family.name, folder);
  }
  return folder;
}

async function familyTokenizer(name: string, now: () => Date = PINNED): Promise<Tokenizer> {
  return loadTokenizer((await familyFolder(chatFamily(name))).dir, { now });
}

function occurrences(text: string, part: string): number {
  return text.split(part).length - 1;
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-chat-template-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("strftime is Python's, in the C locale", () => {
  test("every directive on a fixed date", () => {
    const date = new Date(2025, 0, 5, 9, 7, 3); // a Sunday
    assert.equal(
      strftime(date, "%a %A %b %h %B|%d %e %m %y %Y|%H %I %p %M %S|%j|%F|%D|%T|%%|%-d %-m %-H|%Q"),
      "Sun Sunday Jan Jan January|05  5 01 25 2025|09 09 AM 07 03|005|2025-01-05|01/05/25|09:07:03|%|5 1 9|%Q",
    );
  });

  test("the 12-hour clock and the last day of a leap year", () => {
    assert.equal(strftime(new Date(2024, 11, 31, 0, 30), "%I %p %j %a %B"), "12 AM 366 Tue December");
    assert.equal(strftime(new Date(2024, 6, 4, 12, 0), "%I %p"), "12 PM");
    assert.equal(strftime(new Date(2024, 6, 4, 13, 0), "%I %p %-I"), "01 PM 1");
  });

  test("the formats of the published templates", () => {
    const date = new Date(2025, 6, 10, 12);
    assert.equal(strftime(date, "%d %b %Y"), "10 Jul 2025"); // Llama 3.2
    assert.equal(strftime(date, "%d %B %Y"), "10 July 2025"); // SmolLM3
    assert.equal(strftime(date, "%B %d, %Y"), "July 10, 2025"); // Granite 3.3
    assert.equal(strftime(date, "%Y-%m-%d"), "2025-07-10"); // Mistral Small 3
  });
});

describe("template globals", () => {
  const render = (source: string, messages: ChatMessage[] = [], now?: () => Date) =>
    new ChatTemplate(source, { bos_token: "<s>" }, now).render(messages, false);

  test("strftime_now reads the clock given; raise_exception fails the render with its message", () => {
    assert.equal(render("{{ strftime_now('%A %d %B %Y') }}", [], PINNED), "Thursday 10 July 2025");
    assert.throws(
      () => render("{{ raise_exception('roles must alternate') }}"),
      /^Error: roles must alternate$/,
    );
  });

  test("the interpreter's other globals remain", () => {
    const source =
      "{{ bos_token }}{% set ns = namespace(n=0) %}{% for i in range(1, 7, 2) %}{% set ns.n = ns.n + i %}{% endfor %}" +
      "{{ ns.n }}{% if true and not false and none is none and True and not False and None is none %}!{% endif %}" +
      "{{ messages | length }}{{ messages[0].role }}{% if x is not defined %}?{% endif %}";
    assert.equal(render(source, [{ role: "user", content: "hi" }]), "<s>9!1user?");
  });

  test("tojson writes what transformers' json.dumps(ensure_ascii=False) writes, with its options", () => {
    const value = "{% set x = {'b': 'é', 'a': [1, none, true]} %}";
    assert.equal(render(`${value}{{ x | tojson }}`), '{"b": "é", "a": [1, null, true]}');
    assert.equal(render(`${value}{{ x | tojson(sort_keys=true) }}`), '{"a": [1, null, true], "b": "é"}');
    assert.equal(
      render(`${value}{{ x | tojson(indent=2) }}`),
      '{\n  "b": "é",\n  "a": [\n    1,\n    null,\n    true\n  ]\n}',
    );
  });

  test("Llama 3.1 takes its own date_string default; Llama 3.2 writes today's date", async () => {
    const messages: ChatMessage[] = [{ role: "user", content: "hi" }];
    const llama31 = await familyTokenizer("llama-3.1");
    assert.match(
      llama31.applyChatTemplate(messages),
      /Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n/,
    );
    const llama32 = await familyTokenizer("llama-3.2", () => new Date(2026, 1, 3, 8));
    assert.match(
      llama32.applyChatTemplate(messages),
      /Cutting Knowledge Date: December 2023\nToday Date: 03 Feb 2026\n/,
    );
  });

  test("a template's raise_exception reaches the caller as an EngineError", async () => {
    const gemma = await familyTokenizer("gemma-3");
    assert.throws(
      () =>
        gemma.applyChatTemplate([
          { role: "user", content: "a" },
          { role: "user", content: "b" },
        ]),
      (error: unknown) =>
        error instanceof EngineError &&
        error.code === "invalid_argument" &&
        /Conversation roles must alternate user\/assistant\/user\/assistant/.test(error.message),
    );
  });
});

describe("published chat templates render as transformers renders them (reference.json)", () => {
  test("every family in families.json has its reference renders", () => {
    assert.deepEqual(Object.keys(reference.families).sort(), CHAT_FAMILIES.map((f) => f.name).sort());
    assert.equal(new Date(reference.now).getTime(), PINNED().getTime());
  });

  for (const family of CHAT_FAMILIES) {
    test(`${family.name} (${family.model})`, async () => {
      const { ids: tokenIds } = await familyFolder(family);
      const tokenizer = await familyTokenizer(family.name);
      for (const [name, { messages, addGenerationPrompt }] of Object.entries(reference.conversations)) {
        const expected = reference.families[family.name][name];
        const text = tokenizer.applyChatTemplate(messages, { addGenerationPrompt });
        assert.equal(text, expected.text, `${family.name} ${name}`);
        const ids = tokenizer.encode(text);
        assert.deepEqual(ids, expected.ids, `${family.name} ${name}: ids`);

        // BOS: written by the template or not at all, never added again by
        // encode(), even where the tokenizer.json post-processor would add it.
        const bos = tokenizer.bosTokenId;
        if (family.prependToken !== undefined) {
          assert.deepEqual(expected.addSpecialTokensPrepends, [tokenIds.get(family.prependToken)]);
        } else {
          assert.deepEqual(expected.addSpecialTokensPrepends, []);
        }
        if (bos !== null) {
          const bosText = tokenizer.decode([bos]);
          assert.equal(
            ids.filter((id) => id === bos).length,
            occurrences(text, bosText),
            `${family.name} ${name}: BOS count`,
          );
        }
        if (addGenerationPrompt) assert.ok(text.endsWith(family.generationPrompt), `${family.name} ${name}`);
      }
    });
  }

  test("the generation prompts of each family", async () => {
    const prompts: Record<string, string> = {};
    for (const family of CHAT_FAMILIES) {
      prompts[family.name] = reference.families[family.name]["prompt-no-system"].text;
    }
    assert.equal(
      prompts["gemma-3"],
      "<bos><start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    );
    assert.equal(
      prompts["llama-3.1"],
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" +
        "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>" +
        "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>" +
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
    );
    assert.equal(
      prompts["qwen2.5"],
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n" +
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    );
    assert.equal(prompts.qwen3, "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
    assert.equal(prompts["phi-3.5"], "<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n");
    assert.equal(prompts["phi-4-mini"], "<|user|>What is 2+2?<|end|><|assistant|>");
    assert.equal(prompts["mistral-v0.3"], "<s> [INST] What is 2+2? [/INST]");
    assert.equal(prompts["mistral-nemo"], "<s>[INST]What is 2+2?[/INST]");
    assert.equal(prompts["olmo-2"], "<|endoftext|><|user|>\nWhat is 2+2?\n<|assistant|>\n");
    assert.match(prompts["granite-3.3"], /Today's Date: July 10, 2025\. You are Granite, developed by IBM\./);
    assert.match(prompts.smollm3, /\nToday Date: 10 July 2025\nReasoning Mode: \/think\n/);
    // Gemma folds the system prompt into the first user turn; Mistral Nemo into the last one.
    assert.match(
      reference.families["gemma-3"].prompt.text,
      /^<bos><start_of_turn>user\nBe brief\.\n\nWhat is 2\+2\?/,
    );
    assert.match(
      reference.families["mistral-nemo"].prompt.text,
      /\[INST\]Be brief\.\n\nAnd 3\+3\?\[\/INST\]$/,
    );
  });

  test("each family stops at every eos id it publishes and at its end-of-turn token", async () => {
    for (const family of CHAT_FAMILIES) {
      const { ids } = await familyFolder(family);
      const tokenizer = await familyTokenizer(family.name);
      const list = (tokens: string | string[] | undefined) =>
        tokens === undefined ? [] : Array.isArray(tokens) ? tokens : [tokens];
      const eos = family.tokenizerConfig.eos_token;
      const expected = new Set(
        [
          ...(eos ? [eos] : []),
          ...list(family.generationConfigEos),
          ...list(family.configEos),
          family.endOfTurn,
        ].map((t) => ids.get(t)),
      );
      assert.deepEqual([...tokenizer.eosTokenIds].sort(), [...expected].sort(), family.name);
      assert.equal(tokenizer.eosTokenIds[0], eos ? ids.get(eos) : undefined, family.name);
    }
  });
});
