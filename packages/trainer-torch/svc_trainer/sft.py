"""Supervised fine-tuning's objective: the loss summed over a step's trained tokens and divided by
their count, evaluation's mean token loss and token accuracy, and the exact-match sample's greedy
answers (the worker scores them). With packing (the job's `packing`), each micro-batch's sequences
share rows of up to maxLength tokens, each at its own positions and seeing only itself: the same
losses and gradients with less padding computed."""

import math

import torch

from .batches import count_targets, make_batch, make_packed_batch, token_loss
from .tokens import read_tokens
from .trainer import StepPass


class SftObjective:
    def __init__(self, trainer):
        self.t = trainer
        job = trainer.job
        self.train = read_tokens(job["trainTokens"])
        self.evals = read_tokens(job["evalTokens"]) if job.get("evalTokens") else []
        self.n = len(self.train)
        self.has_eval = bool(self.evals)
        self.pad = job["padTokenId"]
        self.B = trainer.s["batchSize"]

    def _micro_batches(self, mine, size):
        """This rank's micro-batches of `mine`; under FSDP as many as the longest share of `size`
        examples has (each forward all-gathers the base), filled up with empty micro-batches."""
        B, t = self.B, self.t
        batches = [mine[i : i + B] for i in range(0, len(mine), B)]
        if t.fsdp:
            rounds = math.ceil(math.ceil(size / t.world) / B)
            empty = [(torch.tensor([self.pad]), torch.tensor([-100]))]
            batches += [empty] * (rounds - len(batches))
        return batches

    def micro_batch(self, examples, with_targets=False):
        """The summed token loss of a micro-batch (and its logits), padded or packed."""
        t = self.t
        if t.packing:
            ids, targets, packing = make_packed_batch(examples, t.s["maxLength"], self.pad, t.device)
        else:
            (ids, targets), packing = make_batch(examples, self.pad, t.device), None
        loss, logits = token_loss(t.model, ids, targets, t.autocast, packing)
        return (loss, logits, targets) if with_targets else (loss, logits)

    def begin_step(self, step, indices):
        chosen = [self.train[j] for j in indices]
        step_targets = count_targets(chosen)
        sums = [0.0]

        def run(batch):
            loss, _ = self.micro_batch(batch)
            (loss / step_targets).backward()
            sums[0] += float(loss.detach())

        mine = self.t.share(chosen)
        return StepPass(self._micro_batches(mine, len(chosen)), run, sums,
                        lambda summed: (summed[0] / step_targets, None),
                        sum(len(e[0]) for e in chosen))

    @torch.no_grad()
    def evaluate(self):
        """{loss (mean token loss), accuracy (token accuracy), exactMatchIds}; None when cancelled part-way."""
        t = self.t
        loss_sum = correct = count = 0.0
        for batch in self._micro_batches(t.share(self.evals), len(self.evals)):
            if t.world == 1 and t.cancelled():
                return None
            loss, logits, targets = self.micro_batch(batch, with_targets=True)
            counted = targets != -100
            loss_sum += float(loss)
            count += float(counted.sum())
            correct += float(((logits.argmax(-1) == targets) & counted).sum())
        loss_sum, correct, count = t.all_sum([loss_sum, correct, count])
        result = {"loss": loss_sum / count, "accuracy": correct / count, "exactMatchIds": None}
        # under FSDP every rank takes part in each forward pass
        if t.job.get("exactMatch") and (t.rank == 0 or t.fsdp):
            result["exactMatchIds"] = self.generate(t.job["exactMatch"])
        return result

    @torch.no_grad()
    def generate(self, exact_match):
        """Greedy answers (token ids, the end-of-turn token left out) of the exact-match sample's prompts:
        the worker decodes and compares them as the engine does. None when cancelled part-way."""
        t = self.t
        eos = set(exact_match["eosTokenIds"])
        answers = []
        for prompt in exact_match["prompts"]:
            if t.world == 1 and t.cancelled():
                return None
            ids = list(prompt)
            answer = []
            for _ in range(exact_match["maxTokens"]):
                with t.autocast():
                    logits = t.model(torch.tensor([ids], device=t.device))
                token = int(logits[0, -1].float().argmax())
                if token in eos:
                    break
                answer.append(token)
                ids.append(token)
            answers.append(answer)
        return answers

    def report(self, progress, row, figures, evaluation):
        loss = accuracy = None
        if evaluation is not None:
            loss, accuracy = evaluation["loss"], evaluation["accuracy"]
            if evaluation["exactMatchIds"] is not None:
                progress["exactMatchIds"] = evaluation["exactMatchIds"]
        progress["evalLoss"], progress["evalTokenAccuracy"] = loss, accuracy
        row.update({"eval_loss": loss, "eval_token_accuracy": accuracy, "eval_exact_match": None})
