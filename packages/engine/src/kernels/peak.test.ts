// peakGflops (native/src/peak.h): a positive rate where the table and CPU have
// the kind, null where they do not, and a bad argument refused by name.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { needs } from "../testing/missing-piece.js";
import { loadNativeKernels, type NativeKernels } from "./native.js";

let native: NativeKernels | undefined;
let loadError = "";
try {
  native = loadNativeKernels({ isa: "baseline" });
} catch (err) {
  loadError = (err as Error).message;
}
// Without a C++ toolchain the addon is absent; the portable kernels do not measure a peak.
const skip = native ? false : needs("native kernels", `native addon not built: ${loadError}`);
const isas = native ? native.supportedIsas : [];

function cpuHas(flag: string): boolean {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8").match(/^flags\s*:(.*)$/m);
    return line ? line[1].trim().split(/\s+/).includes(flag) : false;
  } catch {
    return false;
  }
}

describe("native peakGflops", { skip }, () => {
  for (const isa of isas) {
    test(`${isa}: a positive rate or null, as the unit and CPU allow`, () => {
      const kern = loadNativeKernels({ isa });
      assert.ok(kern.peakGflops);
      const fp32 = kern.peakGflops("fp32", 0.05);
      const bf16 = kern.peakGflops("bf16", 0.05);
      // fp32 FMA on the avx2 and AVX-512 units; baseline (SSE2) has no FMA
      if (isa === "baseline") assert.equal(fp32, null);
      else assert.ok(typeof fp32 === "number" && fp32 > 0, `fp32 ${fp32}`);
      // vdpbf16ps only on the AVX-512 units of a CPU with AVX512_BF16; tiles on the amx unit
      if ((isa.startsWith("avx512") || isa === "amx") && cpuHas("avx512_bf16"))
        assert.ok(typeof bf16 === "number" && bf16 > 0, `bf16 ${bf16}`);
      else assert.equal(bf16, null);
    });
  }
  test("refuses a kind or a duration it does not understand, naming the argument", () => {
    const kern = loadNativeKernels({ isa: isas[0] });
    const peak = kern.peakGflops as (kind: unknown, seconds: unknown) => number | null;
    assert.throws(() => peak("fp16", 0.01), /argument 'kind' must be "bf16" or "fp32"/);
    assert.throws(() => peak(32, 0.01), /argument 'kind'/);
    assert.throws(() => peak("fp32", 0), /argument 'seconds' must be in \(0, 60\]/);
    assert.throws(() => peak("fp32", "1"), /argument 'seconds' must be a number/);
  });
});
