// The project's trainer: fine-tune the bundled base model to redact names,
// emails and phone numbers. `svc start` runs it; `svc dev` shows it in Studio.
import { createSvc, createTrainer } from "svc";

const trainer = createTrainer({
  name: "pii-redaction",
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
});

export default createSvc({ trainer });
