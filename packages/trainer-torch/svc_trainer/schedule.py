"""Learning-rate schedules as Hugging Face's get_scheduler defines them (the engine's schedule.ts): a
multiplier of the base rate for the optimizer step that follows `step` completed steps."""

import math


def lr_multiplier(kind, step, warmup, total):
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    if kind == "constant":
        return 1.0
    if kind == "linear":
        return max(0.0, (total - step) / max(1, total - warmup))
    if kind == "cosine":
        return max(0.0, 0.5 * (1 + math.cos(math.pi * progress)))
    raise ValueError(f'lrSchedulerType must be "linear", "cosine" or "constant" (got {kind!r})')


def learning_rate_at(kind, base, step, warmup, total):
    return base * lr_multiplier(kind, step, warmup, total)
