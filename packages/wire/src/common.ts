// The leaf types every part of the wire shares (timestamps, errors, adapters,
// artifacts): one file the others import, so no two wire files import each other.

export type Iso8601 = string;

/** Every error body of the cloud API and of Studio's /api. */
export interface ErrorBody {
  error: { message: string; code: string };
}

export type AdapterRef =
  | { kind: "final"; jobId: string }
  | { kind: "checkpoint"; jobId: string; step: number };

export interface Artifact {
  /** "final", "checkpoint-<step>" or "tensorboard" (the job's TensorBoard event file, docs/tensorboard.md). */
  name: string;
  kind: "final" | "checkpoint" | "tensorboard";
  /** The adapter's step; for "tensorboard", the last step the file holds. */
  step: number;
  files: { path: string; bytes: number }[];
  createdAt: Iso8601;
}
