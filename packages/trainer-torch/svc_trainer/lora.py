"""LoRA with PEFT's module names, tensor names and semantics, initialised as the engine does.

y = W x + (alpha / r) * B (A x) on each targeted module; "all-linear" targets
every linear layer but the output head. A starts as U(-1/sqrt(in), 1/sqrt(in))
drawn from the engine's generator with the run's seed (layer by layer, module
by module in the family's order), B as zeros, so both backends start a run
from the same adapter. Saved as PEFT saves it: adapter_config.json and
adapter_model.safetensors (lora_A [r, in], lora_B [out, r], names sorted).
"""

import json
import math
import os
import re
from contextlib import contextmanager

import torch
from torch import nn

from .model import module_shape
from .rng import Rng
from .safetensors_io import read_safetensors, write_safetensors


def tensor_name(layer, module, factor):
    return f"base_model.model.model.layers.{layer}.{module['parent']}.{module['name']}.lora_{factor}.weight"


def resolve_targets(desc, targets):
    names = [m["name"] for m in desc["modules"]]
    if targets == "all-linear" or list(targets) == ["all-linear"]:
        return names
    if not targets:
        raise ValueError("lora.targetModules must name at least one module")
    for t in targets:
        if t not in names:
            raise ValueError(
                f'lora.targetModules: "{t}" is not a linear layer of {desc["architecture"]} '
                f'(one of {", ".join(names)}, or "all-linear")')
    return [n for n in names if n in targets]


def init_adapter(desc, spec, seed):
    """{PEFT tensor name: float32 tensor} of a fresh adapter, value for value the engine's initLoraAdapter."""
    r = spec["r"]
    wanted = resolve_targets(desc, spec["targetModules"])
    modules = [m for m in desc["modules"] if m["name"] in wanted]
    rng = Rng(seed)
    tensors = {}
    for layer in range(desc["numHiddenLayers"]):
        for module in modules:
            out_f, in_f = module_shape(desc, module)
            bound = 1 / math.sqrt(in_f)
            values = [(2 * rng.next() - 1) * bound for _ in range(r * in_f)]
            tensors[tensor_name(layer, module, "A")] = torch.tensor(values, dtype=torch.float64).float().view(r, in_f)
            tensors[tensor_name(layer, module, "B")] = torch.zeros(out_f, r)
    return {"r": r, "alpha": spec["alpha"], "targetModules": wanted}, tensors


def attach(model, spec, tensors):
    """Puts the adapter's factors on the model's modules as trainable parameters; returns
    [(PEFT name, parameter)] in the adapter's tensor order (the optimizer's order)."""
    desc = model.desc
    scale = spec["alpha"] / spec["r"]
    modules = [m for m in desc["modules"] if m["name"] in spec["targetModules"]]
    params = []
    for layer in range(desc["numHiddenLayers"]):
        for module in modules:
            linear = getattr(getattr(model.model.layers[layer], module["parent"]), module["name"])
            a = nn.Parameter(tensors[tensor_name(layer, module, "A")].clone().to(linear.device))
            b = nn.Parameter(tensors[tensor_name(layer, module, "B")].clone().to(linear.device))
            linear.lora_A, linear.lora_B, linear.lora_scale = a, b, scale
            params += [(tensor_name(layer, module, "A"), a), (tensor_name(layer, module, "B"), b)]
    return params


@contextmanager
def reference_policy(model, frozen=None):
    """The model computes the reference policy inside: the adapter switched off (frozen None: the
    base model, no second copy of its weights), or a frozen adapter's factors ({PEFT name: tensor},
    a run's start adapter) in place of the trained ones. Used under torch.no_grad()."""
    if not hasattr(model, "desc"):
        raise ValueError('DPO and GRPO train svc\'s decoder (hyperparameters.torchModel "svc")')
    desc = model.desc
    views = []
    for layer in range(desc["numHiddenLayers"]):
        for module in desc["modules"]:
            linear = getattr(getattr(model.model.layers[layer], module["parent"]), module["name"])
            if linear.lora_A is None:
                continue
            if frozen is None:
                linear.lora_view = (None, None)
            else:
                a, b = (frozen[tensor_name(layer, module, f)].to(linear.lora_A.device) for f in "AB")
                linear.lora_view = (a.view_as(linear.lora_A), b.view_as(linear.lora_B))
            views.append(linear)
    try:
        yield
    finally:
        for linear in views:
            linear.lora_view = None


def peft_config(spec, base_model_name, revision=None):
    """adapter_config.json as the engine's saveAdapter writes it."""
    return {
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": base_model_name, "bias": "none",
        "fan_in_fan_out": bool(spec.get("fanInFanOut", False)), "inference_mode": True, "init_lora_weights": True, "layer_replication": None,
        "layers_pattern": None, "layers_to_transform": None, "loftq_config": {}, "lora_alpha": spec["alpha"],
        "lora_dropout": 0.0, "megatron_config": None, "megatron_core": "megatron.core", "modules_to_save": None,
        "peft_type": "LORA", "r": spec["r"], "rank_pattern": {}, "revision": revision,
        "target_modules": list(spec["targetModules"]), "task_type": "CAUSAL_LM", "use_dora": False,
        "use_rslora": False,
    }


def save_adapter(directory, spec, params, base_model_name, revision=None):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "adapter_config.json"), "w") as f:
        f.write(json.dumps(peft_config(spec, base_model_name, revision), indent=2) + "\n")
    ordered = sorted(((name, p.detach()) for name, p in params), key=lambda item: item[0])
    write_safetensors(os.path.join(directory, "adapter_model.safetensors"), ordered, {"format": "pt"})


NAME = re.compile(r"^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.([a-z_]+)\.lora_([AB])(?:\.default)?\.weight$")
# transformers + peft on any architecture: whatever module path peft gives the factor
ANY_MODULE_NAME = re.compile(r"^base_model\.model\..+\.lora_([AB])(?:\.default)?\.weight$")


def load_adapter(directory, any_module=False):
    """(spec, {PEFT tensor name: tensor}) of a saved adapter (PEFT's in-memory ".default" names accepted);
    any_module: factors of any module path (transformers + peft), not only svc's families' layout."""
    with open(os.path.join(directory, "adapter_config.json")) as f:
        config = json.load(f)
    tensors, _ = read_safetensors(os.path.join(directory, "adapter_model.safetensors"))
    out = {}
    for name, t in tensors.items():
        if not (ANY_MODULE_NAME if any_module else NAME).match(name):
            raise ValueError(f"{directory}/adapter_model.safetensors: {name} is not a LoRA factor name")
        out[name.replace(".default.weight", ".weight")] = t
    spec = {"r": config["r"], "alpha": config["lora_alpha"], "targetModules": list(config["target_modules"])}
    return spec, out
