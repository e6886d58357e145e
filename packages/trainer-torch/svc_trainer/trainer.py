"""LoRA training with the engine's meaning of every hyperparameter: the loop every method shares.

The worker hands over what the engine decided: the tokenized examples (after the
engine's dataset validation and truncation), the resolved hyperparameters and
the planned step count. From there the run is the engine's training loop
(training-loop.ts): each epoch's order from (seed, epoch) with the engine's
generator, steps of batchSize x gradientAccumulationSteps examples in
micro-batches of batchSize, global-norm clipping, AdamW (PyTorch's, the engine's
semantics), Hugging Face's schedules, evaluation every evalSteps and at the
end, a checkpoint every saveSteps and on cancel, the final adapter in final/.
What differs between methods is an objective, as the engine's TrainingObjective:
SFT's token loss (sft.py), DPO/SimPO's preference loss (dpo.py) and GRPO's
sampled, scored policy-gradient step (grpo.py).

Data parallelism (torch.distributed, env:// rendezvous as torchrun sets it; SFT):
each rank runs its share of every step's examples; the LoRA gradients and the
loss sums are all-reduced (summed) before clipping, so a step is the same
computation as on one process with the same global batch. With FSDP (the job's
`fsdp`, fsdp.py) the frozen base is sharded across the ranks as well, and every
rank runs the same number of micro-batches (empty ones where its share is short).
"""

import math
import os
import resource
import time

import torch
import torch.distributed as dist

from .batches import token_loss  # noqa: F401 (bench/torch-train.py reads it from here)
from .checkpoint import load_start_adapter, restore_checkpoint, write_checkpoint
from .fsdp import shard_base
from .lora import attach, init_adapter, save_adapter
from .precision import resolve
from .rng import epoch_order
from .schedule import learning_rate_at


class Cancelled(Exception):
    pass


def peak_memory_bytes(device):
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def objective_for(trainer):
    """The job's method's objective (job["method"], default "sft")."""
    method = trainer.job.get("method", "sft")
    if method == "sft":
        from .sft import SftObjective
        return SftObjective(trainer)
    if method == "dpo":
        from .dpo import DpoObjective
        return DpoObjective(trainer)
    if method == "grpo":
        from .grpo import GrpoObjective
        return GrpoObjective(trainer)
    raise ValueError(f'method must be "sft", "dpo" or "grpo" (got {method!r})')


class Trainer:
    def __init__(self, job, model, device, emit, cancelled, ask=None):
        self.job = job
        self.model = model
        self.device = device
        self.emit = emit
        self.cancelled = cancelled
        # GRPO asks its worker to score completions: ask(request) -> the reply (__main__.py)
        self.ask = ask
        self.s = job["settings"]
        # The last step that completed (None before the first): what an error report names.
        self.last_step = None
        self.world = dist.get_world_size() if dist.is_initialized() else 1
        self.rank = dist.get_rank() if dist.is_initialized() else 0
        bf16 = resolve(job, device.type)[0] == "bf16"  # what __main__ built the model for
        self.packing = bool(job.get("packing"))
        self.fsdp = bool(job.get("fsdp"))
        # on the CPU as on CUDA: autocast's bf16 products with fp32 LoRA factors and gradients
        self.autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if bf16 else _no_autocast

    def share(self, items):
        """This rank's contiguous share of a list."""
        chunk = math.ceil(len(items) / self.world)
        return items[self.rank * chunk : (self.rank + 1) * chunk]

    def all_sum(self, values):
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        if self.world > 1:
            dist.all_reduce(t)
        return t.tolist()

    def run(self):
        job, s, device = self.job, self.s, self.device
        objective = objective_for(self)
        n = objective.n
        B, accum = s["batchSize"], s["gradientAccumulationSteps"]
        samples_per_step = B * accum
        steps_per_epoch = math.ceil(n / samples_per_step)
        total = job["totalSteps"]
        peft_model = hasattr(self.model, "attach_adapter")  # transformers + peft (hf.py)
        if peft_model:
            spec, params = self.model.attach_adapter(s["lora"], s["seed"])
        else:
            spec, tensors = init_adapter(self.model.desc, s["lora"], s["seed"])
            params = attach(self.model, spec, tensors)
        plist = [p for _, p in params]
        if self.fsdp:
            shard_base(self.model, plist, device)
        optimizer = torch.optim.AdamW(plist, lr=s["learningRate"], betas=(s["adamBeta1"], s["adamBeta2"]),
                                      eps=s["adamEpsilon"], weight_decay=s["weightDecay"])
        history = []
        step = 0
        if job.get("resumeFrom"):
            state = restore_checkpoint(job["resumeFrom"], spec, params, optimizer,
                                       {"n": n, "samples_per_step": samples_per_step, "seed": s["seed"]},
                                       any_module=peft_model)
            step = state["global_step"]
            history = list(state["log_history"])
        elif job.get("startAdapter"):
            load_start_adapter(job["startAdapter"], spec, params, any_module=peft_model)
        checkpoints = []
        out_dir = job["outputDir"]
        base_model = (job.get("baseModelName"), job.get("baseModelRevision"))

        def checkpoint():
            directory = os.path.join(out_dir, f"checkpoint-{step}")
            if self.rank == 0:
                state = {
                    "global_step": step, "total_steps": total, "epoch": step / steps_per_epoch, "seed": s["seed"],
                    "train_examples": n, "samples_per_step": samples_per_step, "steps_per_epoch": steps_per_epoch,
                    "data_position": {"epoch": step // steps_per_epoch,
                                      "offset": (step % steps_per_epoch) * samples_per_step},
                    "lora": {"r": spec["r"], "alpha": spec["alpha"], "target_modules": spec["targetModules"]},
                    "log_history": history,
                }
                write_checkpoint(directory, spec, params, optimizer, state, base_model)
                self.emit({"type": "checkpoint", "step": step, "dir": directory})
            checkpoints.append({"step": step, "dir": directory})
            return directory

        last_loss = last_eval = None
        order, order_epoch = [], -1
        while step < total:
            epoch = step // steps_per_epoch
            if epoch != order_epoch:
                order, order_epoch = epoch_order(n, s["seed"], epoch), epoch
            start = (step % steps_per_epoch) * samples_per_step
            began = time.perf_counter()
            # None: cancelled before any gradient was added (GRPO's sampling and scoring)
            pass_ = objective.begin_step(step, order[start : min(n, start + samples_per_step)])
            stop = pass_ is None
            for batch in [] if stop else pass_.micro_batches:
                # ranks agree on a cancel once per step (below); one process stops between micro-batches
                if self.world == 1 and self.cancelled():
                    stop = True
                    break
                pass_.run(batch)
            if self.world > 1:
                stop = self.all_sum([1.0 if stop or self.cancelled() else 0.0])[0] > 0
            if stop:
                optimizer.zero_grad(set_to_none=True)
                directory = checkpoint()
                return {"status": "cancelled", "steps": step, "finalLoss": last_loss, "evalLoss": last_eval,
                        "adapterDir": directory, "checkpoints": checkpoints}
            # a step that trained nothing (GRPO's zero groups) still takes AdamW's step on zero gradients, as the engine does
            for p in plist:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            sums = pass_.sums
            if self.world > 1:
                flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in plist])
                dist.all_reduce(flat)
                offset = 0
                for p in plist:
                    p.grad = flat[offset : offset + p.numel()].view_as(p).clone()
                    offset += p.numel()
                sums = self.all_sum(sums)
            if s["maxGradNorm"] > 0:
                torch.nn.utils.clip_grad_norm_(plist, s["maxGradNorm"])
            lr = learning_rate_at(s["lrSchedulerType"], s["learningRate"], step, s["warmupSteps"], total)
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            self.last_step = step
            last_loss, figures = pass_.result(sums)
            seconds = time.perf_counter() - began
            evaluation = None
            eval_now = s.get("evalSteps") is not None and step % s["evalSteps"] == 0
            if objective.has_eval and (eval_now or step == total):
                evaluation = objective.evaluate()
                if evaluation is not None:
                    last_eval = evaluation["loss"]
            progress = {
                "step": step, "totalSteps": total, "loss": last_loss, "evalLoss": None,
                "evalTokenAccuracy": None, "evalExactMatch": None, "learningRate": lr,
                "epoch": step / steps_per_epoch,
                "tokensPerSecond": pass_.tokens / seconds if seconds > 0 else 0,
                "backend": "torch", "device": self.describe_device(),
                "memoryBytes": peak_memory_bytes(device),
            }
            row = {"step": step, "loss": last_loss, "eval_loss": None, "learning_rate": lr,
                   "epoch": progress["epoch"]}
            objective.report(progress, row, figures, evaluation)
            history.append(row)
            if self.rank == 0:
                self.emit({"type": "progress", "progress": progress})
            if s.get("saveSteps") is not None and step % s["saveSteps"] == 0:
                checkpoint()
        final = os.path.join(out_dir, "final")
        if self.rank == 0:
            save_adapter(final, spec, params, *base_model)
        return {"status": "completed", "steps": step, "finalLoss": last_loss, "evalLoss": last_eval,
                "adapterDir": final, "checkpoints": checkpoints}

    def describe_device(self):
        kind = self.device.type
        return f"{kind} x{self.world}" if self.world > 1 else kind


class StepPass:
    """One optimizer step's work, planned by an objective: its micro-batches, run(batch) for the
    forward and backward of one (adding into the LoRA gradients, scaled so the step's sum is its
    mean), `sums` (the figures summed over micro-batches, all-reduced across ranks) and
    result(sums) -> (loss, figures) once every micro-batch ran."""

    def __init__(self, micro_batches, run, sums, result, tokens):
        self.micro_batches = micro_batches
        self.run = run
        self.sums = sums
        self.result = result
        self.tokens = tokens


class _no_autocast:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
