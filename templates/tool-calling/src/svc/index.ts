// The project's trainer: fine-tune the bundled base model to be a shop's
// support assistant that calls tools — lookup_order and create_ticket — and
// answers from their results. `svc start` runs it; `svc dev` shows it in Studio.
import { createSvc, createTrainer } from "svc";

const trainer = createTrainer({
  name: "tool-calling",
  model: "svc/pico-llama",
  dataset: { type: "file", path: "data/train.jsonl" },
  evalDataset: { type: "file", path: "data/eval.jsonl" },
  // The rows hold the tool definitions too: about 450 tokens each, within the model's 512.
  lora: { r: 8, alpha: 16, maxLength: 512 },
  maxSteps: 600,
  batchSize: 8,
  learningRate: 2e-3,
  lrSchedulerType: "cosine",
  warmupSteps: 5,
  evalSteps: 100,
  saveSteps: 200,
  seed: 42,
  callbacks: {
    // Ask each checkpoint to call a tool as soon as it is saved:
    // async onCheckpoint({ step, infer }) {
    //   const { toolCalls } = await infer({
    //     messages: [{ role: "user", content: "Where is my order #A1042?" }],
    //     tools: TOOLS, // the definitions of data/train.jsonl
    //     maxTokens: 48,
    //   });
    //   console.log(`step ${step}:`, toolCalls.map((c) => `${c.function.name}(${c.function.arguments})`));
    // },
  },
});

export default createSvc({ trainer });
