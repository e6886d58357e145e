// Job detail: live status, failure banner, loss chart (and a DPO job's
// preference accuracy and rewards charts; a GRPO job's rewards and health
// charts and its Samples panel) with the Advanced statistics, the
// event log, and a Metadata sidebar (artifact count).
import type { Answer, Job } from "@svc/wire";
import { useEffect, useState } from "react";
import { errorMessage, getJson, sendJson } from "../api.js";
import { ErrorText, StatusBadge, shortId } from "../components/common.js";
import { DatasetProfileCard } from "../components/DatasetProfileCard.js";
import { DownloadProgressCard } from "../components/DownloadProgressCard.js";
import { EventLog } from "../components/EventLog.js";
import { ExportCard } from "../components/ExportCard.js";
import { GrpoHealthChart, GrpoRewardsChart } from "../components/GrpoCharts.js";
import { GrpoSamples } from "../components/GrpoSamples.js";
import { LossChart } from "../components/LossChart.js";
import { PreferenceRewardsChart } from "../components/PreferenceRewardsChart.js";
import { StatsCards } from "../components/StatsCards.js";
import { TaskMetricsChart } from "../components/TaskMetricsChart.js";
import { useJobEvents } from "../components/useJobEvents.js";
import { formatPrecision } from "../lib/training-precision.js";
import { formatBackend, formatMemory } from "../lib/training-runtime.js";

export function JobDetail({ jobId }: { jobId: string }) {
  const ev = useJobEvents(jobId);
  const [job, setJob] = useState<Job | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [advanced, setAdvanced] = useState(false);
  const [cancelling, setCancelling] = useState(false);
  // The GRPO step the Samples panel shows; null follows the latest.
  const [grpoStep, setGrpoStep] = useState<number | null>(null);

  // Read again as the job moves on: the resolved revision of a Hub base model is set once it is downloaded.
  // biome-ignore lint/correctness/useExhaustiveDependencies: ev.status is the trigger, not an input
  useEffect(() => {
    getJson<Answer<"getJob">>(`/api/jobs/${encodeURIComponent(jobId)}`)
      .then((r) => setJob(r.job))
      .catch((e) => setError(errorMessage(e)));
  }, [jobId, ev.status]);

  const status = ev.status ?? job?.status ?? null;
  // The live stream's latest start is newer than the job read at the last status change.
  const attempt = ev.attempt ?? job?.attempt ?? 1;
  const restartedAfter = ev.attempt !== null ? ev.restartedAfter : (job?.restartedAfter ?? null);
  const cancel = async () => {
    setCancelling(true);
    try {
      const r = await sendJson<Answer<"cancelJob">>("POST", `/api/jobs/${encodeURIComponent(jobId)}/cancel`);
      setJob(r.job);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setCancelling(false);
    }
  };

  return (
    <div className="page">
      <div className="page-head">
        <div>
          <a href="#/jobs" className="crumb">
            Jobs
          </a>
          <h1>
            {job?.name ?? shortId(jobId)} {status && <StatusBadge status={status} />}
          </h1>
        </div>
        {(status === "running" || status === "queued") && (
          <button type="button" className="btn btn-danger" onClick={cancel} disabled={cancelling}>
            Cancel
          </button>
        )}
      </div>
      <ErrorText message={error} />
      {ev.interrupted && (
        <div className="banner banner-warn" data-testid="stream-banner">
          Event stream interrupted.
        </div>
      )}
      <div className="detail-grid">
        <div className="detail-main">
          {ev.failure && (
            <div className="banner banner-error" data-testid="failure-banner">
              {ev.failure}
            </div>
          )}
          {status === "queued" && job?.queuedReason && (
            <div className="banner banner-warn" data-testid="queued-reason">
              Waiting: {job.queuedReason}
            </div>
          )}
          {status === "paused" && job?.pausedReason === "scorer_gone" && (
            <div className="banner banner-warn" data-testid="paused-reason">
              Paused: its trainer's scorer is gone. Run <code>svc start --attach {job.id}</code> in the
              project to score it again; it resumes.
            </div>
          )}
          <DownloadProgressCard downloads={ev.downloads} />
          <section className="card">
            <div className="card-head">
              <h2>Loss</h2>
              <label className="toggle">
                <input type="checkbox" checked={advanced} onChange={(e) => setAdvanced(e.target.checked)} />
                Advanced
              </label>
            </div>
            <LossChart series={ev.series} fileName={`loss-${shortId(jobId)}`} />
            <TaskMetricsChart series={ev.series} />
            <PreferenceRewardsChart series={ev.series} />
            {advanced && <StatsCards series={ev.series} />}
          </section>
          {ev.grpo.length > 0 && (
            <section className="card" data-testid="grpo-charts">
              <div className="card-head">
                <h2>Rewards</h2>
              </div>
              <GrpoRewardsChart steps={ev.grpo} />
              <GrpoHealthChart steps={ev.grpo} />
            </section>
          )}
          <GrpoSamples steps={ev.grpo} picked={grpoStep} onPick={setGrpoStep} />
          {status === "completed" && <ExportCard jobId={jobId} />}
          <DatasetProfileCard jobId={jobId} />
          <section className="card">
            <div className="card-head">
              <h2>Events</h2>
              <span className="muted">last 500</span>
            </div>
            <EventLog entries={ev.log} />
          </section>
        </div>
        <aside className="card sidebar" data-testid="metadata">
          <h2>Metadata</h2>
          <dl className="meta">
            <dt>ID</dt>
            <dd className="mono">{jobId}</dd>
            <dt>Status</dt>
            <dd>{status ?? "—"}</dd>
            {job && (
              <>
                <dt>Base model</dt>
                <dd>
                  {job.baseModel}
                  {job.baseModelRevision && (
                    <div className="muted mono" title={job.baseModelRevision}>
                      @ {job.baseModelRevision.slice(0, 12)}
                    </div>
                  )}
                </dd>
                <dt>Method</dt>
                <dd data-testid="method">
                  {job.method === "dpo"
                    ? "DPO (preference pairs)"
                    : job.method === "grpo"
                      ? "GRPO (rewards)"
                      : "SFT (supervised fine-tuning)"}
                </dd>
                <dt>Backend</dt>
                <dd data-testid="backend">{formatBackend(job.backend, ev.runtime, ev.lastStep !== null)}</dd>
                <dt>Precision</dt>
                <dd data-testid="precision">
                  {formatPrecision(job.precision, job.baseWeights, ev.precision)}
                </dd>
                {formatMemory(ev.runtime) && (
                  <>
                    <dt>{formatMemory(ev.runtime)?.label}</dt>
                    <dd data-testid="memory">{formatMemory(ev.runtime)?.value}</dd>
                  </>
                )}
                <dt>Created</dt>
                <dd>{new Date(job.createdAt).toLocaleString()}</dd>
              </>
            )}
            {attempt > 1 && (
              <>
                <dt>Attempt</dt>
                <dd data-testid="attempt" title={restartedAfter ?? undefined}>
                  {attempt}
                  {restartedAfter && <div className="muted">restarted after: {restartedAfter}</div>}
                </dd>
              </>
            )}
            {ev.lastStep !== null && (
              <>
                <dt>Step</dt>
                <dd>
                  {ev.lastStep}
                  {ev.totalSteps ? ` / ${ev.totalSteps}` : ""}
                </dd>
              </>
            )}
            <dt>Artifacts</dt>
            <dd data-testid="artifact-count">{ev.artifacts ?? "—"}</dd>
          </dl>
        </aside>
      </div>
    </div>
  );
}
