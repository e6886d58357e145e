// Runs one training job on the torch backend, in a child process of the job
// runner like the engine's training process (training-process.ts), speaking
// the same IPC messages: the datasets and model are read and fitted by the
// engine (training-sets.ts), then PyTorch trains in packages/trainer-torch,
// one Python process per data-parallel rank, started like torchrun (env://
// rendezvous on 127.0.0.1). Rank 0's JSON-lines events become this process's
// messages; an abort (or SIGTERM) is a cancel command to every rank, which
// checkpoints at the last full step. Python exits when this process goes away
// (its stdin closes). Methods "dpo" and "grpo" run in one Python process; for
// GRPO this process also answers Python's score requests (torch-grpo.ts).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { ExactMatchRow, Tokenizer } from "@svc/engine";
import { exitWithParent } from "../process/engine-process.js";
import { readTorchGrpoSet, type TorchScoreRequest, torchScorer } from "./torch-grpo.js";
import {
  exactMatchScore,
  type TorchJobOptions,
  TRAINER_TORCH_DIR,
  writeTorchGrpoJob,
  writeTorchJob,
  writeTorchPreferenceJob,
} from "./torch-job.js";
import { torchPrecision } from "./torch-launch.js";
import { combinedScorer, trainerScorer } from "./trainer-rewards.js";
import { graderScorer } from "./training-grpo.js";
import { trainingJudge } from "./training-judge.js";
import {
  postToRunner as post,
  type TorchLaunch,
  type TrainingProcessMessage,
  trainingInput,
} from "./training-protocol.js";
import { readPreferenceTrainingSets, readTrainingSetsForTorch, torchModelHeader } from "./training-sets.js";

exitWithParent();
const ranks: ChildProcess[] = [];
let cancelled = false;
// Aborted on a cancel: a GRPO step waiting for its trainer's rewards stops waiting (trainer-rewards.ts).
const stopped = new AbortController();
// The GRPO step being scored (svc_trainer's score request names it), for the trainer's rewards.
let scoringStep = 0;
const cancel = () => {
  cancelled = true;
  for (const rank of ranks) rank.stdin?.write(`${JSON.stringify({ type: "cancel" })}\n`);
  stopped.abort();
};
const input = await trainingInput(cancel);

/** A free TCP port on loopback for the ranks' rendezvous. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** One rank of the job: `python3 -m svc_trainer` with torchrun's environment when there are several. */
function startRank(
  launch: TorchLaunch,
  jobFile: string,
  rank: number,
  port: number,
  world: number,
): ChildProcess {
  const child = spawn(
    launch.python,
    ["-m", "svc_trainer", "--input", jobFile, "--device", launch.device, "--stdin-commands"],
    {
      cwd: TRAINER_TORCH_DIR,
      env: {
        ...process.env,
        PYTHONPATH: TRAINER_TORCH_DIR,
        PYTHONUNBUFFERED: "1",
        ...(world > 1
          ? {
              RANK: String(rank),
              LOCAL_RANK: String(rank),
              WORLD_SIZE: String(world),
              MASTER_ADDR: "127.0.0.1",
              MASTER_PORT: String(port),
            }
          : {}),
      },
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  // A cancel written after a rank exited is an EPIPE on its stdin: nothing to do.
  child.stdin?.on("error", () => {});
  if (cancelled) child.stdin?.write(`${JSON.stringify({ type: "cancel" })}\n`);
  return child;
}

/** Resolves null when the rank exits 0, else how it ended; a failed rank takes the others down with it. */
function rankExit(child: ChildProcess, python: string): Promise<string | null> {
  return new Promise((resolve) => {
    child.once("error", (error) => resolve(`could not start ${python} (${error.message})`));
    child.once("close", (code, signal) => {
      if (code === 0) return resolve(null);
      // The others would wait in a collective for it: stop them (the job resumes from its checkpoint).
      for (const other of ranks) if (other !== child && other.exitCode === null) other.kill("SIGKILL");
      resolve(`exited with ${signal ? `signal ${signal}` : `code ${code}`}`);
    });
  });
}

/** Python's greedy answers of the exact-match sample (exactMatchIds) become evalExactMatch here. */
function withExactMatch(
  progress: Extract<TrainingProcessMessage, { type: "progress" }>["progress"] & {
    exactMatchIds?: number[][];
  },
  rows: ExactMatchRow[] | null,
  tokenizer: Tokenizer,
) {
  const { exactMatchIds, ...rest } = progress;
  const score = exactMatchIds && rows ? exactMatchScore(exactMatchIds, rows, tokenizer) : null;
  return score === null ? rest : { ...rest, evalExactMatch: score };
}

let crashed = false;

/** What one job runs as: its job file, and for GRPO the answers to svc_trainer's score requests. */
interface TorchRun {
  file: string;
  exactMatch: ExactMatchRow[] | null;
  tokenizer: Tokenizer;
  score?: ReturnType<typeof torchScorer>;
  /** Processes: launch.processes for SFT; DPO and GRPO train in one (svc_trainer/dpo.py, grpo.py). */
  processes: number;
}

/** Reads and prepares the job's sets for its method, posts "started", and writes the job file. */
async function prepareRun(launch: TorchLaunch, scratch: string): Promise<TorchRun | null> {
  const method = input.hyperparameters.method ?? "sft";
  if (method !== "sft" && input.torchModel === "transformers")
    throw new Error(
      `hyperparameters.torchModel "transformers": method "${method}" trains svc's decoder on the torch backend (its reference policy is the adapter switched off); leave torchModel out`,
    );
  if (method !== "sft" && launch.fsdp)
    throw new Error(`method "${method}" does not train under FSDP yet: run it on a worker without --fsdp`);
  // none: a job from before precisions, which svc_trainer trains as it did then (precision.py)
  const { precision, baseWeights } = input.hyperparameters;
  // What svc_trainer will run, "auto" and none resolved on this machine by svc_trainer's own rule.
  const ran = torchPrecision(launch, precision, baseWeights);
  const common = {
    hyperparameters: input.hyperparameters,
    outputDir: input.outputDir,
    resumeFrom: input.resumeFrom,
    startAdapter: input.startAdapter,
    gradientCheckpointing: launch.gradientCheckpointing,
    torchModel: input.torchModel,
    precision,
    baseWeights,
    baseModelName: input.baseModelName,
    baseModelRevision: input.baseModelRevision,
  } satisfies Partial<TorchJobOptions>;
  if (method === "dpo") {
    const { model, prepared, started } = await readPreferenceTrainingSets(input, () =>
      torchModelHeader(input),
    );
    await post({ ...started, ...ran });
    if (input.dryRun) return null;
    const file = writeTorchPreferenceJob(scratch, { ...common, model, pairs: prepared });
    return { file, exactMatch: null, tokenizer: model.tokenizer, processes: 1 };
  }
  if (method === "grpo") {
    const { graders, rewards } = input.hyperparameters;
    // score_model judges generate with the engine here, on their own models (loaded at the first grade: this
    // process holds no engine copy of the policy's base)
    const judge = trainingJudge(null, input.judges ?? []);
    const { model, trainSet, prompts, evalSet, evalPrompts, started } = await readTorchGrpoSet(input);
    // the job's graders, run here, then its trainer's rewards, asked of the trainer through the runner
    const scorer = combinedScorer(
      graders?.length ? graderScorer(graders, judge) : null,
      rewards?.length ? trainerScorer(rewards, stopped.signal, () => scoringStep) : null,
    );
    await post({ ...started, ...ran });
    if (input.dryRun) return null;
    const file = writeTorchGrpoJob(scratch, { ...common, model, prompts, evalPrompts });
    const score = torchScorer(trainSet, model.tokenizer, input.hyperparameters, scorer, evalSet);
    return { file, exactMatch: null, tokenizer: model.tokenizer, score, processes: 1 };
  }
  const { model, prepared, started } = await readTrainingSetsForTorch(input);
  await post({ ...started, ...ran });
  if (input.dryRun) return null;
  const { file, exactMatch } = writeTorchJob(scratch, {
    ...common,
    model,
    prepared,
    packing: launch.packing,
    fsdp: launch.fsdp,
  });
  return { file, exactMatch, tokenizer: model.tokenizer, processes: launch.processes };
}

async function main(): Promise<void> {
  let lastStep: number | null = null;
  const scratch = mkdtempSync(join(tmpdir(), "svc-torch-"));
  try {
    const launch = input.torch;
    if (!launch) throw new Error("the torch backend's process was started without its launch settings");
    const run = await prepareRun(launch, scratch);
    if (run === null) {
      await post({ type: "result", result: null, trainSeconds: 0 });
      return;
    }
    const processes = run.processes;
    const port = processes > 1 ? await freePort() : 0;
    for (let rank = 0; rank < processes; rank++)
      ranks.push(startRank(launch, run.file, rank, port, processes));
    for (const other of ranks.slice(1)) other.stdout?.resume(); // rank 0 alone reports
    let reported = false;
    let chain = Promise.resolve();
    createInterface({ input: ranks[0].stdout as NodeJS.ReadableStream }).on("line", (line) => {
      let event: TrainingProcessMessage;
      try {
        event = JSON.parse(line);
      } catch {
        console.log(line); // not an event: a library's print, passed on as output
        return;
      }
      if ((event as { type: string }).type === "score") {
        // GRPO: the step's completions to score; the reply goes back on rank 0's stdin
        const request = event as unknown as TorchScoreRequest;
        scoringStep = request.step;
        const score = run.score;
        chain = chain.then(async () => {
          const reply = score
            ? await score(request)
            : { type: "scores", step: request.step, error: "this job has no scorer" };
          ranks[0].stdin?.write(`${JSON.stringify(reply)}\n`);
        });
        return;
      }
      if (event.type === "progress") {
        lastStep = event.progress.step;
        event = { ...event, progress: withExactMatch(event.progress, run.exactMatch, run.tokenizer) };
      }
      if (event.type === "result" || event.type === "error") reported = true;
      chain = chain.then(() => post(event));
    });
    const outcomes = await Promise.all(ranks.map((rank) => rankExit(rank, launch.python)));
    await chain;
    if (!reported) {
      // Died without a report (killed, out of memory): a crash, which the job
      // runner answers as for the engine's process, resuming from the last checkpoint.
      const why = outcomes.find((o) => o !== null) ?? "exited without a result";
      console.error(
        `svc: the torch training process ${why}${lastStep !== null ? ` after step ${lastStep}` : ""}`,
      );
      crashed = true;
    }
  } catch (error) {
    await post({ type: "error", message: (error as Error).message ?? String(error), step: lastStep });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
if (crashed) process.exit(1);
process.disconnect();
