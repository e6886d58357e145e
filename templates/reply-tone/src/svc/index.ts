// The project's trainer: preference-tune (DPO) the bundled base model to answer
// customers courteously and about what they wrote. Each row of data/train.jsonl
// pairs a preferred reply with a dispreferred one (curt, or about another item).
// `svc start` runs it; `svc dev` shows its charts in Studio.
import { createSvc, createTrainer } from "svc";

const trainer = createTrainer({
  name: "reply-tone",
  model: "svc/pico-llama",
  method: "dpo",
  dataset: { type: "file", path: "data/train.jsonl" },
  evalDataset: { type: "file", path: "data/eval.jsonl" },
  lora: { r: 8, alpha: 16, maxLength: 128 },
  maxSteps: 60,
  batchSize: 4,
  learningRate: 3e-3,
  // How far the tuned model may move from the base (docs/post-training.md#hyperparameters).
  beta: 0.1,
  evalSteps: 10,
  saveSteps: 30,
  seed: 42,
  // Start from an SFT job's adapter instead of the base model:
  // startAdapter: { kind: "final", jobId: "<the SFT job's id>" },
});

export default createSvc({ trainer });
