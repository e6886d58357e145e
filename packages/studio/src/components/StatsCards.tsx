// The Advanced cards: per series mean ± 95% CI half-width, sample sd and
// variance, p90 and p95. The task metrics' cards (fractions) appear once their
// series has a point.
import type { LossSeries } from "../lib/loss-series.js";
import { seriesStats } from "../lib/stats.js";
import { EVAL_COLOR, TRAIN_COLOR } from "./LossChart.js";
import { EXACT_MATCH_COLOR, TOKEN_ACCURACY_COLOR } from "./TaskMetricsChart.js";

const f = (v: number) => (Number.isFinite(v) ? v.toPrecision(5) : "—");

function Card({
  title,
  color,
  values,
  testId,
}: {
  title: string;
  color: string;
  values: number[];
  testId: string;
}) {
  const s = seriesStats(values);
  return (
    <div className="stats-card" data-testid={testId}>
      <div className="stats-title">
        <span className="dot" style={{ background: color }} />
        {title}
        {s && <span className="muted"> · n = {s.n}</span>}
      </div>
      {s ? (
        <dl className="stats-grid">
          <dt>mean ± 95% CI</dt>
          <dd data-testid={`${testId}-mean`}>
            {f(s.mean)} ± {f(s.ci95)}
          </dd>
          <dt>std dev</dt>
          <dd>{f(s.sd)}</dd>
          <dt>variance</dt>
          <dd>{f(s.variance)}</dd>
          <dt>p90</dt>
          <dd>{f(s.p90)}</dd>
          <dt>p95</dt>
          <dd>{f(s.p95)}</dd>
        </dl>
      ) : (
        <div className="muted stats-empty">No points yet</div>
      )}
    </div>
  );
}

export function StatsCards({ series }: { series: LossSeries }) {
  return (
    <div className="stats-cards">
      <Card
        title="Training loss"
        color={TRAIN_COLOR}
        values={series.train.map((p) => p.value)}
        testId="stats-train"
      />
      <Card
        title="Eval loss"
        color={EVAL_COLOR}
        values={series.eval.map((p) => p.value)}
        testId="stats-eval"
      />
      {series.tokenAccuracy.length > 0 && (
        <Card
          title="Eval token accuracy"
          color={TOKEN_ACCURACY_COLOR}
          values={series.tokenAccuracy.map((p) => p.value)}
          testId="stats-token-accuracy"
        />
      )}
      {series.exactMatch.length > 0 && (
        <Card
          title="Eval exact match"
          color={EXACT_MATCH_COLOR}
          values={series.exactMatch.map((p) => p.value)}
          testId="stats-exact-match"
        />
      )}
    </div>
  );
}
