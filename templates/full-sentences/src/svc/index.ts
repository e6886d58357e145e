// The project's trainer: reinforcement fine-tuning (GRPO) of the bundled base
// model on writing prompts. Each step samples 8 replies per prompt, scores them
// and makes the better-scored ones likelier. `svc start` runs it (and the
// reward function below, in its own process); `svc dev` shows the reward
// charts and sampled replies in Studio.
import { createSvc, createTrainer } from "svc";

const trainer = createTrainer({
  name: "full-sentences",
  model: "svc/pico-llama",
  method: "grpo",
  dataset: { type: "file", path: "data/train.jsonl" },
  evalDataset: { type: "file", path: "data/eval.jsonl" },
  // Graders are data, run by the server (docs/graders.md). This one scores 1
  // when the reply ends a sentence (a full stop) within its 16 tokens AND reads
  // as prose (" the " between two words); either check alone is easy to game:
  // with the full stop alone, GRPO soon learns to answer "." and nothing else.
  graders: [
    {
      grader: {
        type: "multi",
        name: "sentence",
        graders: {
          stop: {
            type: "string_check",
            name: "stop",
            operation: "like",
            input: "{{sample.output_text}}",
            reference: ".",
          },
          prose: {
            type: "string_check",
            name: "prose",
            operation: "like",
            input: "{{sample.output_text}}",
            reference: " the ",
          },
        },
        calculate_output: "stop * prose",
      },
      weight: 1,
    },
  ],
  // Rewards are code, run by this process while the job trains: any TypeScript.
  // This one takes half a point from a reply stuck in a loop ("the the the").
  // It is 0 or 1 and almost always 1: GRPO scales each group's rewards by
  // their spread, so a reward that varies a little everywhere would drown the
  // grader's signal in noise.
  rewards: {
    noLoop: ({ completion }) => (/\b(\w+)(\s+\1\b){2,}/i.test(completion) ? 0 : 1),
  },
  rewardWeights: { noLoop: 0.5 },
  lora: { r: 8, alpha: 16 },
  maxSteps: 20,
  batchSize: 4,
  learningRate: 5e-3,
  numGenerations: 8,
  maxCompletionTokens: 16,
  temperature: 1,
  evalSteps: 5,
  saveSteps: 10,
  seed: 6,
});

export default createSvc({ trainer });
