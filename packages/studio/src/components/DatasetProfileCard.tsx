// Job detail's Dataset card: the training dataset's profile for the job's base
// model and maxLength (GET /api/jobs/:id/profile), a small histogram of row
// lengths with the maxLength line, and the figures behind it. While the server
// computes the profile the card shows its progress and asks again each second.
import type { Answer, DatasetProfile, ReadyDatasetProfile, TokenLengths } from "@svc/wire";
import { useEffect, useState } from "react";
import { errorMessage, getJson } from "../api.js";
import { histogramLayout } from "../lib/dataset-histogram.js";
import { TRAIN_COLOR } from "./LossChart.js";

const W = 720;
const H = 110;
const AXIS = 18;
const OVER_COLOR = "#d97706";
const POLL_MS = 1000;

const lengths = (t: TokenLengths) => `p50 ${t.p50} · p95 ${t.p95} · max ${t.max}`;
const rows = (n: number) => `${n} row${n === 1 ? "" : "s"}`;

function Histogram({ profile }: { profile: ReadyDatasetProfile }) {
  const { bars, markerX, markerBeyond } = histogramLayout(profile.histogram, profile.maxLength, {
    width: W,
    height: H,
  });
  const first = profile.histogram[0];
  const last = profile.histogram[profile.histogram.length - 1];
  return (
    <svg
      className="chart-svg"
      viewBox={`0 0 ${W} ${H + AXIS}`}
      role="img"
      aria-label="Rows by length in tokens"
      data-testid="profile-histogram"
      style={{ cursor: "default" }}
    >
      {bars.map((b) => (
        <rect
          key={b.x}
          x={b.x}
          y={b.y}
          width={b.width}
          height={b.height}
          fill={b.over ? OVER_COLOR : TRAIN_COLOR}
          data-testid="profile-bar"
          data-rows={b.rows}
          data-over={b.over}
        >
          <title>{b.label}</title>
        </rect>
      ))}
      <line x1={0} x2={W} y1={H + 0.5} y2={H + 0.5} stroke="currentColor" strokeOpacity={0.3} />
      {first && (
        <text x={0} y={H + 14} fontSize={11} fill="currentColor" opacity={0.7}>
          {first.from}
        </text>
      )}
      {last && (
        <text x={W} y={H + 14} fontSize={11} fill="currentColor" opacity={0.7} textAnchor="end">
          {last.to === null ? `${last.from}+` : last.to} tokens
        </text>
      )}
      {markerX !== null && (
        <g data-testid="profile-max-length" data-x={markerX}>
          <line
            x1={markerX}
            x2={markerX}
            y1={0}
            y2={H}
            stroke="currentColor"
            strokeDasharray="4 3"
            strokeWidth={markerBeyond ? 2 : 1.5}
          />
          <text
            x={markerX > W / 2 ? markerX - 4 : markerX + 4}
            y={11}
            fontSize={11}
            fill="currentColor"
            textAnchor={markerX > W / 2 ? "end" : "start"}
          >
            maxLength {profile.maxLength}
            {markerBeyond ? " (all rows fit)" : ""}
          </text>
        </g>
      )}
    </svg>
  );
}

function Summary({ profile: p }: { profile: ReadyDatasetProfile }) {
  const roles = (["system", "user", "assistant", "tool"] as const)
    .filter((r) => p.roles[r] > 0)
    .map((r) => `${p.roles[r]} ${r}`)
    .join(" · ");
  const turns = Object.entries(p.turns)
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([n, count]) => `${n}: ${rows(count)}`)
    .join(" · ");
  const s = p.suggestedMaxLength;
  return (
    <dl className="meta" data-testid="profile-summary" style={{ marginTop: 10 }}>
      <dt>Prompt tokens</dt>
      <dd data-testid="profile-prompt">{lengths(p.tokens.prompt)}</dd>
      <dt>Answer tokens</dt>
      <dd data-testid="profile-answer">{lengths(p.tokens.answer)}</dd>
      <dt>Over maxLength {p.maxLength}</dt>
      <dd data-testid="profile-over">{rows(p.overMaxLength)}</dd>
      <dt>Suggested maxLength</dt>
      <dd data-testid="profile-suggestion">
        {s.maxLength}
        <span className="muted">
          {s.cappedAtContext
            ? ` (the model's context; ${rows(s.rowsOver)} longer)`
            : " (holds 95% of rows in full and every answer)"}
        </span>
      </dd>
      <dt>Duplicates</dt>
      <dd data-testid="profile-duplicates">
        {p.duplicates.rows === 0
          ? "none"
          : `${rows(p.duplicates.rows)} (first: row ${p.duplicates.first[0].row} repeats row ${p.duplicates.first[0].duplicateOf})`}
      </dd>
      <dt>Messages</dt>
      <dd>{roles}</dd>
      <dt>Assistant turns</dt>
      <dd>{turns}</dd>
    </dl>
  );
}

export function DatasetProfileCard({ jobId }: { jobId: string }) {
  const [profile, setProfile] = useState<DatasetProfile | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const r = await getJson<Answer<"getDatasetProfile">>(
          `/api/jobs/${encodeURIComponent(jobId)}/profile`,
        );
        if (stopped) return;
        setProfile(r.profile);
        setError(null);
        if (r.profile.status === "pending") timer = setTimeout(load, POLL_MS);
      } catch (e) {
        if (!stopped) setError(errorMessage(e));
      }
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [jobId]);

  return (
    <section className="card" data-testid="dataset-profile" data-status={profile?.status ?? "loading"}>
      <div className="card-head">
        <h2>Dataset</h2>
        {profile?.status === "ready" && (
          <span className="muted" data-testid="profile-rows">
            {rows(profile.rows)} · {profile.tokens.sum} tokens ({profile.baseModel})
          </span>
        )}
      </div>
      {error !== null && <div className="muted">Dataset profile unavailable: {error}</div>}
      {profile?.status === "pending" && (
        <div className="muted" data-testid="profile-pending">
          Profiling the dataset… {Math.round(profile.progress * 100)}%
        </div>
      )}
      {profile?.status === "failed" && (
        <div className="muted" data-testid="profile-failed">
          The dataset could not be profiled: {profile.error}
        </div>
      )}
      {profile?.status === "ready" && (
        <>
          <Histogram profile={profile} />
          <Summary profile={profile} />
        </>
      )}
    </section>
  );
}
