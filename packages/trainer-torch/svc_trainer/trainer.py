"""Supervised LoRA fine-tuning with the engine's meaning of every hyperparameter.

The worker hands over what the engine decided: the tokenized examples (input
ids and labels, after the engine's dataset validation and truncation), the
resolved hyperparameters and the planned step count. From there the run is
the engine's train(): each epoch's order from (seed, epoch) with the engine's
generator, steps of batchSize x gradientAccumulationSteps examples in
micro-batches of batchSize, the loss summed over a step's trained tokens and
divided by their count, global-norm clipping, AdamW (PyTorch's, the engine's
semantics), Hugging Face's schedules, evaluation every evalSteps and at the
end, a checkpoint every saveSteps and on cancel, the final adapter in final/.

With packing (the job's `packing`), each micro-batch's sequences share rows
of up to maxLength tokens, each at its own positions and seeing only itself:
the same losses and gradients with less padding computed.

Data parallelism (torch.distributed, env:// rendezvous as torchrun sets it):
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
import torch.nn.functional as F

from .checkpoint import load_start_adapter, restore_checkpoint, write_checkpoint
from .fsdp import shard_base
from .lora import attach, init_adapter, save_adapter
from .rng import epoch_order
from .schedule import learning_rate_at
from .tokens import read_tokens


class Cancelled(Exception):
    pass


def make_batch(examples, pad, device):
    """Right-padded input ids [B, T] and shifted targets (-100 where nothing is predicted), as makeBatch."""
    T = max(len(e[0]) for e in examples)
    ids = torch.full((len(examples), T), pad, dtype=torch.long)
    targets = torch.full((len(examples), T), -100, dtype=torch.long)
    for b, (input_ids, labels) in enumerate(examples):
        n = len(input_ids)
        ids[b, :n] = input_ids
        if n > 1:
            targets[b, : n - 1] = labels[1:n]
    return ids.to(device), targets.to(device)


def make_packed_batch(examples, capacity, pad, device):
    """The micro-batch packed into rows of at most `capacity` tokens (first fit, in order): input ids,
    targets, and (positions, segments, rope_len) for the model. Each sequence keeps its positions from 0
    and sees only itself, so every token's loss is the one it has unpacked; only padding is saved."""
    rows = []
    for e in examples:
        row = next((r for r in rows if sum(len(x[0]) for x in r) + len(e[0]) <= capacity), None)
        if row is None:
            rows.append([e])
        else:
            row.append(e)
    T = max(sum(len(x[0]) for x in r) for r in rows)
    shape = (len(rows), T)
    ids = torch.full(shape, pad, dtype=torch.long)
    targets = torch.full(shape, -100, dtype=torch.long)
    positions = torch.zeros(shape, dtype=torch.long)
    segments = torch.full(shape, -1, dtype=torch.long)
    for r, row in enumerate(rows):
        offset = 0
        for k, (input_ids, labels) in enumerate(row):
            n = len(input_ids)
            ids[r, offset : offset + n] = input_ids
            if n > 1:
                targets[r, offset : offset + n - 1] = labels[1:n]
            positions[r, offset : offset + n] = torch.arange(n)
            segments[r, offset : offset + n] = k
            offset += n
    rope_len = max(len(e[0]) for e in examples)
    return ids.to(device), targets.to(device), (positions.to(device), segments.to(device), rope_len)


def count_targets(examples):
    return sum(int((labels[1:] >= 0).sum()) for _, labels in examples)


def token_loss(model, ids, targets, autocast, packing=None):
    with autocast():
        logits = model(ids) if packing is None else model(ids, packing)
    logits = logits.float()
    V = logits.shape[-1]
    loss_sum = F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-100, reduction="sum")
    return loss_sum, logits


def peak_memory_bytes(device):
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class Trainer:
    def __init__(self, job, model, device, emit, cancelled):
        self.job = job
        self.model = model
        self.device = device
        self.emit = emit
        self.cancelled = cancelled
        self.s = job["settings"]
        # The last step that completed (None before the first): what an error report names.
        self.last_step = None
        self.world = dist.get_world_size() if dist.is_initialized() else 1
        self.rank = dist.get_rank() if dist.is_initialized() else 0
        bf16 = device.type == "cuda" and job.get("dtype", "bf16") == "bf16"
        self.packing = bool(job.get("packing"))
        self.fsdp = bool(job.get("fsdp"))
        self.autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if bf16 else _no_autocast

    def _share(self, items):
        """This rank's contiguous share of a list."""
        chunk = math.ceil(len(items) / self.world)
        return items[self.rank * chunk : (self.rank + 1) * chunk]

    def _micro_batches(self, mine, B, size):
        """This rank's micro-batches of `mine`; under FSDP as many as the longest share of `size`
        examples has (each forward all-gathers the base), filled up with empty micro-batches."""
        batches = [mine[i : i + B] for i in range(0, len(mine), B)]
        if self.fsdp:
            rounds = math.ceil(math.ceil(size / self.world) / B)
            empty = [(torch.tensor([self.job["padTokenId"]]), torch.tensor([-100]))]
            batches += [empty] * (rounds - len(batches))
        return batches

    def _all_sum(self, values):
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        if self.world > 1:
            dist.all_reduce(t)
        return t.tolist()

    def run(self):
        job, s, device = self.job, self.s, self.device
        train = read_tokens(job["trainTokens"])
        evals = read_tokens(job["evalTokens"]) if job.get("evalTokens") else []
        n = len(train)
        B, accum = s["batchSize"], s["gradientAccumulationSteps"]
        samples_per_step = B * accum
        steps_per_epoch = math.ceil(n / samples_per_step)
        total = job["totalSteps"]
        pad = job["padTokenId"]
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
            chosen = [train[j] for j in order[start : min(n, start + samples_per_step)]]
            step_targets = count_targets(chosen)
            step_tokens = sum(len(e[0]) for e in chosen)
            mine = self._share(chosen)
            began = time.perf_counter()
            loss_sum = 0.0
            stop = False
            for batch in self._micro_batches(mine, B, len(chosen)):
                # ranks agree on a cancel once per step (below); one process stops between micro-batches
                if self.world == 1 and self.cancelled():
                    stop = True
                    break
                loss, _ = self.micro_batch(batch, pad)
                (loss / step_targets).backward()
                loss_sum += float(loss.detach())
            if self.world > 1:
                stop = self._all_sum([1.0 if stop or self.cancelled() else 0.0])[0] > 0
            if stop:
                optimizer.zero_grad(set_to_none=True)
                directory = checkpoint()
                return {"status": "cancelled", "steps": step, "finalLoss": last_loss, "evalLoss": last_eval,
                        "adapterDir": directory, "checkpoints": checkpoints}
            if self.world > 1:
                flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in plist])
                dist.all_reduce(flat)
                offset = 0
                for p in plist:
                    p.grad = flat[offset : offset + p.numel()].view_as(p).clone()
                    offset += p.numel()
                loss_sum = self._all_sum([loss_sum])[0]
            if s["maxGradNorm"] > 0:
                torch.nn.utils.clip_grad_norm_(plist, s["maxGradNorm"])
            lr = learning_rate_at(s["lrSchedulerType"], s["learningRate"], step, s["warmupSteps"], total)
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            self.last_step = step
            last_loss = loss_sum / step_targets
            seconds = time.perf_counter() - began
            eval_loss = eval_accuracy = None
            eval_now = s.get("evalSteps") is not None and step % s["evalSteps"] == 0
            exact_match_ids = None
            if evals and (eval_now or step == total):
                result = self.evaluate(evals, B, pad)
                if result is not None:
                    eval_loss, eval_accuracy = result
                    last_eval = eval_loss
                    # under FSDP every rank takes part in each forward pass
                    if job.get("exactMatch") and (self.rank == 0 or self.fsdp):
                        exact_match_ids = self.generate(job["exactMatch"])
            progress = {
                "step": step, "totalSteps": total, "loss": last_loss, "evalLoss": eval_loss,
                "evalTokenAccuracy": eval_accuracy, "evalExactMatch": None, "learningRate": lr,
                "epoch": step / steps_per_epoch,
                "tokensPerSecond": step_tokens / seconds if seconds > 0 else 0,
                "backend": "torch", "device": self.describe_device(),
                "memoryBytes": peak_memory_bytes(device),
            }
            if exact_match_ids is not None:
                progress["exactMatchIds"] = exact_match_ids
            history.append({"step": step, "loss": last_loss, "eval_loss": eval_loss,
                            "eval_token_accuracy": eval_accuracy, "eval_exact_match": None,
                            "learning_rate": lr, "epoch": progress["epoch"]})
            if self.rank == 0:
                self.emit({"type": "progress", "progress": progress})
            if s.get("saveSteps") is not None and step % s["saveSteps"] == 0:
                checkpoint()
        final = os.path.join(out_dir, "final")
        if self.rank == 0:
            save_adapter(final, spec, params, *base_model)
        return {"status": "completed", "steps": step, "finalLoss": last_loss, "evalLoss": last_eval,
                "adapterDir": final, "checkpoints": checkpoints}

    def micro_batch(self, examples, pad, with_targets=False):
        """The summed token loss of a micro-batch (and its logits), padded or packed."""
        if self.packing:
            ids, targets, packing = make_packed_batch(examples, self.s["maxLength"], pad, self.device)
        else:
            (ids, targets), packing = make_batch(examples, pad, self.device), None
        loss, logits = token_loss(self.model, ids, targets, self.autocast, packing)
        return (loss, logits, targets) if with_targets else (loss, logits)

    @torch.no_grad()
    def generate(self, exact_match):
        """Greedy answers (token ids, the end-of-turn token left out) of the exact-match sample's prompts:
        the worker decodes and compares them as the engine does. None when cancelled part-way."""
        eos = set(exact_match["eosTokenIds"])
        answers = []
        for prompt in exact_match["prompts"]:
            if self.world == 1 and self.cancelled():
                return None
            ids = list(prompt)
            answer = []
            for _ in range(exact_match["maxTokens"]):
                with self.autocast():
                    logits = self.model(torch.tensor([ids], device=self.device))
                token = int(logits[0, -1].float().argmax())
                if token in eos:
                    break
                answer.append(token)
                ids.append(token)
            answers.append(answer)
        return answers

    def describe_device(self):
        kind = self.device.type
        return f"{kind} x{self.world}" if self.world > 1 else kind

    @torch.no_grad()
    def evaluate(self, examples, B, pad):
        """(mean token loss, token accuracy) over the set; None when cancelled part-way."""
        loss_sum = correct = count = 0.0
        mine = self._share(examples)
        for batch in self._micro_batches(mine, B, len(examples)):
            if self.world == 1 and self.cancelled():
                return None
            loss, logits, targets = self.micro_batch(batch, pad, with_targets=True)
            counted = targets != -100
            loss_sum += float(loss)
            count += float(counted.sum())
            correct += float(((logits.argmax(-1) == targets) & counted).sum())
        loss_sum, correct, count = self._all_sum([loss_sum, correct, count])
        return loss_sum / count, correct / count


class _no_autocast:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
