// The portable kernels: what runs when the native addon is absent. WebAssembly
// SIMD when its module was built (it needs clang at build time), else plain JS.
import { jsKernels } from "./portable-js.js";
import { loadWasmKernels } from "./portable-wasm.js";
import type { Kernels } from "./types.js";
import { withValidation } from "./validate.js";

export const PORTABLE_ISAS = ["wasm-simd", "js"] as const;

export interface PortableKernelOptions {
  /** "wasm-simd" or "js"; default SVC_KERNELS_ISA when it names one of them, else the best available. */
  isa?: string;
  /** The .wasm module; default native/build/wasm/svc_kernels.wasm. */
  wasmPath?: string;
}

export function loadPortableKernels(options: PortableKernelOptions = {}): Kernels {
  const env = process.env.SVC_KERNELS_ISA;
  const isa = options.isa ?? (env && (PORTABLE_ISAS as readonly string[]).includes(env) ? env : undefined);
  if (isa !== undefined && !(PORTABLE_ISAS as readonly string[]).includes(isa)) {
    throw new Error(`portable kernels: ISA "${isa}" is not one of ${PORTABLE_ISAS.join(", ")}`);
  }
  if (isa === "js") return withValidation(jsKernels);
  try {
    return withValidation(loadWasmKernels(options.wasmPath));
  } catch (err) {
    if (isa === "wasm-simd") {
      throw new Error(`portable kernels: the WebAssembly module is unavailable (${(err as Error).message})`);
    }
    return withValidation(jsKernels);
  }
}
