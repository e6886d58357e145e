import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { renderGoTemplate } from "../testing/go-template-subset.js";
import { ChatTemplate } from "../text/chat-template.js";
import { CHATML_TEMPLATE } from "../text/tokenizer.js";
import type { ChatMessage } from "../types.js";
import { chatFormatOf, modelfile, ollamaTemplate } from "./modelfile.js";

const TEMPLATES = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "..",
  "src",
  "testing",
  "fixtures",
  "chat-templates",
);
const FAMILIES = JSON.parse(readFileSync(join(TEMPLATES, "families.json"), "utf8")) as Record<
  string,
  { tokenizerConfig: Record<string, string | null> }
>;

test("a ChatML model's Modelfile: FROM the file, its turns as an Ollama template, its end marker as a stop", () => {
  const text = modelfile("model-q8_0.gguf", CHATML_TEMPLATE);
  assert.match(text, /^FROM \.\/model-q8_0\.gguf\n/);
  assert.match(text, /TEMPLATE """\{\{ range \$i, \$_ := \.Messages \}\}/);
  assert.doesNotMatch(text, /\{\{-|-\}\}/, "no trim markers: they would eat the affixes' newlines");
  const rendered = renderGoTemplate(/TEMPLATE """([\s\S]*?)"""/.exec(text)?.[1] ?? "", [
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello." },
    { role: "user", content: "Bye" },
  ]);
  assert.equal(
    rendered,
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n",
  );
  assert.match(text, /^PARAMETER stop "<\|im_end\|>"$/m);
  const template = /TEMPLATE """([\s\S]*?)"""/.exec(text)?.[1] ?? "";
  assert.equal(template.split("{{").length, template.split("}}").length);
});

test("the Ollama template renders a conversation as each family's published Jinja template does", () => {
  const conversation: ChatMessage[] = [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Hi there" },
    { role: "assistant", content: "Hello." },
    { role: "user", content: "What is 2 + 2?" },
  ];
  const checked: string[] = [];
  for (const [name, family] of Object.entries(FAMILIES)) {
    const source = readFileSync(join(TEMPLATES, `${name}.jinja`), "utf8");
    const format = chatFormatOf(source);
    if (!format) continue;
    const tokens = Object.fromEntries(
      Object.entries(family.tokenizerConfig).filter((e): e is [string, string] => typeof e[1] === "string"),
    );
    const jinja = new ChatTemplate(source, tokens, () => new Date(Date.UTC(2025, 0, 2))).render(
      conversation,
      true,
    );
    // the template's BOS is the tokenizer's to add (add_bos_token), not the Ollama template's
    const bos = tokens.bos_token ?? "";
    const expected = bos && jinja.startsWith(bos) ? jinja.slice(bos.length) : jinja;
    const ours = renderGoTemplate(
      ollamaTemplate(format),
      conversation as { role: string; content: string }[],
    );
    // from the first user text on, the same text: turns, end markers, the generation prompt
    const at = (text: string) => text.indexOf("Hi there");
    assert.equal(ours.slice(at(ours)), expected.slice(at(expected)), `${name} (${format.name})`);
    // the system text in the same frame (templates may add their own lines to it, e.g. Llama 3.1's date)
    const opening = ours.slice(0, at(ours));
    assert.ok(
      expected.slice(0, at(expected)).endsWith(opening.slice(opening.indexOf("You are terse."))),
      name,
    );
    assert.ok(expected.startsWith(format.system[0]), `${name}: ${JSON.stringify(expected.slice(0, 60))}`);
    checked.push(name);
  }
  assert.ok(checked.length >= 5, `checked ${checked.join(", ")}`);
});

test("an unrecognised template leaves TEMPLATE to the GGUF metadata", () => {
  const text = modelfile("m.gguf", "{{ messages[0]['content'] }}");
  assert.doesNotMatch(text, /TEMPLATE/);
  assert.match(text, /Ollama reads tokenizer\.chat_template from the GGUF file/);
  assert.doesNotMatch(modelfile("m.gguf", null), /TEMPLATE/);
});
