// Export a finished job's adapter from its page: GGUF (llama.cpp, Ollama), a
// merged Hugging Face folder (transformers, vLLM) or the PEFT adapter, written
// by the cloud API, each file then saved through the browser.
import type { Answer, ExportFormat, ExportInfo } from "@svc/wire";
import { useState } from "react";
import { errorMessage, getJson, sendJson, studioFetch } from "../api.js";
import { ErrorText } from "./common.js";

const QUANTS: Record<ExportFormat, string[]> = {
  gguf: ["f16", "q8_0", "q4_k_m"],
  merged: ["base", "f32", "f16", "bf16"],
  peft: [],
};

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

async function save(jobId: string, info: ExportInfo, file: string): Promise<void> {
  const path = `/api/jobs/${encodeURIComponent(jobId)}/exports/${encodeURIComponent(info.id)}/${encodeURIComponent(file)}`;
  const blob = await (await studioFetch(path)).blob();
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = file;
  link.click();
  URL.revokeObjectURL(link.href);
}

export function ExportCard({ jobId }: { jobId: string }) {
  const [format, setFormat] = useState<ExportFormat>("gguf");
  const [quant, setQuant] = useState("q8_0");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ExportInfo | null>(null);
  const [running, setRunning] = useState<ExportInfo | null>(null);
  const [error, setError] = useState<string | null>(null);

  const choose = (next: ExportFormat) => {
    setFormat(next);
    setQuant(QUANTS[next][next === "gguf" ? 1 : 0] ?? "");
  };
  const base = `/api/jobs/${encodeURIComponent(jobId)}/exports`;
  const run = async () => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      let info = (
        await sendJson<Answer<"createExport">>("POST", base, { format, ...(quant ? { quant } : {}) })
      ).export;
      // the cloud API exports in the background: follow it until its files are written
      while (info.status === "running") {
        setRunning(info);
        await new Promise((resolve) => setTimeout(resolve, 500));
        info = (await getJson<Answer<"getExport">>(`${base}/${encodeURIComponent(info.id)}`)).export;
      }
      if (info.status === "failed") setError(info.error?.message ?? "the export failed");
      else setResult(info);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setRunning(null);
      setBusy(false);
    }
  };

  return (
    <section className="card" data-testid="export-card">
      <div className="card-head">
        <h2>Export</h2>
      </div>
      <div className="export-form">
        <select
          className="input"
          aria-label="Export format"
          value={format}
          onChange={(e) => choose(e.target.value as ExportFormat)}
        >
          <option value="gguf">GGUF (llama.cpp, Ollama)</option>
          <option value="merged">Merged (transformers, vLLM)</option>
          <option value="peft">PEFT adapter</option>
        </select>
        {QUANTS[format].length > 0 && (
          <select
            className="input"
            aria-label="Precision"
            value={quant}
            onChange={(e) => setQuant(e.target.value)}
          >
            {QUANTS[format].map((q) => (
              <option key={q} value={q}>
                {q}
              </option>
            ))}
          </select>
        )}
        <button type="button" className="btn" onClick={run} disabled={busy}>
          {busy ? "Exporting…" : "Export"}
        </button>
      </div>
      {running?.progress && (
        <div className="muted" data-testid="export-progress">
          {running.progress.stage} {running.progress.done}/{running.progress.total}
        </div>
      )}
      <ErrorText message={error} />
      {result && (
        <ul className="export-files" data-testid="export-files">
          {result.files.map((f) => (
            <li key={f.path}>
              <button
                type="button"
                className="btn btn-small btn-ghost"
                onClick={() => save(jobId, result, f.path).catch((e) => setError(errorMessage(e)))}
              >
                {f.path}
              </button>{" "}
              <span className="muted">{mib(f.bytes)}</span>
            </li>
          ))}
          {result.warnings.map((w) => (
            <li key={w} className="muted">
              {w}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
