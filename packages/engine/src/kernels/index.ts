// Kernel selection: the native addon when it loads, else the portable kernels.
// SVC_KERNELS=native|portable forces one (native forced but unavailable throws);
// SVC_KERNELS_ISA picks the instruction set within the chosen implementation.
import { loadNativeKernels } from "./native.js";
import { loadPortableKernels } from "./portable.js";
import type { Kernels } from "./types.js";

export { loadNativeKernels, NATIVE_ISAS, type NativeKernelOptions, type NativeKernels } from "./native.js";
export { loadPortableKernels, type PortableKernelOptions } from "./portable.js";
export { referenceKernels } from "./reference.js";
export type { Kernels } from "./types.js";

let selected: Kernels | undefined;

function chooseKernels(): Kernels {
  const want = process.env.SVC_KERNELS ?? "auto";
  if (want === "native") return loadNativeKernels();
  if (want === "portable") return loadPortableKernels();
  if (want !== "auto" && want !== "") {
    throw new Error(`SVC_KERNELS must be "native", "portable" or "auto", got "${want}"`);
  }
  try {
    return loadNativeKernels();
  } catch {
    return loadPortableKernels();
  }
}

/** The kernels every engine computation uses (chosen once per process). */
export function getKernels(): Kernels {
  selected ??= chooseKernels();
  return selected;
}
