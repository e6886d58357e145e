// llama.cpp as a peer for tests and benchmarks (never the product): the
// node-llama-cpp package installed in bench/llama-cpp (CPU build only), loaded
// from there by path. Null when that folder has not been installed.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { GgmlTypeName } from "../export/gguf-file.js";
import { decode, encode } from "../export/gguf-quant.js";
import type { ModelWeights } from "../graph/weights.js";
import { needs } from "./missing-piece.js";

/** The repository root, from packages/engine/dist/src/testing/. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "..");
export const LLAMA_CPP_PACKAGE = join(ROOT, "bench", "llama-cpp", "node_modules", "node-llama-cpp");
/** A test's skip reason where the peer is not installed, else false. */
export const LLAMA_CPP_SKIP: string | false = existsSync(LLAMA_CPP_PACKAGE)
  ? false
  : needs(
      "llama.cpp package",
      `${LLAMA_CPP_PACKAGE} is absent (npm install --prefix bench/llama-cpp --no-save --omit=optional --ignore-scripts, as .ci/install does)`,
    );

export interface LlamaCppPeer {
  /** Logits after each of `ids` (row-major [ids.length, vocab]). */
  logits(ids: number[]): Promise<Float32Array>;
  /** Greedy continuation of `ids` by llama.cpp's own logits. */
  greedy(ids: number[], steps: number): Promise<number[]>;
  /** llama.cpp's tokenization of `text`, special tokens written in the text parsed as such. */
  tokenize(text: string): number[];
  /** The GGUF metadata as node-llama-cpp reads it. */
  metadata: Record<string, unknown>;
  dispose(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: node-llama-cpp is loaded by path and has no types here
type Any = any;

let llamaOnce: Promise<Any> | null = null;

export async function openLlamaCpp(ggufFile: string, vocabSize: number): Promise<LlamaCppPeer | null> {
  if (!existsSync(LLAMA_CPP_PACKAGE)) return null;
  const lib: Any = await import(pathToFileURL(join(LLAMA_CPP_PACKAGE, "dist", "index.js")).href);
  llamaOnce ??= lib.getLlama({ gpu: false, build: "never", logLevel: "error" });
  const llama = await llamaOnce;
  const model = await llama.loadModel({ modelPath: ggufFile });
  const evaluate = async (ids: number[], all: boolean): Promise<Float32Array[]> => {
    const context = await model.createContext({ contextSize: 128, batchSize: 128, threads: 2 });
    try {
      const items = ids.map((t, i) =>
        all || i === ids.length - 1 ? [t, { generateNext: { logits: true } }] : t,
      );
      const results: Any[] = await context.getSequence().controlledEvaluate(items);
      return results.filter(Boolean).map((r) => {
        const row = new Float32Array(vocabSize);
        for (const [token, value] of r.next.logits as Map<number, number>) row[token] = value;
        return row;
      });
    } finally {
      await context.dispose();
    }
  };
  return {
    metadata: model.fileInfo.metadata,
    tokenize: (text) => [...model.tokenize(text, true)],
    async logits(ids) {
      const rows = await evaluate(ids, true);
      const out = new Float32Array(ids.length * vocabSize);
      for (const [i, row] of rows.entries()) out.set(row, i * vocabSize);
      return out;
    },
    async greedy(ids, steps) {
      const seq = [...ids];
      for (let s = 0; s < steps; s++) {
        const [row] = await evaluate(seq, false);
        seq.push(argmax(row));
      }
      return seq.slice(ids.length);
    },
    dispose: () => model.dispose(),
  };
}

export function argmax(row: ArrayLike<number>, from = 0, to = row.length): number {
  let best = from;
  for (let i = from + 1; i < to; i++) if (row[i] > row[best]) best = i;
  return best - from;
}

/** The weights as a GGUF of `type` holds them: every matrix encoded and decoded again, the norms as they are. */
export function weightsAs(type: GgmlTypeName, w: ModelWeights): ModelWeights {
  const stored = (a: Float32Array) => decode(type, encode(type, a), a.length);
  const embed = stored(w.embed);
  return {
    embed,
    lmHead: w.lmHead === w.embed ? embed : stored(w.lmHead),
    finalNorm: w.finalNorm,
    layers: w.layers.map((l) => ({
      ...l,
      q: stored(l.q),
      k: stored(l.k),
      v: stored(l.v),
      o: stored(l.o),
      gate: stored(l.gate),
      up: stored(l.up),
      down: stored(l.down),
    })),
  };
}
