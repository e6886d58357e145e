"""A job's precision and base-weight format on the torch backend (docs/training-precision.md#the-torch-backend).

The job file's `precision` is the job's ("fp32", "bf16" or "auto") and `baseWeights` "int8" or
absent. Without a `precision` (a job stored before precisions existed, a job file written by hand)
it trains as svc_trainer did then: bf16 autocast on CUDA, fp32 on the CPU. This module is the one
place the torch backend resolves them: the worker asks it (python3 -m svc_trainer.precision) for
the training.started event, and the trainer runs what it answers. "auto" is the engine's rule:
bf16 where the device has native bf16 dot products (every CUDA GPU svc trains on; a CPU with
AVX512_BF16 or AMX-BF16), fp32 elsewhere, because bf16 emulated on AVX2 is many times slower than
fp32 (a 1024x576x1536 matmul: 1.25 GFLOP/s against 79).

bf16: the frozen base held in bf16 and the forward and backward under torch.autocast(bf16), on
CUDA and on the CPU. int8: the frozen projections and LM head held int8 (int8.py), dequantized in
each product. LoRA's factors, their gradients and AdamW's state are fp32 in every case.

    python3 -m svc_trainer.precision --device cpu|cuda [--precision P] [--base-weights int8]

(no --precision: a job that asked none) prints {"precision": "bf16"|"fp32", "baseWeights": "bf16"|"fp32"|"int8"}.
"""

import argparse
import json
import sys

import torch

PRECISIONS = ("fp32", "bf16", "auto")
BASE_WEIGHT_FORMATS = ("int8",)


def cpu_flags():
    """The CPU's feature flags as Linux reports them (empty elsewhere: no native bf16 is assumed)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_bf16_native():
    """Whether PyTorch's CPU kernels have native bf16 dot products here: AVX-512 kernels on a CPU
    with AVX512_BF16 or AMX-BF16 (oneDNN uses them for bf16 matmuls)."""
    cpu = getattr(torch.backends, "cpu", None)  # get_cpu_capability: PyTorch 2.0 and later
    if cpu is not None and hasattr(cpu, "get_cpu_capability") and not cpu.get_cpu_capability().startswith("AVX512"):
        return False
    return bool(cpu_flags() & {"avx512_bf16", "amx_bf16"})


def resolve(job, device_type):
    """(precision, baseWeights) the run trains in: precision "bf16" or "fp32" ("auto" resolved on this
    device), baseWeights "int8" or the precision. Values not understood are refused, naming the field."""
    asked = job.get("precision")
    if asked is None:  # svc_trainer's rule before precisions: bf16 autocast on CUDA, fp32 on the CPU
        asked = "bf16" if device_type == "cuda" else "fp32"
    if asked not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)} (got {json.dumps(asked)})")
    base = job.get("baseWeights")
    if base is not None and base not in BASE_WEIGHT_FORMATS:
        raise ValueError(f"baseWeights must be {' or '.join(BASE_WEIGHT_FORMATS)} or absent (got {json.dumps(base)})")
    if asked == "auto":
        asked = "bf16" if device_type == "cuda" or cpu_bf16_native() else "fp32"
    return asked, base or asked


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m svc_trainer.precision")
    parser.add_argument("--device", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--precision", default=None)
    parser.add_argument("--base-weights", default=None)
    args = parser.parse_args(argv)
    job = {
        **({"precision": args.precision} if args.precision else {}),
        **({"baseWeights": args.base_weights} if args.base_weights else {}),
    }
    try:
        precision, base = resolve(job, args.device)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    print(json.dumps({"precision": precision, "baseWeights": base}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
