// In a GRPO job's training process: the scorer of the job's trainer rewards
// (docs/post-training.md#rewards-in-typescript). It runs no user code: it asks
// the job runner (this process's parent) for a step's scores with a "score"
// message, and the runner gets them from the trainer's process through the
// API (worker/reward-scoring.ts). The trainer's own error (a reward function
// threw or returned NaN, naming the row and reward) fails the step (the
// engine adds the step); a stop (pause, cancel, shutdown) while waiting rejects.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { GrpoScoreItem, GrpoScorer } from "@svc/engine";
import type { ChatMessage, JobReward, ScoringItem } from "@svc/wire";
import type { GraderScorer } from "./training-grpo.js";
import { postToRunner, type ScoreReply } from "./training-protocol.js";

const pending = new Map<number, { resolve: (rewards: number[][]) => void; reject: (e: Error) => void }>();
let nextId = 1;
let listening = false;

function listen(): void {
  if (listening) return;
  listening = true;
  process.on("message", (reply: ScoreReply) => {
    if (reply?.type !== "scores" && reply?.type !== "scoreFailed") return;
    const waiting = pending.get(reply.id);
    pending.delete(reply.id);
    if (!waiting) return;
    if (reply.type === "scores") waiting.resolve(reply.rewards);
    else waiting.reject(new Error(reply.message));
  });
}

/** The text of the prompt's last user message, as reward functions read `prompt`. */
function promptText(messages: ChatMessage[]): string {
  const last = [...messages].reverse().find((m) => m.role === "user");
  const content = last?.content as unknown;
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
  return "";
}

export const scoringItem = (item: GrpoScoreItem): ScoringItem => ({
  rowNumber: item.rowNumber,
  row: item.row,
  messages: item.row.messages,
  prompt: promptText(item.row.messages),
  completion: item.completion,
  ...(item.set ? { set: item.set } : {}),
});

/** The step a run resumed from a checkpoint folder had trained (its trainer_state.json), 0 from the start. */
export function resumedStep(resumeFrom: string | null): number {
  if (!resumeFrom) return 0;
  return (JSON.parse(readFileSync(join(resumeFrom, "trainer_state.json"), "utf8")) as { global_step: number })
    .global_step;
}

/** Scores with the trainer's rewards, through the runner; `step()` is the step being scored (1-based). */
export function trainerScorer(
  rewards: readonly JobReward[],
  signal: AbortSignal,
  step: () => number,
): GraderScorer {
  listen();
  const rewardNames = rewards.map((r) => r.name);
  const score: GrpoScorer = (batch) => {
    const id = nextId++;
    return new Promise<number[][]>((resolve, reject) => {
      const stopped = () => {
        pending.delete(id);
        reject(new Error("the job was stopped while waiting for its trainer's scores"));
      };
      if (signal.aborted) return stopped();
      signal.addEventListener("abort", stopped, { once: true });
      const done =
        <T>(f: (v: T) => void) =>
        (v: T) => {
          signal.removeEventListener("abort", stopped);
          f(v);
        };
      pending.set(id, { resolve: done(resolve), reject: done(reject) });
      void postToRunner({
        type: "score",
        id,
        step: step(),
        rewardNames,
        items: batch.map(scoringItem),
      });
    });
  };
  return { score, rewardNames, rewardWeights: rewards.map((r) => r.weight ?? 1) };
}

/** Graders' rewards then the trainer's, for each completion, as one scorer (names must not repeat). */
export function combinedScorer(graders: GraderScorer | null, trainer: GraderScorer | null): GraderScorer {
  const parts = [graders, trainer].filter((p): p is GraderScorer => p !== null);
  if (parts.length === 1) return parts[0];
  return {
    rewardNames: parts.flatMap((p) => p.rewardNames),
    rewardWeights: parts.flatMap((p) => p.rewardWeights),
    score: async (batch) => {
      // The graders first: a grader that cannot grade fails the step before the trainer is asked.
      const lists: number[][][] = [];
      for (const p of parts) lists.push(await p.score(batch));
      return batch.map((_, i) => lists.flatMap((l) => l[i]));
    },
  };
}
