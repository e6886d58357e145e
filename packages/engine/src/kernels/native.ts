// Loads the native kernels addon (packages/engine/native, built by
// scripts/build-native.mjs) and binds it to one instruction set.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { checkQuantMatrix } from "./quant-matrix.js";
import { type Kernels, QUANT_FORMAT_CODES } from "./types.js";

type KernelMethods = Omit<Kernels, "name" | "isa" | "matmulQuant" | "matmulQuantTrain" | "packB">;

/** The addon's matmulQuant: the QuantMatrix's fields as arguments (the addon checks them). */
type AddonMatmulQuant = (
  format: number,
  x: Float32Array,
  data: Uint16Array | Int8Array | Uint8Array,
  scales: Float32Array | Uint16Array | null,
  y: Float32Array,
  m: number,
  n: number,
  k: number,
  accumulate: boolean,
  alpha?: number,
) => void;

/** The addon's matmulQuantTrain: as matmulQuant, with transW before accumulate. */
type AddonMatmulQuantTrain = (
  format: number,
  x: Float32Array,
  data: Uint16Array | Int8Array | Uint8Array,
  scales: Float32Array | Uint16Array | null,
  y: Float32Array,
  m: number,
  n: number,
  k: number,
  transW: boolean,
  accumulate: boolean,
  alpha?: number,
  a2?: Float32Array,
  b2?: Float32Array,
  k2?: number,
  transB2?: boolean,
  alpha2?: number,
  bf16?: boolean,
) => void;

interface NativeAddon {
  /** The ISAs this CPU runs, best first ("amx", "avx512vnni", "avx512", "avx2", "baseline"). */
  readonly supportedIsas: string[];
  /** Threads in the addon's worker pool (calling thread included). */
  readonly threads: number;
  create(isa: string): KernelMethods & {
    readonly isa: string;
    readonly matmulQuant: AddonMatmulQuant;
    readonly matmulQuantTrain: AddonMatmulQuantTrain;
    readonly quantInt8MaxRows: number;
    readonly bf16Dot: boolean;
    /** The floats packB writes for op(b) [k, n]. */
    packedBFloats(k: number, n: number): number;
    packB(b: Float32Array, k: number, n: number, transB: boolean, out: Float32Array): void;
  };
  /** n zeroed floats on a 64-byte boundary (memory the addon owns). */
  zeroedFloats(n: number): Float32Array<ArrayBuffer>;
}

export interface NativeKernels extends Kernels {
  readonly name: "native";
  zeroedFloats(n: number): Float32Array<ArrayBuffer>;
  packB(b: Float32Array, k: number, n: number, transB: boolean): Float32Array<ArrayBuffer>;
  /** Threads the native pool uses (SVC_THREADS caps it). */
  readonly threads: number;
  /** Every ISA this CPU can run with this addon, best first. */
  readonly supportedIsas: readonly string[];
}

export interface NativeKernelOptions {
  /** "amx", "avx512vnni", "avx512", "avx2" or "baseline"; default SVC_KERNELS_ISA, else the best the CPU supports. */
  isa?: string;
  /** The .node file; default SVC_KERNELS_ADDON, else native/build/Release/svc_kernels.node. */
  addonPath?: string;
}

export const NATIVE_ISAS = ["amx", "avx512vnni", "avx512", "avx2", "baseline"] as const;

export const defaultAddonPath = fileURLToPath(
  new URL("../../../native/build/Release/svc_kernels.node", import.meta.url),
);

const require = createRequire(import.meta.url);

/** The native kernels; throws an Error saying why when the addon cannot be used. */
export function loadNativeKernels(options: NativeKernelOptions = {}): NativeKernels {
  const path = options.addonPath ?? process.env.SVC_KERNELS_ADDON ?? defaultAddonPath;
  let addon: NativeAddon;
  try {
    addon = require(path) as NativeAddon;
  } catch (err) {
    throw new Error(
      `native kernels unavailable: cannot load ${path} (${(err as Error).message.split("\n")[0]}); ` +
        "build it with `node packages/engine/scripts/build-native.mjs` or use SVC_KERNELS=portable",
    );
  }
  const isa = options.isa ?? (process.env.SVC_KERNELS_ISA || addon.supportedIsas[0]);
  if (!addon.supportedIsas.includes(isa)) {
    throw new Error(
      `native kernels: ISA "${isa}" is not available on this machine (available: ${addon.supportedIsas.join(", ")})`,
    );
  }
  const methods = addon.create(isa);
  const {
    matmulQuant: quant,
    matmulQuantTrain: quantTrain,
    quantInt8MaxRows,
    bf16Dot,
    packedBFloats,
    packB,
    ...rest
  } = methods;
  return {
    ...rest,
    packB(b, k, n, transB) {
      const out = addon.zeroedFloats(packedBFloats(k, n));
      packB(b, k, n, transB, out);
      return out;
    },
    matmulQuant(x, w, y, m, accumulate, alpha) {
      checkQuantMatrix(w);
      const code = QUANT_FORMAT_CODES[w.format];
      quant(code, x, w.data, w.scales, y, m, w.rows, w.cols, accumulate, alpha);
    },
    matmulQuantTrain(x, w, y, m, transW, accumulate, alpha, lowRank, bf16) {
      checkQuantMatrix(w, "matmulQuantTrain");
      const code = QUANT_FORMAT_CODES[w.format];
      quantTrain(
        code,
        x,
        w.data,
        w.scales,
        y,
        m,
        w.rows,
        w.cols,
        transW,
        accumulate,
        alpha,
        lowRank?.a,
        lowRank?.b,
        lowRank?.k,
        lowRank?.transB,
        lowRank?.alpha,
        bf16,
      );
    },
    name: "native",
    isa: methods.isa,
    quantInt8MaxRows,
    bf16Dot,
    zeroedFloats: addon.zeroedFloats,
    threads: addon.threads,
    supportedIsas: [...addon.supportedIsas],
  };
}
