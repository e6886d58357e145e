// Why a test or suite is skipped, in one form: `needs <piece>: <detail>`.
// Node prints the reason after `# SKIP`; `npm test` (scripts/test.mjs) reads
// the skips of a run back from its reporter, counts them by piece in its
// closing summary, and under CI fails the run when a piece that .ci/install
// enabled (the keys it wrote to .ci/enabled) was skipped anyway.

/** Everything a test may find missing; .ci/enabled names them exactly as written here. */
export const MISSING_PIECES = [
  "llama.cpp package",
  "transformers/peft",
  "huggingface_hub",
  "tensorboard",
  "openai (Python)",
  "torch",
  "torch 1.x",
  "torch ≥ 2.7",
  "Chromium",
  "native kernels",
  "g++",
  "WebAssembly kernels",
  "the script command",
  "models/pico-llama",
  "free ports 4100 and 4200",
  "a machine without CUDA",
] as const;

export type MissingPiece = (typeof MISSING_PIECES)[number];

/** The skip reason for a test that cannot run without `piece`; `detail` says what exactly is absent. */
export function needs(piece: MissingPiece, detail: string): string {
  return `needs ${piece}: ${detail}`;
}

/** The piece a skip reason names (as needs() wrote it), else null. */
export function missingPieceOf(reason: string): { piece: string; detail: string } | null {
  for (const piece of MISSING_PIECES) {
    const prefix = `needs ${piece}: `;
    if (reason.startsWith(prefix)) return { piece, detail: reason.slice(prefix.length) };
  }
  return null;
}
