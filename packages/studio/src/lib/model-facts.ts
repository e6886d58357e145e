// How a base model from GET /v1/models reads in the pickers: parameters and
// bytes in short units, and whether its files are on the server's machine.
import { type BaseModelInfo, type ModelPull, TRANSFORMERS_ONLY_FAMILY } from "@svc/wire";

/** 135_000_000 → "135M", 1_540_000_000 → "1.5B", 4_200 → "4.2K". */
export function formatCount(n: number): string {
  const units: [number, string][] = [
    [1e12, "T"],
    [1e9, "B"],
    [1e6, "M"],
    [1e3, "K"],
  ];
  for (const [size, unit] of units) {
    if (n >= size) {
      const v = n / size;
      return `${v >= 100 ? Math.round(v) : Number(v.toFixed(1))}${unit}`;
    }
  }
  return String(n);
}

/** Bytes in decimal units, as the Hub shows file sizes: 1_234_567 → "1.2 MB". */
export function formatBytes(n: number): string {
  const units: [number, string][] = [
    [1e12, "TB"],
    [1e9, "GB"],
    [1e6, "MB"],
    [1e3, "kB"],
  ];
  for (const [size, unit] of units) if (n >= size) return `${Number((n / size).toFixed(1))} ${unit}`;
  return `${n} B`;
}

export interface ModelBadge {
  text: string;
  tone: "on" | "off" | "neutral";
  title: string;
}

/** The badge next to a model: bundled, local folder, cached Hub model, or one the server would download. */
export function modelBadge(
  m: Partial<Pick<BaseModelInfo, "source" | "cached" | "revision" | "sizeBytes">>,
): ModelBadge | null {
  const size = m.sizeBytes ? `, ${formatBytes(m.sizeBytes)}` : "";
  if (m.source === "bundled") return { text: "bundled", tone: "on", title: `Ships with svc${size}` };
  if (m.source === "local")
    return { text: "local", tone: "on", title: `A folder the server was given${size}` };
  if (m.cached === true)
    return {
      text: "cached",
      tone: "on",
      title: `In the Hugging Face cache${m.revision ? ` at ${m.revision.slice(0, 12)}` : ""}${size}`,
    };
  if (m.cached === false)
    return {
      text: "not downloaded",
      tone: "off",
      title: "Not in the server's Hugging Face cache: Download fetches it (a job on it fetches it too)",
    };
  return null;
}

/** "llama · 1.2M params · 2,048 ctx": the facts a picker row shows. */
export function modelFacts(m: Pick<BaseModelInfo, "family" | "parameters" | "contextLength">): string {
  return `${m.family} · ${formatCount(m.parameters)} params · ${m.contextLength.toLocaleString("en-US")} ctx`;
}

/** The models whose name holds `query` (case-insensitive), all of them for an empty query. */
export function filterModels<T extends { name: string }>(models: readonly T[], query: string): T[] {
  const q = query.trim().toLowerCase();
  return q ? models.filter((m) => m.name.toLowerCase().includes(q)) : [...models];
}

/** A Hub id as the server takes it: `org/name`, optionally `@revision`. */
export function looksLikeHubId(text: string): boolean {
  return /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*(@[\w.\-/]+)?$/.test(text.trim());
}

/** A pull's line under its bar: "12.3 kB / 69.4 kB · 2 of 4 files", "in the cache, 69.4 kB", "downloaded 69.4 kB". */
export function pullSummary(
  p: Pick<ModelPull, "status" | "bytesDone" | "bytesTotal" | "files" | "fromCache">,
): string {
  if (p.status === "completed")
    return p.fromCache
      ? `in the cache, ${formatBytes(p.bytesTotal)}`
      : `downloaded ${formatBytes(p.bytesTotal)}`;
  if (p.bytesTotal === 0) return "asking the Hub…";
  const finished = p.files.filter((f) => f.bytesTotal > 0 && f.bytesDone >= f.bytesTotal).length;
  return `${formatBytes(p.bytesDone)} / ${formatBytes(p.bytesTotal)} · ${finished} of ${p.files.length} files`;
}

/** Whether svc can serve the model: not one only transformers computes (trained on the torch backend only). */
export function isServable(m: Pick<BaseModelInfo, "family">): boolean {
  return m.family !== TRANSFORMERS_ONLY_FAMILY;
}

/** Why a model cannot be picked to serve. */
export function trainOnlyReason(m: Pick<BaseModelInfo, "architecture">): string {
  return `svc's engine does not implement ${m.architecture}, so it cannot serve this model; it trains on the PyTorch backend with transformers (a job's backend "torch" and torchModel "transformers").`;
}
