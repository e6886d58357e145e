import assert from "node:assert/strict";
import { test } from "node:test";
import { formFromTarget, targetFromForm, targetSummary } from "./targets.js";

const JOB = "3f2b9c1a-7d4e-4f6a-9b1c-2d3e4f5a6b7c";

test("list summaries use the spec's three forms", () => {
  assert.equal(
    targetSummary({ kind: "adapter", adapter: { kind: "final", jobId: JOB } }),
    "Final adapter (job 3f2b9c1a)",
  );
  assert.equal(
    targetSummary({ kind: "adapter", adapter: { kind: "checkpoint", jobId: JOB, step: 40 } }),
    "Checkpoint step 40 (job 3f2b9c1a)",
  );
  assert.equal(
    targetSummary({ kind: "base_model", baseModel: "svc/pico-llama" }),
    "Base model: svc/pico-llama",
  );
});

test("form to wire target, with errors naming the field", () => {
  const base = { jobId: "", step: "", baseModel: "" };
  assert.deepEqual(targetFromForm({ ...base, kind: "final", jobId: ` ${JOB} ` }), {
    target: { kind: "adapter", adapter: { kind: "final", jobId: JOB } },
  });
  assert.deepEqual(targetFromForm({ ...base, kind: "checkpoint", jobId: JOB, step: "20" }), {
    target: { kind: "adapter", adapter: { kind: "checkpoint", jobId: JOB, step: 20 } },
  });
  assert.deepEqual(targetFromForm({ ...base, kind: "base_model", baseModel: "svc/pico-llama" }), {
    target: { kind: "base_model", baseModel: "svc/pico-llama" },
  });
  assert.deepEqual(targetFromForm({ ...base, kind: "final" }), { error: "Job UUID is required" });
  assert.deepEqual(targetFromForm({ ...base, kind: "checkpoint", jobId: JOB, step: "2.5" }), {
    error: "Step must be a whole number",
  });
  assert.deepEqual(targetFromForm({ ...base, kind: "base_model" }), { error: "Base model name is required" });
});

test("formFromTarget round-trips", () => {
  const t = { kind: "adapter" as const, adapter: { kind: "checkpoint" as const, jobId: JOB, step: 7 } };
  assert.deepEqual(targetFromForm(formFromTarget(t)), { target: t });
});
