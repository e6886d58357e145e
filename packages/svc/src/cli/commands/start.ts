// svc start: run the project's trainer. Reuses .svc/build/index.mjs when present
// (svc build refreshes it), submits the job and prints its progress until it ends.
import {
  JOB_BACKENDS,
  type JobBackend,
  TRAINING_METHODS,
  TRAINING_PRECISIONS,
  type TrainingMethod,
  type TrainingPrecision,
} from "@svc/wire";
import { ensureLocalServer } from "../../sdk/local-server.js";
import { loadProject, ManifestBuildError } from "../../sdk/manifest.js";
import { defaultProjectDir, openExistingScopedSession } from "../../sdk/session.js";
import { TrainingCancelledError, TrainingFailedError } from "../../sdk/trainer.js";
import { type Command, parse, stringOption, UsageError } from "../args.js";
import { formatDatasetProfile } from "../dataset-profile-text.js";
import { formatHubDatasetNotice } from "../hub-dataset-text.js";
import { OutagePrinter } from "../outage.js";
import { JobProgressPrinter } from "../progress.js";

/** How long svc start waits for the dataset profile before following the job without it. */
const PROFILE_WAIT_MS = 30_000;

export const startCommand: Command = {
  name: "start",
  summary: "run the project's trainer and follow its progress",
  usage: [
    "Usage: svc start [--rebuild] [--detach] [--backend auto|engine|torch] [--method sft|dpo|grpo]",
    "                 [--precision auto|fp32|bf16] [--attach <job-id>]",
    "",
    "Runs the trainer that src/svc/index.ts registers with createSvc. Uses",
    ".svc/build/index.mjs when it exists (svc build refreshes it), builds otherwise.",
    "Then prints the training dataset's profile for the model (rows, token lengths,",
    "duplicates, rows over maxLength, a suggested maxLength; waits up to 30 s for it)",
    "and progress until the job ends: a progress bar on a terminal, plain lines",
    "such as `step 10/60 loss=1.2340 evalLoss=1.4560` otherwise. Exits 1 when the",
    "job fails or is cancelled. Ctrl-C stops watching; the job keeps running.",
    "",
    "When the cloud API goes away while the job runs, svc start says so in one line.",
    "The local server it started is restarted and the job followed from its last",
    "event; a remote SVC_CLOUD_API_URL is retried for 2 minutes, then svc start",
    "exits 1 with the command that resumes following (svc jobs follow <id>).",
    "",
    "A GRPO trainer's reward functions (createTrainer's rewards) run in this process",
    "while the job trains: each scored step prints a line. When this process is gone",
    "for 30 s the job pauses; svc start --attach <job-id> scores it again and it resumes.",
    "",
    "Options:",
    "  --rebuild  build the bundle even when one exists",
    "  --detach   submit and exit without following the job",
    "  --backend  the training backend, overriding the trainer's (docs/gpu-training.md):",
    "             auto (any worker), engine (svc's CPU engine) or torch (svc worker --backend torch)",
    "  --method   the training method, overriding the trainer's (docs/post-training.md):",
    "             sft (chat rows), dpo (preference pairs) or grpo (prompts, with rewards or graders)",
    "  --attach   follow (and, for a GRPO job, score) this trainer's earlier job instead of",
    "             submitting one; a job paused because its scorer was gone resumes",
    "  --precision  the training precision, overriding the trainer's (docs/training-precision.md):",
    "             auto (default: bf16 where the CPU has bf16 dot products, else fp32), fp32 or bf16",
  ].join("\n"),
  async run(argv) {
    const { values } = parse(
      argv,
      {
        rebuild: { type: "boolean" },
        detach: { type: "boolean" },
        backend: { type: "string" },
        method: { type: "string" },
        precision: { type: "string" },
        attach: { type: "string" },
      },
      0,
    );
    const backend = stringOption(values, "backend") as JobBackend | undefined;
    if (backend !== undefined && !JOB_BACKENDS.includes(backend))
      throw new UsageError(`--backend must be auto, engine or torch (got ${JSON.stringify(backend)})`);
    const method = stringOption(values, "method") as TrainingMethod | undefined;
    if (method !== undefined && !TRAINING_METHODS.includes(method))
      throw new UsageError(`--method must be sft, dpo or grpo (got ${JSON.stringify(method)})`);
    const precision = stringOption(values, "precision") as TrainingPrecision | undefined;
    if (precision !== undefined && !TRAINING_PRECISIONS.includes(precision))
      throw new UsageError(
        `--precision must be ${TRAINING_PRECISIONS.join(", ")} (got ${JSON.stringify(precision)})`,
      );
    const projectDir = defaultProjectDir();
    let manifest: Awaited<ReturnType<typeof loadProject>>;
    try {
      manifest = await loadProject(projectDir, { rebuild: Boolean(values.rebuild) });
    } catch (err) {
      if (!(err instanceof ManifestBuildError)) throw err;
      for (const line of err.errors) process.stderr.write(`${line}\n`);
      process.stderr.write("svc start: the build failed\n");
      return 1;
    }
    if (!manifest) {
      process.stderr.write(
        "svc start: No trainer in src/svc/index.ts yet. Add createTrainer(...) and pass it to createSvc.\n",
      );
      return 1;
    }
    const { trainer } = manifest;
    await ensureLocalServer({
      onStale: ({ pid }) =>
        process.stdout.write(
          `the local server pid ${pid} had died without a clean exit (stale pid file removed)\n`,
        ),
      onStarting: ({ log }) => process.stdout.write(`starting the local server (log: ${log})\n`),
    });
    const attach = stringOption(values, "attach");
    if (attach !== undefined && (backend || method || precision || values.detach))
      throw new UsageError(
        "--attach follows an existing job: it takes no --backend, --method, --precision or --detach",
      );
    const { jobId } = attach
      ? await trainer.attach(attach)
      : await trainer.start({
          backend,
          method,
          precision,
          onHubDataset: (notice) => process.stdout.write(`${formatHubDatasetNotice(notice)}\n`),
        });
    process.stdout.write(
      attach
        ? `attached to job ${jobId}: ${trainer.name} on ${trainer.model}\n`
        : `job ${jobId} submitted: ${trainer.name} on ${trainer.model}\n`,
    );
    // A job no running worker can take (its backend offered by none) says so at once.
    const submitted = await openExistingScopedSession()
      .then((session) => session?.scoped.getJob(jobId))
      .catch(() => null);
    if (submitted?.queuedReason) process.stdout.write(`job ${jobId} waits: ${submitted.queuedReason}\n`);
    if (values.detach) return 0;
    const profile = await trainer
      .datasetProfile({ timeoutMs: PROFILE_WAIT_MS })
      .catch((err: Error) => ({ unavailable: err.message }));
    if (profile && "unavailable" in profile)
      process.stdout.write(`dataset profile: unavailable (${profile.unavailable})\n`);
    else if (profile) for (const line of formatDatasetProfile(profile)) process.stdout.write(`${line}\n`);

    const printer = new JobProgressPrinter(process.stdout);
    const outage = new OutagePrinter(printer, process.stdout);
    const watching = new AbortController();
    const onSigint = () => watching.abort(new Error("interrupted"));
    process.once("SIGINT", onSigint);
    try {
      const { artifacts } = await trainer.wait({
        onEvent: (e) => {
          outage.stopCountdown();
          printer.event(e);
        },
        onApiNotice: outage.notice,
        onScored: (n) =>
          printer.line(
            n.error
              ? `scoring step ${n.step} failed: ${n.error}`
              : `scored step ${n.step}: ${n.completions} completions with ${n.rewardNames.join(", ")} (${n.seconds.toFixed(2)}s)`,
          ),
        signal: watching.signal,
      });
      printer.finish();
      const final = artifacts.find((a) => a.kind === "final");
      process.stdout.write(`done: job ${jobId}${final ? ` (adapter: ${final.name})` : ""}\n`);
      return 0;
    } catch (err) {
      outage.stopCountdown();
      printer.finish();
      if (watching.signal.aborted) {
        process.stderr.write(
          `stopped watching; job ${jobId} keeps running (svc jobs cancel ${jobId} stops it)\n`,
        );
        return 130;
      }
      if (err instanceof TrainingFailedError || err instanceof TrainingCancelledError) {
        process.stderr.write(`svc start: ${err.message}\n`);
        return 1;
      }
      throw err;
    } finally {
      process.off("SIGINT", onSigint);
    }
  },
};
