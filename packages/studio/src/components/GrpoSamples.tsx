// A GRPO job's Samples panel: the completions the engine sampled at one logged
// step (the latest unless another step is picked here), each with
// its combined reward, advantage and each reward's score. Text is rendered as
// React text (escaped, never HTML); a long completion is clipped with an expand.
import { useState } from "react";
import { clipCompletion, type GrpoSample, type GrpoStep } from "../lib/grpo-series.js";

const fmt = (v: number) => `${v > 0 ? "+" : ""}${v.toFixed(3)}`;

function SampleRow({ sample }: { sample: GrpoSample }) {
  const [open, setOpen] = useState(false);
  const clip = clipCompletion(sample.completion);
  return (
    <li className="grpo-sample" data-testid="grpo-sample">
      <div className="grpo-sample-scores">
        <span>row {sample.rowNumber}</span>
        <span data-testid="grpo-sample-reward">reward {fmt(sample.reward)}</span>
        <span className="muted">advantage {fmt(sample.advantage)}</span>
        {Object.entries(sample.rewards).map(([name, v]) => (
          <span key={name} className="muted">
            {name} {fmt(v)}
          </span>
        ))}
      </div>
      <pre className="grpo-sample-text" data-testid="grpo-sample-text">
        {open ? sample.completion : clip.text}
      </pre>
      {clip.clipped && (
        <button type="button" className="btn btn-ghost btn-small" onClick={() => setOpen(!open)}>
          {open ? "Show less" : "Show all"}
        </button>
      )}
    </li>
  );
}

export function GrpoSamples({
  steps,
  picked,
  onPick,
}: {
  steps: GrpoStep[];
  picked: number | null;
  onPick(step: number | null): void;
}) {
  if (steps.length === 0) return null;
  const shown = steps.find((s) => s.step === picked) ?? steps[steps.length - 1];
  return (
    <section className="card" data-testid="grpo-samples">
      <div className="card-head">
        <h2>Samples</h2>
        <label className="toggle">
          step{" "}
          <select
            value={shown.step}
            data-testid="grpo-samples-step"
            onChange={(e) => {
              const step = Number(e.target.value);
              onPick(step === steps[steps.length - 1].step ? null : step);
            }}
          >
            {steps.map((s) => (
              <option key={s.step} value={s.step}>
                {s.step}
              </option>
            ))}
          </select>
        </label>
      </div>
      {shown.samples.length === 0 ? (
        <p className="muted">No completions were sampled for the log at this step.</p>
      ) : (
        <ol className="grpo-samples" data-step={shown.step}>
          {shown.samples.map((s, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a step's samples are fixed and may repeat a row
            <SampleRow key={`${shown.step}-${i}`} sample={s} />
          ))}
        </ol>
      )}
    </section>
  );
}
