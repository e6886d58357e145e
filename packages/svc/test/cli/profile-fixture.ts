// The dataset and trainer the dataset-profile tests share (svc start's lines,
// Studio's Dataset card), so both check the same hand-computed figures. The
// test model's tokenizer has one token per byte and ChatML: a row with a user
// content of N bytes and an answer of M is 20 + N prompt and M + 1 answer tokens.
import { TEST_MODEL } from "./harness.js";

const x = (n: number) => "x".repeat(n);
const chat = (user: string, answer: string) =>
  JSON.stringify({
    messages: [
      { role: "user", content: user },
      { role: "assistant", content: answer },
    ],
  });

/** (prompt, answer, total) tokens: 22/2/24 three times (two repeats), 30/6/36, 120/51/171, 25/201/226. */
export const PROFILE_ROWS = [
  chat("ab", "x"),
  chat("ab", "x"),
  JSON.stringify({ prompt: "ab", completion: "x" }),
  chat(x(10), x(5)),
  chat(x(100), x(50)),
  JSON.stringify({ prompt: x(5), completion: x(200) }),
].join("\n");

/** A trainer on the test model with maxLength 64 and the dataset at data/train.jsonl. */
export const PROFILE_TRAINER = `import { createSvc, createTrainer } from "svc";

const trainer = createTrainer({
  name: "profiled",
  model: "${TEST_MODEL}" as "svc/pico-llama",
  dataset: { type: "file", path: "data/train.jsonl" },
  maxSteps: 2,
  batchSize: 2,
  lora: { r: 4, alpha: 8, maxLength: 64 },
});

export default createSvc({ trainer });
`;
