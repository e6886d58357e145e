// Checks that @huggingface/tokenizers (the library the engine uses) loads a tokenizer
// folder and encodes every case in a cases file exactly as tools/tokenizer/bpe.py does,
// decodes back to the text, and keeps the chat special tokens whole.
//
// Usage: node tools/tokenizer/check_js.mjs <tokenizer folder> <cases.json>
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";

const [folder, casesPath] = process.argv.slice(2);
const tokenizerJson = JSON.parse(readFileSync(join(folder, "tokenizer.json"), "utf8"));
const tokenizerConfig = JSON.parse(readFileSync(join(folder, "tokenizer_config.json"), "utf8"));
const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
const cases = JSON.parse(readFileSync(casesPath, "utf8"));

let mismatches = 0;
for (const { text, ids } of cases) {
  const got = tokenizer.encode(text, { add_special_tokens: false }).ids;
  const same = got.length === ids.length && got.every((id, i) => id === ids[i]);
  const decoded = got.length ? tokenizer.decode(got, { skip_special_tokens: false }) : "";
  if (!same || decoded !== text) {
    mismatches += 1;
    if (mismatches <= 3) {
      const at = got.findIndex((id, i) => id !== ids[i]);
      console.error(`mismatch at token ${at}: ${JSON.stringify(text.slice(0, 80))}`);
      console.error(
        `  js ${got.slice(Math.max(0, at - 3), at + 5)} py ${ids.slice(Math.max(0, at - 3), at + 5)}`,
      );
    }
  }
}

const chat = new Template(tokenizerConfig.chat_template).render({
  messages: [
    { role: "user", content: "Define: harbor" },
    { role: "assistant", content: "a sheltered port" },
  ],
  add_generation_prompt: true,
});
const expected =
  "<|im_start|>user\nDefine: harbor<|im_end|>\n<|im_start|>assistant\na sheltered port<|im_end|>\n<|im_start|>assistant\n";
const chatIds = tokenizer.encode(chat, { add_special_tokens: false }).ids;
const specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"].map((t) => tokenizer.token_to_id(t));
const chatOk =
  chat === expected && chatIds[0] === specials[1] && chatIds.filter((id) => id === specials[2]).length === 2;

console.log(
  JSON.stringify({
    cases: cases.length,
    mismatches,
    specials,
    chatTemplateOk: chatOk,
    chatIds: chatIds.length,
  }),
);
process.exit(mismatches === 0 && chatOk ? 0 : 1);
