"""Preference tuning's objective (DPO's sigmoid loss with label smoothing, SimPO), as the engine's
preference-loss.ts and preference-step.ts define it.

The worker hands over the pairs the engine tokenized and fitted (trainTokens: each pair's chosen
then its rejected sequence, only the answer's tokens labelled) and the resolved settings
(job["preference"]: loss, beta, labelSmoothing, gamma). A sequence's log-probability is the sum of
its answer tokens' log-probabilities; a micro-batch holds batchSize pairs, their chosen and rejected
sequences side by side. The reference policy (DPO) is the same model with the adapter switched off
(lora.reference_policy), or the run's start adapter frozen when it has one, computed once per pair
the first time the pair is met, as the engine does.

  DPO:   z = beta * ((log pi(yw) - log ref(yw)) - (log pi(yl) - log ref(yl)))
  SimPO: z = beta / |yw| * log pi(yw) - beta / |yl| * log pi(yl) - gamma
  loss = (1 - eps) * -log sigmoid(z) + eps * -log sigmoid(-z), the step's mean over its pairs.
"""

import torch
import torch.nn.functional as F

from .batches import make_batch, target_logprobs
from .lora import load_adapter, reference_policy
from .tokens import read_tokens
from .trainer import StepPass


def read_pairs(path):
    sequences = read_tokens(path)
    if len(sequences) % 2:
        raise ValueError(f"{path}: {len(sequences)} sequences do not make chosen/rejected pairs")
    return [(sequences[i], sequences[i + 1]) for i in range(0, len(sequences), 2)]


class DpoObjective:
    def __init__(self, trainer):
        self.t = trainer
        job = trainer.job
        if trainer.world > 1 or trainer.packing or trainer.fsdp:
            raise ValueError("method dpo trains in one process, without packing or FSDP")
        # From a start adapter (an SFT run's), that adapter, frozen, is the reference; else the adapter off.
        self.frozen = load_adapter(job["startAdapter"])[1] if job.get("startAdapter") else None
        self.pref = job["preference"]
        self.pairs = read_pairs(job["trainTokens"])
        self.eval_pairs = read_pairs(job["evalTokens"]) if job.get("evalTokens") else []
        self.n = len(self.pairs)
        self.has_eval = bool(self.eval_pairs)
        self.pad = job["padTokenId"]
        self.B = trainer.s["batchSize"]
        # (chosen, rejected) reference log-probabilities per pair index, kept once computed
        self.reference = {}
        self.eval_reference = {}

    def pair_losses(self, pairs, indices, reference):
        """[loss, chosen reward, rejected reward] tensors over the pairs `indices` (the policy's
        log-probabilities differentiable) and the sequence log-probabilities."""
        t, p = self.t, self.pref
        sequences = [s for i in indices for s in pairs[i]]
        ids, targets = make_batch(sequences, self.pad, t.device)
        if p["loss"] == "sigmoid" and any(i not in reference for i in indices):
            with torch.no_grad(), reference_policy(t.model, self.frozen):
                ref, _ = target_logprobs(t.model, ids, targets, t.autocast)
            sums = ref.double().sum(-1).tolist()
            for k, i in enumerate(indices):
                reference.setdefault(i, (sums[2 * k], sums[2 * k + 1]))
        logprobs, mask = target_logprobs(t.model, ids, targets, t.autocast)
        policy = logprobs.double().sum(-1)  # in float64, as the engine sums a sequence's rows
        chosen, rejected = policy[0::2], policy[1::2]
        if p["loss"] == "simpo":
            counts = mask.sum(-1).to(policy.dtype)
            chosen_reward = p["beta"] / counts[0::2] * chosen
            rejected_reward = p["beta"] / counts[1::2] * rejected
        else:
            ref = torch.tensor([reference[i] for i in indices], dtype=policy.dtype, device=policy.device)
            chosen_reward = p["beta"] * (chosen - ref[:, 0])
            rejected_reward = p["beta"] * (rejected - ref[:, 1])
        z = chosen_reward - rejected_reward - p["gamma"]
        e = p["labelSmoothing"]
        losses = -(1 - e) * F.logsigmoid(z) - e * F.logsigmoid(-z)
        return losses, chosen_reward, rejected_reward

    @staticmethod
    def add(sums, losses, chosen, rejected):
        """sums: [loss, chosen reward, rejected reward, hits, pairs]; a tie counts half (the engine's meter)."""
        sums[0] += float(losses.detach().double().sum())
        sums[1] += float(chosen.detach().double().sum())
        sums[2] += float(rejected.detach().double().sum())
        hits = (chosen > rejected).double() + 0.5 * (chosen == rejected).double()
        sums[3] += float(hits.sum())
        sums[4] += len(losses)

    @staticmethod
    def figures(sums):
        n = sums[4] or 1
        return {"chosenReward": sums[1] / n, "rejectedReward": sums[2] / n,
                "margin": (sums[1] - sums[2]) / n, "accuracy": sums[3] / n}

    def begin_step(self, step, indices):
        sums = [0.0] * 5
        count = len(indices)

        def run(batch):
            losses, chosen, rejected = self.pair_losses(self.pairs, batch, self.reference)
            (losses.sum() / count).backward()
            self.add(sums, losses, chosen, rejected)

        tokens = sum(len(self.pairs[j][0][0]) + len(self.pairs[j][1][0]) for j in indices)
        batches = [indices[i : i + self.B] for i in range(0, count, self.B)]
        return StepPass(batches, run, sums, lambda s: (s[0] / (s[4] or 1), self.figures(s)), tokens)

    @torch.no_grad()
    def evaluate(self):
        """The preference figures over the eval pairs, with their mean loss; None when cancelled part-way."""
        sums = [0.0] * 5
        for start in range(0, len(self.eval_pairs), self.B):
            if self.t.cancelled():
                return None
            batch = list(range(start, min(len(self.eval_pairs), start + self.B)))
            self.add(sums, *self.pair_losses(self.eval_pairs, batch, self.eval_reference))
        return {"loss": sums[0] / (sums[4] or 1), **self.figures(sums)}

    def report(self, progress, row, figures, evaluation):
        progress["evalLoss"] = row["eval_loss"] = evaluation["loss"] if evaluation else None
        progress["preference"] = row["rewards"] = figures
        progress["evalPreference"] = row["eval_rewards"] = evaluation
