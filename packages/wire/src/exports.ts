// Wire types of exports (/v1/exports): a job's adapter, a checkpoint's or a
// base model written as a PEFT folder, a merged Hugging Face folder or a GGUF
// file with an Ollama Modelfile.
import type { AdapterRef, Iso8601 } from "./common.js";

export type ExportFormat = "peft" | "merged" | "gguf";

/** POST /v1/exports?orgSlug=&projectSlug= → 202 { export } (status "running"); GET /v1/exports/:id until it is "ready" or "failed". */
export interface CreateExportArgs {
  /** What to export: a job's final adapter or a checkpoint (folded into its base model for merged and gguf)… */
  adapter?: AdapterRef;
  /** …or a base model on its own (merged or gguf). */
  baseModel?: string;
  format: ExportFormat;
  /** gguf: "f16" (default), "q8_0", "q4_k_m"; merged: "base" (default: the base model's dtype), "f32", "f16", "bf16". */
  quant?: string;
}

export interface ExportFile {
  path: string;
  bytes: number;
}

/** Where a running export is: loading the model, merging the adapter, writing (done of total tensors or files). */
export interface ExportProgress {
  stage: "queued" | "loading" | "merging" | "writing";
  done: number;
  total: number;
}

export interface ExportInfo {
  id: string;
  /** running until the files are written; failed with `error` (its files removed). */
  status: "running" | "ready" | "failed";
  /** Of a running export as its server process last heard (null once it ended, or from another API process). */
  progress: ExportProgress | null;
  error: { message: string; code: string } | null;
  projectId: string;
  format: ExportFormat;
  quant: string | null;
  /** The job and checkpoint step (null: its final adapter), or null for a base model export. */
  jobId: string | null;
  step: number | null;
  baseModel: string;
  files: ExportFile[];
  /** Where a runtime computes something differently from svc for this export (GGUF: llama.cpp's fixed choices). */
  warnings: string[];
  createdAt: Iso8601;
}
