// A model svc's engine does not implement, for the transformers + peft
// fallback's tests: a tiny random GPT-2 (under 1 MB) written by transformers'
// own save_pretrained, with the engine's test tokenizer (tokenizer.json and a
// ChatML template) and the hyperparameters its jobs train with.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeTestTokenizer } from "@svc/engine/testing";

/**
 * Writes the model folder `dir`: the tokenizer, then a random GPT-2 of its
 * vocabulary (no dropout, so losses compare exactly); returns its parameter
 * count as torch counts it (the tied head once).
 */
export async function writeTinyGpt2(python: string, dir: string): Promise<{ parameters: number }> {
  const { vocabSize } = await writeTestTokenizer(dir, { merges: 40 });
  const made = spawnSync(
    python,
    [
      "-c",
      `import sys, torch, transformers
torch.manual_seed(0)
# ids 1 and 2: <|im_start|> and <|im_end|> of the test tokenizer
config = transformers.GPT2Config(vocab_size=int(sys.argv[2]), n_embd=32, n_layer=2, n_head=2, n_positions=128,
    attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0, bos_token_id=1, eos_token_id=2)
model = transformers.GPT2LMHeadModel(config)
model.save_pretrained(sys.argv[1])
print(sum(p.numel() for p in model.parameters()))`,
      dir,
      String(vocabSize),
    ],
    { encoding: "utf8" },
  );
  assert.equal(made.status, 0, made.stderr);
  return { parameters: Number(made.stdout.trim().split("\n").at(-1)) };
}

/** A job's hyperparameters on it: four steps, checkpoints at 2 and 4, an eval at the end. */
export const GPT2_JOB_HYPERPARAMETERS = {
  lora: { r: 4, alpha: 8 },
  maxSteps: 4,
  batchSize: 2,
  saveSteps: 2,
  evalSteps: 4,
  learningRate: 2e-2,
  torchModel: "transformers",
} as const;
