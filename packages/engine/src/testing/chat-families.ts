// Test tokenizer folders for the model families whose real chat templates are
// kept in fixtures/chat-templates/ (its README.md names their sources): a
// byte-level tokenizer from test-tokenizer.ts that knows the family's special
// tokens as added tokens, with the family's template, tokenizer_config.json
// tokens, BOS post-processor, and eos_token_id in generation_config.json and
// config.json written the way the model writes them (one id or a list).

import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { writeTestTokenizer } from "./test-tokenizer.js";

/** One entry of fixtures/chat-templates/families.json. */
export interface ChatFamily {
  name: string;
  model: string;
  source: string;
  specialTokens: string[];
  plainTokens?: string[];
  tokenizerConfig: Record<string, string | null>;
  prependToken?: string;
  /** generation_config.json's eos_token_id, as token strings (a string: one id). */
  generationConfigEos?: string | string[];
  /** config.json's eos_token_id, as token strings (a string: one id). */
  configEos?: string | string[];
  /** The token the template writes after an assistant message's content. */
  endOfTurn: string;
  /** What add_generation_prompt appends to a conversation that ends with a user turn. */
  generationPrompt: string;
}

// dist/src/testing/ → the package root: the fixtures are read from src/, not copied.
const FIXTURES = new URL("../../../src/testing/fixtures/chat-templates/", import.meta.url);

export const CHAT_FAMILIES: readonly ChatFamily[] = Object.entries(
  JSON.parse(readFileSync(new URL("families.json", FIXTURES), "utf8")) as Record<
    string,
    Omit<ChatFamily, "name">
  >,
).map(([name, family]) => ({ name, ...family }));

export function chatFamily(name: string): ChatFamily {
  const family = CHAT_FAMILIES.find((f) => f.name === name);
  if (family === undefined) throw new Error(`no chat family ${name} in families.json`);
  return family;
}

/** The family's template text, exactly as the model publishes it. */
export async function chatTemplateText(family: ChatFamily): Promise<string> {
  return readFile(new URL(`${family.name}.jinja`, FIXTURES), "utf8");
}

/**
 * Writes the family's tokenizer folder into `dir`: tokenizer.json,
 * tokenizer_config.json, and generation_config.json / config.json where the
 * family has eos ids there. Returns each special and plain token's id.
 */
export async function writeFamilyTokenizer(dir: string, family: ChatFamily): Promise<Map<string, number>> {
  await writeTestTokenizer(dir, {
    merges: 150,
    chatTemplate: await chatTemplateText(family),
    specialTokens: family.specialTokens,
    plainTokens: family.plainTokens,
    prependToken: family.prependToken,
    config: {
      bos_token: undefined,
      eos_token: undefined,
      pad_token: undefined,
      unk_token: undefined,
      additional_special_tokens: undefined,
      ...family.tokenizerConfig,
    },
  });
  const ids = new Map([...family.specialTokens, ...(family.plainTokens ?? [])].map((t, id) => [t, id]));
  const idsOf = (tokens: string | string[]) => {
    const list = (Array.isArray(tokens) ? tokens : [tokens]).map((t) => {
      const id = ids.get(t);
      if (id === undefined) throw new Error(`${family.name}: eos token ${t} is not one of its added tokens`);
      return id;
    });
    return Array.isArray(tokens) ? list : list[0];
  };
  if (family.generationConfigEos !== undefined) {
    const json = { eos_token_id: idsOf(family.generationConfigEos) };
    await writeFile(join(dir, "generation_config.json"), `${JSON.stringify(json, null, 2)}\n`);
  }
  if (family.configEos !== undefined) {
    const json = { eos_token_id: idsOf(family.configEos) };
    await writeFile(join(dir, "config.json"), `${JSON.stringify(json, null, 2)}\n`);
  }
  return ids;
}

/** Writes every family's folder as `<root>/<family>` (for chat_template_reference.py). */
export async function writeAllFamilyTokenizers(root: string): Promise<void> {
  for (const family of CHAT_FAMILIES) await writeFamilyTokenizer(join(root, family.name), family);
}
