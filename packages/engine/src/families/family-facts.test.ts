// Each family fact is defined once, in its module; these tests fail when a
// copy of one elsewhere drifts from it (the Python reference's tables, the
// chat-format order, the fixtures each family needs) or when two families
// written as one llama.cpp architecture disagree about it.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chatFormatOf } from "../export/modelfile.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { CHAT_FORMATS, type ChatFormat, FAMILIES, FAMILY_BY_NAME, type FamilyName } from "./index.js";

// dist/src/families/ → packages/engine
const ENGINE = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const TEMPLATES = join(ENGINE, "src", "testing", "fixtures", "chat-templates");
/** The family of each published template in fixtures/chat-templates (by the model families.json names). */
const TEMPLATE_FAMILY: Record<string, FamilyName> = {
  "llama-3.1": "llama",
  "llama-3.2": "llama",
  "mistral-nemo": "mistral",
  "mistral-v0.3": "mistral",
  "qwen2.5": "qwen2",
  qwen3: "qwen3",
  "gemma-3": "gemma3",
  "phi-3.5": "phi3",
  "phi-4-mini": "phi3",
  smollm3: "smollm3",
  "olmo-2": "olmo2",
  "granite-3.3": "granite",
};

test("every family name has its module, named by it, and a test config", () => {
  for (const [name, family] of Object.entries(FAMILY_BY_NAME)) assert.equal(family.name, name);
  assert.deepEqual(
    FAMILIES.map((f) => f.name),
    Object.keys(FAMILY_BY_NAME),
  );
  assert.deepEqual(Object.keys(FAMILY_CONFIGS).sort(), Object.keys(FAMILY_BY_NAME).sort());
});

test("families written as the same llama.cpp architecture state the same facts about it", () => {
  const byArch = new Map<string, (typeof FAMILIES)[number]>();
  for (const family of FAMILIES) {
    const first = byArch.get(family.gguf.arch);
    if (first) assert.deepEqual(family.gguf, first.gguf, `${family.name} and ${first.name}`);
    else byArch.set(family.gguf.arch, family);
  }
  assert.equal(FAMILY_BY_NAME.mistral.gguf.arch, "llama");
});

test("the chat formats' matching order lists exactly the formats the families name, each once", () => {
  const named = new Set<ChatFormat>(FAMILIES.flatMap((f) => f.ollama.chatFormats));
  assert.equal(new Set(CHAT_FORMATS).size, CHAT_FORMATS.length);
  assert.deepEqual(
    new Set(CHAT_FORMATS),
    named,
    "a family's format missing from CHAT_FORMATS, or one no family names",
  );
});

test("each published template is recognised as one of its family's formats, and each format from one", () => {
  const templates = readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja"));
  assert.deepEqual(
    templates.map((f) => f.replace(/\.jinja$/, "")).sort(),
    Object.keys(TEMPLATE_FAMILY).sort(),
  );
  const recognised = new Set<ChatFormat>();
  for (const file of templates) {
    const family = FAMILY_BY_NAME[TEMPLATE_FAMILY[file.replace(/\.jinja$/, "")]];
    const format = chatFormatOf(readFileSync(join(TEMPLATES, file), "utf8"));
    if (format) {
      assert.ok(
        family.ollama.chatFormats.includes(format),
        `${file}: ${format.name} is not ${family.name}'s`,
      );
      recognised.add(format);
    }
  }
  for (const format of CHAT_FORMATS) assert.ok(recognised.has(format), `no template of ${format.name}`);
});

/** The Python dict literal `NAME = { "a": ("b", "c"), … }` in a reference file, as its key → value strings. */
function pythonTable(file: string, name: string): Map<string, string[]> {
  const text = readFileSync(join(ENGINE, "reference", file), "utf8");
  const body = new RegExp(`^${name} = \\{([^}]*)\\}`, "m").exec(text)?.[1];
  assert.ok(body, `${file} has no ${name} table`);
  const entries = [...body.matchAll(/"([^"]+)":\s*(\("[^)]*\)|"[^"]*")/g)];
  return new Map(entries.map((e) => [e[1], [...e[2].matchAll(/"([^"]*)"/g)].map((m) => m[1])]));
}

test("the Python reference knows every family by the same architecture and model_type", () => {
  const want = new Map(FAMILIES.map((f) => [f.architectures[0], [f.name, f.modelTypes[0]]]));
  assert.deepEqual(pythonTable("configs.py", "ARCHITECTURES"), want);
  assert.deepEqual(
    pythonTable("config_json.py", "ARCH"),
    new Map(FAMILIES.map((f) => [f.name, [f.architectures[0]]])),
  );
  assert.deepEqual(
    pythonTable("config_json.py", "MODEL_TYPE"),
    new Map(FAMILIES.map((f) => [f.name, [f.modelTypes[0]]])),
  );
});

test("each family has its transformers-saved defaults model (the GGUF and golden tests run on it)", () => {
  const folders = new Set(readdirSync(join(ENGINE, "fixtures-transformers")));
  const cases = readFileSync(join(ENGINE, "reference", "cases.py"), "utf8");
  for (const family of FAMILIES) {
    assert.ok(folders.has(`${family.name}-defaults`), `fixtures-transformers/${family.name}-defaults`);
    assert.match(cases, new RegExp(`defaults\\("${family.name}-defaults", "${family.architectures[0]}"`));
  }
});
