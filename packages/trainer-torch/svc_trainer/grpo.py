"""GRPO's objective (engine: grpo-train.ts, grpo-step.ts, grpo-objective.ts), one step at a time:

1. sample numGenerations completions of each of the step's prompts under the adapter as it stands
   (this backend's own sampling: a group decoded together, temperature and top-p, each completion
   from its own generator seeded as the engine seeds it; the end-of-turn token ends it and is one
   of its trained tokens), up to maxCompletionTokens and maxLength;
2. ask the worker to score them (a "score" event on stdout, its "scores" reply on stdin): the worker
   decodes them, runs the job's graders, and answers with the engine's group advantages, zero-group
   flags and reward figures, or an error that fails the job (nothing is trained on a bad reward);
3. push the clipped surrogate plus beta * k3 (the reference: the adapter off, or the start adapter
   frozen) through every kept completion token, normalised per token or per sequence over the
   whole step, in micro-batches of batchSize groups; a zero group is not run.

The prompts (job["grpo"]["prompts"], and an eval set's evalPrompts, sampled evalGenerations times
each at every eval and scored the same way) are the engine's tokenization (preparePrompts). A test may give
job["grpo"]["fixedCompletions"] (per step, the completions' token ids in sampling order) to switch
sampling off; everything else is the same path.
"""

import time

import torch

from .batches import make_batch, target_logprobs
from .lora import load_adapter, reference_policy
from .trainer import StepPass

M32 = 0xFFFFFFFF


def sample_token(logits, temperature, top_p, generator):
    """One token of a row's float32 logits (on the CPU): greedy at temperature 0, else drawn from the
    tempered softmax restricted to the smallest set of tokens whose probability reaches top_p."""
    if temperature == 0:
        return int(logits.argmax())
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1:
        sorted_probs, order = probs.sort(descending=True)
        keep = sorted_probs.cumsum(-1) - sorted_probs < top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1, generator=generator))


class GrpoObjective:
    def __init__(self, trainer):
        self.t = trainer
        job = trainer.job
        if trainer.world > 1 or trainer.packing or trainer.fsdp:
            raise ValueError("method grpo trains in one process, without packing or FSDP")
        if trainer.ask is None:
            raise ValueError("method grpo needs its worker to score completions (--stdin-commands)")
        g = job["grpo"]
        self.g = g["settings"]
        self.prompts = g["prompts"]
        self.eos = set(g["eosTokenIds"])
        self.fixed = g.get("fixedCompletions")
        self.n = len(self.prompts)
        # the held-out prompts (an eval set), sampled evalGenerations times each at every eval
        self.eval_prompts = g.get("evalPrompts") or []
        self.has_eval = bool(self.eval_prompts)
        self.pad = job["padTokenId"]
        self.B = trainer.s["batchSize"]
        # From a start adapter, that adapter, frozen, is the reference (on resume too); else the adapter off.
        self.frozen = None
        if job.get("startAdapter") and self.g["beta"] > 0:
            self.frozen = load_adapter(job["startAdapter"])[1]

    @torch.no_grad()
    def sample(self, step, rows, prompts=None, G=None):
        """[(row, token ids)], G (numGenerations) per row in order; None when cancelled part-way."""
        t, s, g = self.t, self.t.s, self.g
        prompts = self.prompts if prompts is None else prompts
        G = g["numGenerations"] if G is None else G
        out = []
        for k, row in enumerate(rows):
            prompt = prompts[row]
            max_tokens = min(g["maxCompletionTokens"], s["maxLength"] - len(prompt))
            generators = [torch.Generator().manual_seed((s["seed"] * 1_000_003 + step * 7919 + k * G + i) & M32)
                          for i in range(G)]
            ids = torch.tensor([prompt] * G, dtype=torch.long, device=t.device)
            completions = [[] for _ in range(G)]
            done = [False] * G
            for _ in range(max_tokens):
                if t.cancelled():
                    return None
                with t.autocast():
                    logits = t.model(ids)[:, -1].float().cpu()
                column = []
                for i in range(G):
                    token = self.pad if done[i] else sample_token(logits[i], g["temperature"], g["topP"], generators[i])
                    if not done[i]:
                        completions[i].append(token)
                        done[i] = token in self.eos
                    column.append(token)
                if all(done):
                    break
                ids = torch.cat([ids, torch.tensor(column, device=t.device)[:, None]], dim=1)
            out += [(row, c) for c in completions]
        return out

    def begin_step(self, step, rows):
        t, g = self.t, self.g
        G = g["numGenerations"]
        began = time.perf_counter()
        if self.fixed is not None:
            sampled = [(row, list(c)) for row, c in zip([r for r in rows for _ in range(G)], self.fixed[step])]
        else:
            sampled = self.sample(step, rows)
            if sampled is None:
                return None
        generation = time.perf_counter() - began
        scoring_began = time.perf_counter()
        reply = t.ask({"type": "score", "step": step + 1,
                       "completions": [{"row": row, "tokenIds": ids} for row, ids in sampled]})
        if reply is None:
            return None
        if reply.get("error"):
            raise ValueError(reply["error"])
        scoring = time.perf_counter() - scoring_began
        advantages, zero_groups = reply["advantages"], reply["zeroGroups"]
        kept = [i for i in range(len(sampled)) if not zero_groups[i // G]]
        batch_tokens = sum(len(sampled[i][1]) for i in kept)
        batch_kept = len(kept)
        # sums: loss, k3 over kept tokens, clipped tokens
        sums = [0.0, 0.0, 0.0]
        batches = []
        for g0 in range(0, len(zero_groups), self.B):
            members = [i for i in kept if g0 <= i // G < g0 + self.B]
            if members:
                batches.append(members)

        def run(members):
            examples = [self.prompts[sampled[i][0]] + sampled[i][1] for i in members]
            labels = [[-100] * len(self.prompts[sampled[i][0]]) + sampled[i][1] for i in members]
            ids, targets = make_batch(list(zip(examples, labels)), self.pad, t.device)
            a = torch.tensor([advantages[i] for i in members], dtype=torch.float32, device=t.device)[:, None]
            ref = None
            if g["beta"] > 0:
                with torch.no_grad(), reference_policy(t.model, self.frozen):
                    ref, _ = target_logprobs(t.model, ids, targets, t.autocast)
            lp, mask = target_logprobs(t.model, ids, targets, t.autocast)
            ratio = torch.exp(lp - lp.detach())  # the old policy is the one that sampled: 1, its gradient not
            bounded = ratio.clamp(1 - g["epsilon"], 1 + g["epsilonHigh"])
            unclipped, clipped = ratio * a, bounded * a
            # the smaller term carries the gradient; a tie is the ratio's (grpo-objective.ts)
            through_ratio = unclipped <= clipped
            value = -torch.where(through_ratio, unclipped, clipped)
            if ref is not None:
                d = ref - lp
                k3 = torch.exp(d) - d - 1
                value = value + g["beta"] * k3
                sums[1] += float((k3.detach() * mask).double().sum())
            if g["normalization"] == "token":
                scale = 1.0 / batch_tokens
            else:
                scale = 1.0 / (batch_kept * mask.sum(-1, keepdim=True).to(value.dtype))
            loss = (value * mask * scale).sum()
            loss.backward()
            sums[0] += float(loss.detach())
            sums[2] += float((~through_ratio & mask).sum())

        def result(summed):
            total_tokens = sum(len(c) for _, c in sampled)
            figures = dict(reply["figures"])
            figures["kl"] = (summed[1] / batch_tokens if batch_tokens else 0) if g["beta"] > 0 else None
            figures["completionLength"] = total_tokens / len(sampled)
            figures["clipFraction"] = summed[2] / batch_tokens if batch_tokens else 0
            timing = {"generation": generation, "scoring": scoring,
                      "update": time.perf_counter() - update_began}
            return summed[0], (figures, timing, time.perf_counter() - began, total_tokens)

        update_began = time.perf_counter()
        return StepPass(batches, run, sums, result, sum(len(c) for _, c in sampled))

    def evaluate(self):
        """The eval set's reward figures, as the engine's evaluateGrpo: each eval prompt sampled
        evalGenerations times under the adapter as it stands, with the seeds' step -1 (no training step
        has it, so every eval draws the same seeds), scored by the worker; None when cancelled."""
        t = self.t
        sampled = self.sample(-1, list(range(len(self.eval_prompts))), self.eval_prompts, self.g["evalGenerations"])
        if sampled is None:
            return None
        reply = t.ask({"type": "score", "set": "eval", "step": t.last_step,
                       "completions": [{"row": row, "tokenIds": ids} for row, ids in sampled]})
        if reply is None:
            return None
        if reply.get("error"):
            raise ValueError(reply["error"])
        return {"loss": None, **reply["figures"]}

    def report(self, progress, row, figures, evaluation):
        metrics, timing, elapsed, tokens = figures
        progress["grpo"] = metrics
        progress["timing"] = timing
        progress["evalGrpo"] = None if evaluation is None else {k: v for k, v in evaluation.items() if k != "loss"}
        # completion tokens per second over the whole step, sampling and scoring included (the engine's)
        progress["tokensPerSecond"] = tokens / elapsed if elapsed > 0 else 0
        row["grpo"] = {k: v for k, v in metrics.items() if k != "samples"}
        if evaluation is not None:
            row["eval_grpo"] = progress["evalGrpo"]
