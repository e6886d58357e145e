"""FSDP for a base model whose weights do not fit one GPU (the job's `fsdp`; docs/gpu-training.md).

The frozen base is sharded across the ranks with PyTorch's FSDP2 (`fully_shard`, one unit per
decoder layer and one for the embeddings, final norm and head): each rank keeps 1/world of every
base weight and all-gathers a layer's weights for its forward and backward. The LoRA factors are
left out of the sharding (`ignored_params`): they are small, every rank holds them whole, and the
trainer all-reduces their gradients as in plain data parallelism, so the optimizer, clipping and
checkpoints (written by rank 0) are the same code and the same format as without FSDP.

Every rank must run the same number of forward and backward passes (each one all-gathers), so a
rank whose share of a step is shorter runs empty micro-batches (see Trainer).
"""

import inspect

import torch
import torch.distributed as dist

MINIMUM_TORCH = "2.7"


def fully_shard_api():
    """torch.distributed.fsdp.fully_shard with ignored_params, or a clear refusal."""
    try:
        from torch.distributed.fsdp import fully_shard
    except Exception:  # absent, or (torch 1.13 on Python 3.11) failing to import at all
        fully_shard = None
    if fully_shard is None or "ignored_params" not in inspect.signature(fully_shard).parameters:
        raise ValueError(
            f"FSDP needs PyTorch {MINIMUM_TORCH} or later (fully_shard with ignored_params); "
            f"this Python has torch {torch.__version__}")
    return fully_shard


def shard_base(model, lora_params, device):
    """Shards the model's frozen weights over the process group and puts the LoRA factors, whole,
    on `device`. The base may still be on the CPU: fully_shard moves each rank's shards to the mesh's
    device, so no rank ever holds the whole model on its GPU."""
    fully_shard = fully_shard_api()
    if not dist.is_initialized() or dist.get_world_size() < 2:
        raise ValueError("FSDP needs at least 2 processes (svc worker --gpus N with N >= 2, or torchrun)")
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    ignored = set(lora_params)
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh, ignored_params=ignored)
    fully_shard(model, mesh=mesh, ignored_params=ignored)
    with torch.no_grad():
        for p in lora_params:
            p.data = p.data.to(device)
