// Deployment targets: the list summary text (spec's three forms) and the
// create/edit form's conversion to the wire shape.
import type { DeploymentTarget } from "@svc/wire";

export type TargetFormKind = "final" | "checkpoint" | "base_model";

export interface TargetForm {
  kind: TargetFormKind;
  jobId: string;
  step: string;
  baseModel: string;
}

const shortJob = (jobId: string) => jobId.slice(0, 8);

export function targetSummary(target: DeploymentTarget): string {
  if (target.kind === "base_model") return `Base model: ${target.baseModel}`;
  const a = target.adapter;
  if (a.kind === "checkpoint") return `Checkpoint step ${a.step} (job ${shortJob(a.jobId)})`;
  return `Final adapter (job ${shortJob(a.jobId)})`;
}

/** The wire target for a form, or the message naming the field that is wrong. */
export function targetFromForm(form: TargetForm): { target: DeploymentTarget } | { error: string } {
  if (form.kind === "base_model") {
    const baseModel = form.baseModel.trim();
    if (!baseModel) return { error: "Base model name is required" };
    return { target: { kind: "base_model", baseModel } };
  }
  const jobId = form.jobId.trim();
  if (!jobId) return { error: "Job UUID is required" };
  if (form.kind === "final") return { target: { kind: "adapter", adapter: { kind: "final", jobId } } };
  const step = Number(form.step.trim());
  if (!form.step.trim() || !Number.isInteger(step) || step < 0)
    return { error: "Step must be a whole number" };
  return { target: { kind: "adapter", adapter: { kind: "checkpoint", jobId, step } } };
}

export function formFromTarget(target: DeploymentTarget): TargetForm {
  if (target.kind === "base_model")
    return { kind: "base_model", jobId: "", step: "", baseModel: target.baseModel };
  const a = target.adapter;
  return {
    kind: a.kind,
    jobId: a.jobId,
    step: a.kind === "checkpoint" ? String(a.step) : "",
    baseModel: "",
  };
}
