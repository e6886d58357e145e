// How `svc worker --backend torch` starts PyTorch: the device, the processes
// per job (--gpus), the interpreter, and a check at start that it has torch
// (and the GPUs asked for), so a worker that cannot train says so before it
// claims a job.
import { spawnSync } from "node:child_process";
import type { BaseWeightFormat, TrainingPrecision } from "@svc/engine";
import { TRAINER_TORCH_DIR } from "./torch-job.js";
import type { TorchLaunch } from "./training-protocol.js";

/** A flag's value is wrong (the CLI's usage error). */
export class TorchFlagError extends Error {}

export interface TorchFlags {
  device?: string;
  gpus?: string;
  python?: string;
  gradientCheckpointing?: boolean;
  packing?: boolean;
  /** Shard the frozen base across the --gpus processes (FSDP). */
  fsdp?: boolean;
  /** Jobs the worker runs at once (--concurrency). */
  concurrency: number;
}

/**
 * The interpreters tried when neither --python nor SVC_PYTHON names one:
 * `python3` on the PATH (where `pip install torch` puts it), then Debian's.
 */
export const DEFAULT_PYTHONS = ["python3", "/usr/bin/python3"];

export function resolveTorchLaunch(flags: TorchFlags, env: NodeJS.ProcessEnv = process.env): TorchLaunch {
  const device = flags.device ?? (flags.gpus !== undefined ? "cuda" : "cpu");
  if (device !== "cpu" && device !== "cuda")
    throw new TorchFlagError(`--device must be cpu or cuda (got ${JSON.stringify(device)})`);
  const processes = flags.gpus === undefined ? 1 : Number(flags.gpus);
  if (!Number.isSafeInteger(processes) || processes < 1 || processes > 1024)
    throw new TorchFlagError(`--gpus must be an integer from 1 to 1024 (got ${flags.gpus})`);
  // Each job's ranks take GPUs 0..N-1: two jobs at once would share them.
  if (device === "cuda" && flags.concurrency > 1)
    throw new TorchFlagError(
      "--concurrency above 1 with --device cuda would put two jobs on the same GPUs; run one worker per GPU set (CUDA_VISIBLE_DEVICES) instead",
    );
  if (flags.fsdp && processes < 2)
    throw new TorchFlagError("--fsdp shards the model across processes: it needs --gpus 2 or more");
  const named = flags.python ?? env.SVC_PYTHON;
  const candidates = named ? [named] : DEFAULT_PYTHONS;
  // The interpreter must have torch, and CUDA with enough GPUs when asked for.
  const check = [
    "import torch, sys",
    ...(device === "cuda"
      ? [
          `n = torch.cuda.device_count(); n >= ${processes} or sys.exit(f"{n} CUDA GPUs visible, --gpus asks for ${processes}")`,
        ]
      : []),
    // The trainer's own test of FSDP support (svc_trainer/fsdp.py), so its message is the one refused with.
    ...(flags.fsdp
      ? [
          `sys.path.insert(0, ${JSON.stringify(TRAINER_TORCH_DIR)})`,
          "from svc_trainer.fsdp import fully_shard_api",
          "try:\n  fully_shard_api()\nexcept ValueError as e:\n  sys.exit(str(e))",
        ]
      : []),
  ].join("\n");
  const failures: string[] = [];
  for (const python of candidates) {
    const probe = spawnSync(python, ["-c", check], { encoding: "utf8" });
    if (probe.status === 0)
      return {
        python,
        device,
        processes,
        gradientCheckpointing: flags.gradientCheckpointing === true,
        packing: flags.packing === true,
        fsdp: flags.fsdp === true,
      };
    const why = probe.error?.message ?? (probe.stderr.trim().split("\n").pop() || `exit ${probe.status}`);
    failures.push(`${python}: ${why}`);
  }
  throw new Error(
    `no Python with PyTorch${device === "cuda" ? " and CUDA" : ""} (${failures.join("; ")}): install torch, or pass --python or SVC_PYTHON`,
  );
}

/** What a torch run trains in, "auto" resolved: training.started's precision and baseWeights. */
export interface TorchPrecision {
  precision: "fp32" | "bf16";
  baseWeights: "fp32" | "bf16" | "int8";
}

/**
 * What svc_trainer will run for a job's precision and base weights on this worker's device, asked of
 * svc_trainer itself (svc_trainer/precision.py, the one place the torch backend resolves them: "auto"
 * is bf16 on CUDA and on a CPU with native bf16 dot products, fp32 elsewhere; none, a job stored before
 * precisions, what svc_trainer ran then).
 */
export function torchPrecision(
  launch: Pick<TorchLaunch, "python" | "device">,
  precision: TrainingPrecision | undefined,
  baseWeights?: BaseWeightFormat,
): TorchPrecision {
  const args = ["-m", "svc_trainer.precision", "--device", launch.device];
  if (precision) args.push("--precision", precision);
  if (baseWeights) args.push("--base-weights", baseWeights);
  const probe = spawnSync(launch.python, args, {
    cwd: TRAINER_TORCH_DIR,
    env: { ...process.env, PYTHONPATH: TRAINER_TORCH_DIR },
    encoding: "utf8",
  });
  if (probe.status !== 0)
    throw new Error(
      `svc_trainer could not resolve precision ${precision ? JSON.stringify(precision) : "(none)"}${baseWeights ? ` on an ${baseWeights} base` : ""}: ${probe.error?.message ?? (probe.stderr.trim() || `exit ${probe.status}`)}`,
    );
  return JSON.parse(probe.stdout) as TorchPrecision;
}
