"""The torch backend's process: one training job, driven over JSON lines (docs/gpu-training.md#protocol).

    python3 -m svc_trainer --input job.json [--device cpu|cuda] [--stdin-commands]

Reads the job (the engine's block description, tokenized examples, resolved
hyperparameters and the planned step count) from --input, trains, and writes
events to stdout, one JSON object a line: progress, checkpoint, result, error
(rank 0 only under torch.distributed). With --stdin-commands it reads commands
from stdin ({"type": "cancel"}: checkpoint at the last full step and stop) and
exits when stdin closes (its worker is gone). SIGTERM is a cancel, as in the
engine's training process; SIGINT is left to the parent.

Several processes (torchrun, or the worker's --gpus N) train one job with data
parallelism: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT as
torchrun sets them (env:// rendezvous); gloo on the CPU, NCCL on GPUs.
"""

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist

from .fsdp import fully_shard_api
from .hf import PeftDecoder
from .int8 import cast_float_parameters
from .model import Decoder
from .precision import resolve
from .safetensors_io import read_safetensors
from .trainer import Trainer

_out_lock = threading.Lock()


def emit(event):
    with _out_lock:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def load_base_weights(model_dir):
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)[0], single
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if not os.path.exists(index):
        raise ValueError(f"{single}: not found (nor model.safetensors.index.json)")
    with open(index) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    tensors = {}
    for name in files:
        tensors.update(read_safetensors(os.path.join(model_dir, name))[0])
    return tensors, index


def compile_setting():
    """SVC_TORCH_COMPILE: "1" or "0", or "" (unset: the default) — anything else is refused."""
    setting = os.environ.get("SVC_TORCH_COMPILE", "")
    if setting not in ("", "0", "1"):
        raise ValueError(f"SVC_TORCH_COMPILE must be 0 or 1 (got {json.dumps(setting)})")
    if setting == "1" and not hasattr(torch, "compile"):
        raise ValueError(f"SVC_TORCH_COMPILE=1 needs PyTorch 2 or later; this Python has torch {torch.__version__}")
    return setting


def compiles(job, device, setting):
    """Whether svc's model runs its layers through torch.compile (model.compile_layers): on CUDA by
    default, where kernel launches rather than FLOPs bound a LoRA step, and not on the CPU; the
    setting ("1"/"0") decides instead. FSDP jobs and transformers models run eager."""
    if job.get("torchModel", "svc") != "svc" or job.get("fsdp") or not hasattr(torch, "compile"):
        return False
    return setting == "1" if setting else device.type == "cuda"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m svc_trainer")
    parser.add_argument("--input", required=True, help="the job, as JSON (docs/gpu-training.md#the-job-file)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
    parser.add_argument("--stdin-commands", action="store_true")
    args = parser.parse_args(argv)

    cancel = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = queue.Queue()
    ask = None
    if args.stdin_commands:
        def read_commands():
            for line in sys.stdin:
                command = json.loads(line) if line.strip() else {}
                if command.get("type") == "cancel":
                    cancel.set()
                elif command.get("type") == "scores":
                    replies.put(command)
            os._exit(0)  # the worker is gone: nobody is left to report to
        threading.Thread(target=read_commands, daemon=True).start()

        def ask(request):
            """Writes a request event and waits for the worker's reply; None on a cancel."""
            emit(request)
            while not cancel.is_set():
                try:
                    reply = replies.get(timeout=0.1)
                except queue.Empty:
                    continue
                # a cancel (pause, shutdown) read before or with the reply wins: the worker's scorer may
                # answer a stopped wait with an error, which must not fail the job
                return None if cancel.is_set() else reply
            return None

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    device_kind = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(f"cuda:{local_rank}" if device_kind == "cuda" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    say = emit if rank == 0 else (lambda event: None)
    trainer = None
    try:
        compile_layers = compile_setting()
        if world > 1:
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method="env://",
                                    rank=rank, world_size=world)
        with open(args.input) as f:
            job = json.load(f)
        if job.get("threads"):
            torch.set_num_threads(int(job["threads"]))
        torch.manual_seed(job["settings"]["seed"])
        if job.get("fsdp"):
            fully_shard_api()  # refused before the weights are read where this torch cannot shard
        # bf16: the frozen base weights kept in bf16 and the forward and backward under bf16 autocast,
        # on CUDA and on the CPU; int8: the projections and LM head held int8. LoRA factors and AdamW's
        # state stay fp32 (precision.py).
        precision, base_weights = resolve(job, device.type)
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        int8 = base_weights == "int8"
        if int8 and job.get("torchModel", "svc") != "svc":
            raise ValueError('baseWeights "int8" trains svc\'s decoder on the torch backend; '
                             'hyperparameters.torchModel "transformers" trains on a bf16 or fp32 base')
        if int8 and job.get("fsdp"):
            raise ValueError('baseWeights "int8" does not train under FSDP (--fsdp) yet: its int8 weights would not be sharded')
        if job.get("torchModel", "svc") == "transformers":
            if job.get("fsdp") or job.get("packing"):
                raise ValueError('hyperparameters.torchModel "transformers" trains without --fsdp and --packing')
            model = PeftDecoder(job["modelDir"], dtype, bool(job.get("gradientCheckpointing")))
        elif job.get("torchModel", "svc") == "svc":
            model = Decoder(job["model"])
            model.gradient_checkpointing = bool(job.get("gradientCheckpointing"))
            tensors, source = load_base_weights(job["modelDir"])
            model.load_checkpoint(tensors, source)
            del tensors
            if int8:
                model.quantize_base()  # from the checkpoint's values, before any cast
        else:
            raise ValueError(f'torchModel must be "svc" or "transformers" (got {json.dumps(job["torchModel"])})')
        # Under FSDP the base stays on the CPU until fully_shard moves each rank's shards to the device.
        if int8:
            model.to(device)
            cast_float_parameters(model, dtype)  # the int8 weights' scales stay fp32
        else:
            model.to("cpu" if job.get("fsdp") else device, dtype=dtype)
        if compiles(job, device, compile_layers):
            model.compile_layers()
        began = time.perf_counter()
        trainer = Trainer(job, model, device, say, cancel.is_set, ask)
        result = trainer.run()
        say({"type": "result", "result": result, "trainSeconds": time.perf_counter() - began})
    except Exception as error:  # reported to the worker, which fails the job with the message
        traceback.print_exc(file=sys.stderr)
        step = trainer.last_step if trainer is not None else None
        say({"type": "error", "message": str(error) or type(error).__name__, "step": step})
        return 1
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
