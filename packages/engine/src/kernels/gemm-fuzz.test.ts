// The GEMM fuzz (fuzz.ts) on every implementation this machine has: each native
// ISA the CPU runs, the wasm module when it was built, and the JS kernels.
// SVC_FUZZ_CASES (default 4000), SVC_FUZZ_SEED (default 1) and SVC_FUZZ_KERNELS
// (native or portable: only those) change what runs; a failure names its seed
// and case, which replay alone.
import assert from "node:assert/strict";
import { test } from "node:test";
import { conformanceFailure } from "../testing/kernels/conformance.js";
import { quantTrainFuzzCases } from "../testing/kernels/conformance-quant-train.js";
import { fuzzKernels } from "../testing/kernels/fuzz.js";
import { loadNativeKernels } from "./native.js";
import { loadPortableKernels } from "./portable.js";
import type { Kernels } from "./types.js";

const count = Number(process.env.SVC_FUZZ_CASES || 4000);
const seed = Number(process.env.SVC_FUZZ_SEED || 1);
const only = process.env.SVC_FUZZ_KERNELS || "";

const impls: { label: string; kernels: Kernels }[] = [];
const missing: string[] = [];
if (only !== "portable") {
  try {
    for (const isa of loadNativeKernels({ isa: "baseline" }).supportedIsas)
      impls.push({ label: `native ${isa}`, kernels: loadNativeKernels({ isa }) });
  } catch (err) {
    missing.push(`native: ${(err as Error).message}`);
  }
}
if (only !== "native") {
  try {
    impls.push({ label: "portable wasm-simd", kernels: loadPortableKernels({ isa: "wasm-simd" }) });
  } catch (err) {
    missing.push(`wasm-simd: ${(err as Error).message}`);
  }
  impls.push({ label: "portable js", kernels: loadPortableKernels({ isa: "js" }) });
}

test(`matmul and attentionForward on ${count} fuzzed shapes (seed ${seed}) match the reference`, async (t) => {
  for (const m of missing) t.diagnostic(`not fuzzed: ${m}`);
  assert.ok(impls.length > 0, "no implementation to fuzz");
  const start = performance.now();
  const { failures, worst } = fuzzKernels(impls, { seed, count });
  const seconds = ((performance.now() - start) / 1000).toFixed(1);
  t.diagnostic(
    `${count} shapes (seed ${seed}) checked on each of ${impls.map((i) => i.label).join(", ")} in ${seconds} s`,
  );
  for (const { label } of impls) {
    await t.test(label, () => {
      const list = failures.get(label)!;
      assert.equal(list.length, 0, list.map((f) => f.message).join("\n"));
      t.diagnostic(`${label}: largest relative error ${worst.get(label)!.toExponential(2)}`);
    });
  }
});

// The frozen-weight training products (bf16 and int8 weights, both
// orientations) on fewer shapes: the reference's bound check is O(m·n·k).
const quantCount = Math.max(1, Math.round(count / 40));
test(`matmulQuantTrain on ${quantCount} fuzzed shapes (seed ${seed}) matches the reference`, async (t) => {
  const cases = quantTrainFuzzCases(seed, quantCount);
  for (const { label, kernels } of impls) {
    await t.test(label, () => {
      const failures = cases.map((c) => conformanceFailure(kernels, c)).filter((f) => f !== null);
      assert.equal(failures.length, 0, failures.join("\n"));
    });
  }
});
