// Target inputs shared by the create form and the target editor: job UUID,
// job UUID + step, or base model name (picked from the server's models or typed as a Hub id).
import type { TargetForm } from "../lib/targets.js";
import { BaseModelPicker } from "./BaseModelPicker.js";

export function TargetFields({ form, onChange }: { form: TargetForm; onChange: (f: TargetForm) => void }) {
  return (
    <div className="target-fields">
      <label className="field">
        <span>Target</span>
        <select
          className="input"
          value={form.kind}
          onChange={(e) => onChange({ ...form, kind: e.target.value as TargetForm["kind"] })}
          data-testid="target-kind"
        >
          <option value="final">Final adapter of a job</option>
          <option value="checkpoint">Checkpoint of a job</option>
          <option value="base_model">Base model</option>
        </select>
      </label>
      {form.kind !== "base_model" && (
        <label className="field">
          <span>Job UUID</span>
          <input
            className="input mono"
            type="text"
            value={form.jobId}
            placeholder="00000000-0000-0000-0000-000000000000"
            onChange={(e) => onChange({ ...form, jobId: e.target.value })}
            data-testid="target-job"
          />
        </label>
      )}
      {form.kind === "checkpoint" && (
        <label className="field field-narrow">
          <span>Step</span>
          <input
            className="input"
            type="number"
            min="0"
            value={form.step}
            onChange={(e) => onChange({ ...form, step: e.target.value })}
            data-testid="target-step"
          />
        </label>
      )}
      {form.kind === "base_model" && (
        <div className="field">
          <span>Base model</span>
          <BaseModelPicker
            value={form.baseModel}
            onChange={(baseModel) => onChange({ ...form, baseModel })}
            testId="target-base"
          />
        </div>
      )}
    </div>
  );
}
