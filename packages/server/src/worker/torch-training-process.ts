// Runs one training job on the torch backend, in a child process of the job
// runner like the engine's training process (training-process.ts), speaking
// the same IPC messages: the datasets and model are read and fitted by the
// engine (training-sets.ts), then PyTorch trains in packages/trainer-torch,
// one Python process per data-parallel rank, started like torchrun (env://
// rendezvous on 127.0.0.1). Rank 0's JSON-lines events become this process's
// messages; an abort (or SIGTERM) is a cancel command to every rank, which
// checkpoints at the last full step. Python exits when this process goes away
// (its stdin closes).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { exitWithParent } from "../process/engine-process.js";
import { TRAINER_TORCH_DIR, writeTorchJob } from "./torch-job.js";
import type {
  TrainingProcessCommand,
  TrainingProcessInput,
  TrainingProcessMessage,
} from "./training-protocol.js";
import { readTrainingSetsForTorch } from "./training-sets.js";

exitWithParent();
const ranks: ChildProcess[] = [];
let cancelled = false;
const cancel = () => {
  cancelled = true;
  for (const rank of ranks) rank.stdin?.write(`${JSON.stringify({ type: "cancel" })}\n`);
};
process.on("SIGTERM", cancel);

const post = (message: TrainingProcessMessage) =>
  new Promise<void>((resolve) => {
    if (!process.send?.(message, undefined, {}, () => resolve())) resolve();
  });

const input = await new Promise<TrainingProcessInput>((resolve) => {
  process.on("message", (command: TrainingProcessCommand) => {
    if (command.type === "start") resolve(command.input);
    else if (command.type === "abort") cancel();
  });
});

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

let crashed = false;

async function main(): Promise<void> {
  let lastStep: number | null = null;
  const scratch = mkdtempSync(join(tmpdir(), "svc-torch-"));
  try {
    const launch = input.torch ?? { python: "/usr/bin/python3", device: "cpu", processes: 1 };
    const { model, prepared, started } = await readTrainingSetsForTorch(input);
    await post(started);
    if (input.dryRun) {
      await post({ type: "result", result: null, trainSeconds: 0 });
      return;
    }
    const jobFile = writeTorchJob(scratch, {
      model,
      prepared,
      hyperparameters: input.hyperparameters,
      outputDir: input.outputDir,
      resumeFrom: input.resumeFrom,
      gradientCheckpointing: launch.gradientCheckpointing,
      packing: launch.packing,
      baseModelName: input.baseModelName,
      baseModelRevision: input.baseModelRevision,
    });
    const world = launch.processes;
    const port = world > 1 ? await freePort() : 0;
    let reported = false;
    const exits: Promise<string | null>[] = [];
    for (let rank = 0; rank < world; rank++) {
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
      ranks.push(child);
      if (cancelled) child.stdin?.write(`${JSON.stringify({ type: "cancel" })}\n`);
      exits.push(
        new Promise((resolve) => {
          child.once("error", (error) => resolve(`could not start ${launch.python} (${error.message})`));
          child.once("close", (code, signal) =>
            resolve(code === 0 ? null : `exited with ${signal ? `signal ${signal}` : `code ${code}`}`),
          );
        }),
      );
      if (rank > 0) {
        child.stdout?.resume();
        continue;
      }
      let chain = Promise.resolve();
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
        let event: TrainingProcessMessage;
        try {
          event = JSON.parse(line);
        } catch {
          console.log(line); // not an event: a library's print, passed on as output
          return;
        }
        if (event.type === "progress") lastStep = event.progress.step;
        if (event.type === "result" || event.type === "error") reported = true;
        chain = chain.then(() => post(event));
      });
      exits[0] = exits[0].then(async (why) => {
        await chain;
        return why;
      });
    }
    const outcomes = await Promise.all(exits);
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
