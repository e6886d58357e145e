"""Tokenized examples as the worker writes them (docs/gpu-training.md#the-job-file): little-endian
int32 values — the example count n, n lengths, then every example's input ids, then every example's
labels (-100 where no loss is taken), in example order."""

import torch


def read_tokens(path):
    """[(input_ids, labels)] as int32 tensors (views of one buffer)."""
    with open(path, "rb") as f:
        data = torch.frombuffer(bytearray(f.read()), dtype=torch.int32)
    n = int(data[0])
    lengths = data[1 : 1 + n].tolist()
    total = sum(lengths)
    if data.numel() != 1 + n + 2 * total:
        raise ValueError(f"{path}: {data.numel()} values, expected {1 + n + 2 * total} for {n} examples")
    ids = data[1 + n : 1 + n + total]
    labels = data[1 + n + total :]
    out, offset = [], 0
    for length in lengths:
        out.append((ids[offset : offset + length], labels[offset : offset + length]))
        offset += length
    return out
