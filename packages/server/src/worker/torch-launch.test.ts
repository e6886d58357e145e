import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { needs } from "@svc/engine/testing";
import { resolveTorchLaunch, TorchFlagError } from "./torch-launch.js";

const hasTorch = spawnSync("/usr/bin/python3", ["-c", "import torch"]).status === 0;
const hasCuda =
  hasTorch &&
  spawnSync("/usr/bin/python3", ["-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"])
    .status === 0;

test("flag values the torch backend cannot use are usage errors naming the flag", () => {
  const usage = (flags: Parameters<typeof resolveTorchLaunch>[0], pattern: RegExp) =>
    assert.throws(
      () => resolveTorchLaunch(flags, {}),
      (e: Error) => e instanceof TorchFlagError && pattern.test(e.message),
    );
  usage({ device: "tpu", concurrency: 1 }, /--device must be cpu or cuda \(got "tpu"\)/);
  usage({ gpus: "0", concurrency: 1 }, /--gpus must be an integer from 1 to 1024 \(got 0\)/);
  usage({ gpus: "two", concurrency: 1 }, /--gpus must be an integer/);
  usage({ device: "cuda", concurrency: 2 }, /--concurrency above 1 with --device cuda/);
  usage(
    { fsdp: true, concurrency: 1 },
    /--fsdp shards the model across processes: it needs --gpus 2 or more/,
  );
  usage({ fsdp: true, gpus: "1", device: "cpu", concurrency: 1 }, /--fsdp .* needs --gpus 2 or more/);
});

test("an interpreter without torch is refused with what each candidate said", () => {
  assert.throws(
    () => resolveTorchLaunch({ python: "/nonexistent/python3", concurrency: 1 }, {}),
    /no Python with PyTorch \(\/nonexistent\/python3: spawnSync \/nonexistent\/python3 ENOENT\): install torch, or pass --python or SVC_PYTHON/,
  );
});

test("the first interpreter with torch is used: --python, SVC_PYTHON, then python3 and /usr/bin/python3", {
  skip: !hasTorch && needs("torch", "/usr/bin/python3 has no torch"),
}, () => {
  assert.deepEqual(resolveTorchLaunch({ python: "/usr/bin/python3", concurrency: 1 }, {}), {
    python: "/usr/bin/python3",
    device: "cpu",
    processes: 1,
    gradientCheckpointing: false,
    packing: false,
    fsdp: false,
  });
  const fromEnv = resolveTorchLaunch(
    { concurrency: 2, gpus: "2", device: "cpu" },
    { SVC_PYTHON: "/usr/bin/python3" },
  );
  assert.equal(fromEnv.processes, 2);
  assert.equal(fromEnv.python, "/usr/bin/python3");
  const found = resolveTorchLaunch(
    { concurrency: 1, gradientCheckpointing: true },
    { PATH: process.env.PATH },
  );
  assert.ok(["python3", "/usr/bin/python3"].includes(found.python));
  assert.equal(found.gradientCheckpointing, true);
});

test("--device cuda without the GPUs asked for is refused", {
  skip:
    (!hasTorch && needs("torch", "/usr/bin/python3 has no torch")) ||
    (hasCuda && needs("a machine without CUDA", "this machine has a CUDA GPU")),
}, () => {
  assert.throws(
    () => resolveTorchLaunch({ python: "/usr/bin/python3", gpus: "2", concurrency: 1 }, {}),
    /\/usr\/bin\/python3: 0 CUDA GPUs visible, --gpus asks for 2/,
  );
});

const debianTorch1 =
  hasTorch &&
  spawnSync("/usr/bin/python3", ["-c", "import torch, sys; sys.exit(0 if torch.__version__ < '2' else 1)"])
    .status === 0;

test("--fsdp with a PyTorch older than 2.7 is refused at start, naming the version", {
  skip: !debianTorch1 && needs("torch 1.x", "/usr/bin/python3 has no torch 1.x"),
}, () => {
  assert.throws(
    () =>
      resolveTorchLaunch(
        { python: "/usr/bin/python3", fsdp: true, gpus: "2", device: "cpu", concurrency: 1 },
        {},
      ),
    /no Python with PyTorch \(\/usr\/bin\/python3: FSDP needs PyTorch 2\.7 or later \(fully_shard with ignored_params\); this Python has torch 1\./,
  );
});
