"""Micro-batches as the engine's makeBatch builds them, and the losses read from their logits."""

import torch
import torch.nn.functional as F


def make_batch(examples, pad, device):
    """Right-padded input ids [B, T] and shifted targets (-100 where nothing is predicted), as makeBatch."""
    T = max(len(e[0]) for e in examples)
    ids = torch.full((len(examples), T), pad, dtype=torch.long)
    targets = torch.full((len(examples), T), -100, dtype=torch.long)
    for b, (input_ids, labels) in enumerate(examples):
        n = len(input_ids)
        ids[b, :n] = torch.as_tensor(input_ids)
        if n > 1:
            targets[b, : n - 1] = torch.as_tensor(labels[1:n])
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


def target_logprobs(model, ids, targets, autocast):
    """log p of every target token [B, T] (0 where there is none) and the mask of targets: minus each
    row's cross-entropy, as the engine reads a sequence's log-probability from its rows."""
    with autocast():
        logits = model(ids)
    logits = logits.float()
    B, T, V = logits.shape
    ce = F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-100, reduction="none")
    mask = targets != -100
    return -ce.view(B, T) * mask, mask
