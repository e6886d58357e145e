// Kernel selection. The kernels helper replaces the body with: native addon when
// it loads, else the portable kernels; SVC_KERNELS=native|portable forces one.
import { referenceKernels } from "./reference.js";
import type { Kernels } from "./types.js";

export type { Kernels } from "./types.js";

let selected: Kernels | undefined;

/** The kernels every engine computation uses (chosen once per process). */
export function getKernels(): Kernels {
  selected ??= referenceKernels;
  return selected;
}
