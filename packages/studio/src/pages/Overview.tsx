// Overview: the project's single trainer and the Run training action. The log
// box shows exactly what `svc start` prints; once the job id is known the live
// loss chart of that run appears next to it.
import { type Answer, JOB_ID_HEADER, type Job, type StudioManifestBody } from "@svc/wire";
import { useEffect, useRef, useState } from "react";
import { errorMessage, getJson, IDENTITY_CHANGED_EVENT, studioFetch } from "../api.js";
import { StatusBadge, shortId } from "../components/common.js";
import { LossChart } from "../components/LossChart.js";
import { TaskMetricsChart } from "../components/TaskMetricsChart.js";
import { useJobEvents } from "../components/useJobEvents.js";
import { jobIdFromOutput, terminalText } from "../lib/terminal-text.js";

export const NO_TRAINER_TEXT =
  "No trainer in src/svc/index.ts yet. Add createTrainer(...) and pass it to createSvc.";

type Manifest =
  | { state: "loading" }
  | { state: "ok"; name: string }
  | { state: "none" }
  | { state: "error"; message: string };

function useManifest(): Manifest {
  const [m, setM] = useState<Manifest>({ state: "loading" });
  useEffect(() => {
    getJson<StudioManifestBody>("/api/manifest")
      .then((r) => setM(r.trainer ? { state: "ok", name: r.trainer.name } : { state: "none" }))
      .catch((e) => setM({ state: "error", message: errorMessage(e) }));
  }, []);
  return m;
}

function RunLog({ text }: { text: string }) {
  const ref = useRef<HTMLPreElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: scroll to the bottom whenever the text grows
  useEffect(() => {
    const el = ref.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [text]);
  return (
    <pre ref={ref} className="run-log" data-testid="run-log">
      {text || <span className="muted">Output of svc start appears here.</span>}
    </pre>
  );
}

function LiveRun({ jobId }: { jobId: string }) {
  const ev = useJobEvents(jobId);
  return (
    <section className="card">
      <div className="card-head">
        <h2>
          Live run{" "}
          <a href={`#/jobs/${jobId}`} className="mono">
            {shortId(jobId)}
          </a>
        </h2>
        {ev.status && <StatusBadge status={ev.status} />}
      </div>
      {ev.failure && <div className="banner banner-error">{ev.failure}</div>}
      <LossChart series={ev.series} fileName={`loss-${shortId(jobId)}`} />
      <TaskMetricsChart series={ev.series} />
    </section>
  );
}

function RecentJobs({ refreshKey }: { refreshKey: string | null }) {
  const [jobs, setJobs] = useState<Job[] | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: reload when a new run starts
  useEffect(() => {
    getJson<Answer<"listJobs">>("/api/jobs")
      .then((r) => setJobs(r.jobs.slice(0, 5)))
      .catch(() => setJobs([]));
  }, [refreshKey]);
  if (!jobs || jobs.length === 0) return null;
  return (
    <section className="card card-flush">
      <div className="card-head card-head-pad">
        <h2>Recent jobs</h2>
        <a href="#/jobs">All jobs →</a>
      </div>
      <table className="table">
        <tbody>
          {jobs.map((j) => (
            <tr key={j.id}>
              <td>
                <StatusBadge status={j.status} />
              </td>
              <td>
                <a href={`#/jobs/${j.id}`}>{j.name}</a>
              </td>
              <td className="muted">{new Date(j.createdAt).toLocaleString()}</td>
              <td className="mono muted">{shortId(j.id)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function Overview() {
  const manifest = useManifest();
  const [running, setRunning] = useState(false);
  const [output, setOutput] = useState("");
  const [jobId, setJobId] = useState<string | null>(null);
  const [exitNote, setExitNote] = useState<string | null>(null);

  const run = async () => {
    setRunning(true);
    setOutput("");
    setJobId(null);
    setExitNote(null);
    let raw = "";
    try {
      const res = await studioFetch("/api/train", { method: "POST" });
      const headerId = res.headers.get(JOB_ID_HEADER);
      if (headerId) setJobId(headerId);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        raw += value;
        setOutput(terminalText(raw));
        if (!headerId) {
          const found = jobIdFromOutput(raw);
          if (found) setJobId(found);
        }
      }
    } catch (e) {
      setExitNote(errorMessage(e));
    } finally {
      setRunning(false);
      window.dispatchEvent(new Event(IDENTITY_CHANGED_EVENT));
    }
  };

  const label = manifest.state === "ok" ? `Run training: ${manifest.name}` : "Run training";
  return (
    <div className="page">
      <div className="page-head">
        <h1>Overview</h1>
      </div>
      <section className="card">
        <div className="card-head">
          <h2>Training</h2>
          <button
            type="button"
            className="btn btn-primary"
            data-testid="run-training"
            disabled={running || manifest.state !== "ok"}
            onClick={run}
          >
            {running ? <span className="spinner" aria-hidden="true" /> : null}
            {label}
          </button>
        </div>
        {manifest.state === "loading" && <p className="muted">Reading the project manifest…</p>}
        {manifest.state === "none" && (
          <p className="notice" data-testid="manifest-message">
            {NO_TRAINER_TEXT}
          </p>
        )}
        {manifest.state === "error" && (
          <p className="notice notice-error" data-testid="manifest-message">
            Couldn't read manifest: {manifest.message}
          </p>
        )}
        {manifest.state === "ok" && (
          <p className="muted">
            Runs <code>svc start</code> in the project folder. Reload the page to pick up edits to{" "}
            <code>src/svc/index.ts</code>.
          </p>
        )}
        <RunLog text={output} />
        {exitNote && <div className="error-text">{exitNote}</div>}
      </section>
      {jobId && <LiveRun key={jobId} jobId={jobId} />}
      <RecentJobs refreshKey={`${jobId}-${running}`} />
    </div>
  );
}
