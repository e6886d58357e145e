"""Training checkpoints in the engine's format (docs/gpu-training.md#checkpoints), so either backend resumes
the other's: the PEFT adapter, trainer_state.json (the step, where the data order stands, the log
history) and optimizer.safetensors (AdamW's moments as m.<tensor> and v.<tensor>, flat, with the
optimizer's step in the metadata)."""

import json
import os

import torch

from .lora import load_adapter, save_adapter
from .safetensors_io import read_safetensors, write_safetensors


def write_checkpoint(directory, spec, params, optimizer, state, base_model):
    save_adapter(directory, spec, params, *base_model)
    with open(os.path.join(directory, "trainer_state.json"), "w") as f:
        f.write(json.dumps(state, indent=2) + "\n")
    moments = []
    step = 0
    for name, p in params:
        st = optimizer.state.get(p, {})
        m = st.get("exp_avg", torch.zeros_like(p))
        v = st.get("exp_avg_sq", torch.zeros_like(p))
        step = int(float(st.get("step", 0))) if st else step
        moments += [(f"m.{name}", m.reshape(-1)), (f"v.{name}", v.reshape(-1))]
    write_safetensors(os.path.join(directory, "optimizer.safetensors"), moments, {"step": str(step)})


def load_start_adapter(directory, spec, params, any_module=False):
    """Copies a PEFT adapter's weights into params (a job's startAdapter): the run keeps its fresh
    optimizer and starts at step 0. An adapter of another LoRA shape is refused naming both."""
    saved_spec, tensors = load_adapter(directory, any_module)
    if (saved_spec["r"] != spec["r"] or saved_spec["alpha"] != spec["alpha"]
            or sorted(saved_spec["targetModules"]) != sorted(spec["targetModules"])):
        raise ValueError(f"{directory}: the start adapter has LoRA {json.dumps(saved_spec)}, this run has {json.dumps(spec)}")
    with torch.no_grad():
        for name, p in params:
            if name not in tensors:
                raise ValueError(f"{directory}/adapter_model.safetensors: no {name} (an adapter of another model?)")
            p.copy_(tensors[name].view_as(p))


def restore_checkpoint(directory, spec, params, optimizer, expect, any_module=False):
    """Loads the adapter and the optimizer's moments into params/optimizer; returns the trainer state.
    A checkpoint of another run (examples, batch, seed, LoRA) is refused naming what differs.
    any_module: the adapter's factors may sit on any module path (transformers + peft)."""
    state_file = os.path.join(directory, "trainer_state.json")
    if not os.path.exists(state_file):
        raise ValueError(f"{state_file}: not found (resumeFrom must be a checkpoint folder)")
    with open(state_file) as f:
        state = json.load(f)

    def mismatch(what, was, now):
        return ValueError(f"{state_file}: the checkpoint was made with {what} {json.dumps(was)}, this run has {json.dumps(now)}")

    if state["train_examples"] != expect["n"]:
        raise mismatch("train examples", state["train_examples"], expect["n"])
    if state["samples_per_step"] != expect["samples_per_step"]:
        raise mismatch("batchSize × gradientAccumulationSteps", state["samples_per_step"], expect["samples_per_step"])
    if state["seed"] != expect["seed"]:
        raise mismatch("seed", state["seed"], expect["seed"])
    saved_spec, tensors = load_adapter(directory, any_module)
    if (saved_spec["r"] != spec["r"] or saved_spec["alpha"] != spec["alpha"]
            or sorted(saved_spec["targetModules"]) != sorted(spec["targetModules"])):
        raise mismatch("LoRA", saved_spec, spec)
    optim_file = os.path.join(directory, "optimizer.safetensors")
    moments, metadata = read_safetensors(optim_file)
    step = int(metadata.get("step", "-1"))
    if step != state["global_step"]:
        raise ValueError(f"{optim_file}: optimizer step {step} ≠ global_step {state['global_step']}")
    with torch.no_grad():
        for name, p in params:
            if name not in tensors:
                raise ValueError(f"{directory}/adapter_model.safetensors: no {name} (a checkpoint of another model?)")
            p.copy_(tensors[name].view_as(p))
            m, v = moments.get(f"m.{name}"), moments.get(f"v.{name}")
            if m is None or v is None or m.numel() != p.numel() or v.numel() != p.numel():
                raise ValueError(f"{optim_file}: missing or mis-shaped moments for {name}")
            if step > 0:
                optimizer.state[p] = {
                    "step": torch.tensor(float(step)),
                    "exp_avg": m.view_as(p).to(p.device).clone(),
                    "exp_avg_sq": v.view_as(p).to(p.device).clone(),
                }
    return state
