// The project's trainer: fine-tune the bundled base model to triage support
// tickets into JSON. `svc start` runs it; `svc dev` shows it in Studio.
import { createSvc, createTrainer } from "svc";

const trainer = createTrainer({
  name: "ticket-triage",
  model: "svc/pico-llama",
  dataset: { type: "file", path: "data/train.jsonl" },
  evalDataset: { type: "file", path: "data/eval.jsonl" },
  lora: { r: 8, alpha: 16, maxLength: 256 },
  maxSteps: 600,
  batchSize: 8,
  learningRate: 2e-3,
  lrSchedulerType: "cosine",
  warmupSteps: 5,
  evalSteps: 50,
  saveSteps: 200,
  seed: 42,
  callbacks: {
    // Chat with each checkpoint as soon as it is saved:
    // async onCheckpoint({ step, infer }) {
    //   const { text } = await infer({ messages: [{ role: "user", content: "My invoice is wrong." }], maxTokens: 24 });
    //   console.log(`step ${step}: ${text}`);
    // },
  },
});

export default createSvc({ trainer });
