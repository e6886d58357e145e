import assert from "node:assert/strict";
import { test } from "node:test";
import { formatBackend, formatMemory, runtimeOfLog } from "./training-runtime.js";

test("a torch log's backend, device and memory; an engine log reports none", () => {
  const gpu = runtimeOfLog({
    step: 3,
    loss: 1,
    backend: "torch",
    device: "cuda x4",
    memoryBytes: 21_500_000_000,
  });
  assert.deepEqual(gpu, { backend: "torch", device: "cuda x4", memoryBytes: 21_500_000_000 });
  assert.equal(formatBackend("torch", gpu, true), "torch · cuda x4");
  assert.deepEqual(formatMemory(gpu), { label: "GPU memory", value: "21.5 GB" });

  const cpu = runtimeOfLog({ step: 1, backend: "torch", device: "cpu", memoryBytes: 350_000_000 });
  assert.deepEqual(formatMemory(cpu), { label: "Memory (peak RSS)", value: "350 MB" });

  assert.equal(runtimeOfLog({ step: 1, loss: 2 }), null);
  assert.equal(formatBackend("auto", null, false), "auto (any worker)");
  assert.equal(
    formatBackend("auto", null, true),
    "engine",
    "an auto job that logged steps without a runtime",
  );
  assert.equal(formatBackend("torch", null, false), "torch");
  assert.equal(formatMemory(null), null);
});
