// Job detail's Download card: the Hub model or dataset the job is fetching
// before training starts, with a bar for the whole and one per file.
import type { Download } from "../lib/download-progress.js";
import { fraction } from "../lib/download-progress.js";
import { formatBytes } from "../lib/model-facts.js";

export function ProgressBar({ done, total, label }: { done: number; total: number; label: string }) {
  const percent = Math.round(fraction(done, total) * 100);
  return (
    <div
      className="progress"
      role="progressbar"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={percent}
    >
      <div className="progress-fill" style={{ width: `${percent}%` }} />
    </div>
  );
}

export function DownloadProgressCard({ downloads }: { downloads: Download[] }) {
  if (downloads.length === 0) return null;
  return (
    <section className="card" data-testid="download-progress">
      <div className="card-head">
        <h2>Download</h2>
        <span className="muted">from the Hugging Face Hub</span>
      </div>
      {downloads.map((d) => (
        <div key={`${d.kind}:${d.repo}`} className="download" data-repo={d.repo} data-done={d.done}>
          <div className="download-head">
            <span>
              {d.kind} <span className="mono">{d.repo}</span>
              {d.revision && <span className="muted mono"> @ {d.revision.slice(0, 12)}</span>}
            </span>
            <span className="muted" data-testid="download-bytes">
              {d.done
                ? d.fromCache
                  ? `in the cache, ${formatBytes(d.bytesTotal)}`
                  : `downloaded ${formatBytes(d.bytesTotal)}`
                : `${formatBytes(d.bytesDone)} / ${formatBytes(d.bytesTotal)}`}
            </span>
          </div>
          <ProgressBar done={d.bytesDone} total={d.bytesTotal} label={`${d.repo} download`} />
          {d.files.length > 0 && (
            <table className="download-files">
              <tbody>
                {d.files.map((f) => (
                  <tr key={f.name}>
                    <td className="mono download-file-name">{f.name}</td>
                    <td className="download-file-bar">
                      <ProgressBar done={f.bytesDone} total={f.bytesTotal} label={f.name} />
                    </td>
                    <td className="muted download-file-bytes">
                      {formatBytes(f.bytesDone)} / {formatBytes(f.bytesTotal)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      ))}
    </section>
  );
}
