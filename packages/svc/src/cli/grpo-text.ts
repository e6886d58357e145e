// What svc start and svc jobs print of a GRPO job beyond SFT's figures: each
// step's rewards by name, and why svc paused a job itself.
import { type JobEvent, SCORER_GONE_REASON } from "@svc/wire";
import { formatNumber as mean } from "./progress.js";

/** A GRPO step's mean reward, then each reward's own mean under its name, then an eval's: ` reward=0.5000 says_color=0.2500 length=3.0000 evalReward=0.6250`. */
export function grpoRewardsText(e: Extract<JobEvent, { type: "training.log" }>): string {
  if (!e.grpo) return "";
  const parts = [`reward=${mean(e.grpo.reward)}`];
  for (const [name, value] of Object.entries(e.grpo.rewards)) parts.push(`${name}=${mean(value)}`);
  // the eval set's mean reward, at the steps an eval ran
  if (e.evalGrpo) parts.push(`evalReward=${mean(e.evalGrpo.reward)}`);
  return parts.map((part) => ` ${part}`).join("");
}

/** Why svc paused a job itself (Job.pausedReason, training.paused's reason), and what resumes it. */
export function pausedReasonText(reason: string, jobId: string): string {
  if (reason === SCORER_GONE_REASON)
    return `its trainer's scorer is gone (svc start --attach ${jobId} resumes it)`;
  return reason;
}
