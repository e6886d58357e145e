"""transformers + peft in place of svc's decoder (the job's `torchModel: "transformers"`), for
architectures svc does not implement (docs/gpu-training.md#transformers--peft).

The base model is transformers' AutoModelForCausalLM read from the model's folder; LoRA is peft's
(LoraConfig + get_peft_model) with svc's meaning: y = W x + (alpha / r) B (A x), no dropout, no bias,
"all-linear" as peft reads it (every linear layer but the output head). LoRA A starts from svc's
initialisation (lora.py: U(-1/sqrt(in), 1/sqrt(in)) from the engine's generator and the run's seed,
module by module in the model's order) instead of peft's kaiming-uniform, B at zero, so a model svc
also implements starts from the same adapter on either implementation. Everything else — data,
micro-batches, loss, clipping, AdamW, schedules, events, checkpoints — is the Trainer's, unchanged:
the factors are handed to it under the names peft saves them with (the ".default" adapter name left
out), and the adapter is written in the shared format (lora.save_adapter).

This is also how svc trains architectures its engine does not implement (GPT-2, GPT-NeoX, Mixtral...):
the job then has no block description, and the adapter's tensor names are whatever peft gives that
model's modules (checkpoints resume with lora.load_adapter(any_module=True)).
"""

import json
import math

import torch
from torch import nn

from .rng import Rng


def import_peft():
    try:
        import peft
        import transformers
    except Exception as error:  # absent, or failing to import against this torch
        raise ValueError(
            'the job asks for transformers + peft (hyperparameters.torchModel "transformers"), '
            f"which this Python cannot import: {error}") from error
    return transformers, peft


class PeftDecoder(nn.Module):
    """transformers' model with peft's LoRA, called as svc's Decoder is: logits of input ids."""

    def __init__(self, model_dir, dtype, gradient_checkpointing=False):
        super().__init__()
        transformers, _ = import_peft()
        # eager attention: float32 softmax on the CPU, the computation svc's decoder does
        self.base = transformers.AutoModelForCausalLM.from_pretrained(
            model_dir, dtype=dtype, attn_implementation="eager")
        if gradient_checkpointing:
            self.base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            self.base.enable_input_require_grads()
        self.peft = None

    def forward(self, input_ids, packing=None):
        if packing is not None:
            raise ValueError('packing is not available with hyperparameters.torchModel "transformers"')
        return (self.peft or self.base)(input_ids=input_ids, use_cache=False).logits

    def attach_adapter(self, lora, seed):
        """Wraps the model with peft's LoRA, A from svc's initialisation; returns (spec, [(PEFT name,
        parameter)]) as lora.init_adapter + lora.attach do for svc's decoder."""
        _, peft = import_peft()
        targets = lora["targetModules"]
        all_linear = targets == "all-linear" or list(targets) == ["all-linear"]
        config = peft.LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=0.0, bias="none",
                                 target_modules="all-linear" if all_linear else list(targets),
                                 task_type="CAUSAL_LM")
        try:
            self.peft = peft.get_peft_model(self.base, config)
        except ValueError as error:  # e.g. target modules the model does not have, in peft's words
            raise ValueError(f"lora.targetModules {json.dumps(targets)}: peft refused them: {error}") from error
        rng = Rng(seed)
        params, names = [], []
        with torch.no_grad():
            for name, module in self.peft.named_modules():
                if not isinstance(module, peft.tuners.lora.LoraLayer):
                    continue
                if "default" not in module.lora_A:
                    # an embedding (or other non-linear) LoRA: factors svc's trainer and adapter format do not hold
                    raise ValueError(
                        f"lora.targetModules: {name.rsplit('.', 1)[-1]} ({type(module.base_layer).__name__} "
                        f"{name}) is not a linear layer; svc trains LoRA on linear layers only")
                a, b = module.lora_A["default"].weight, module.lora_B["default"].weight
                r, in_f = a.shape
                bound = 1 / math.sqrt(in_f)
                values = [(2 * rng.next() - 1) * bound for _ in range(r * in_f)]
                a.copy_(torch.tensor(values, dtype=torch.float64).view(r, in_f))
                b.zero_()
                params += [(f"{name}.lora_A.weight", a), (f"{name}.lora_B.weight", b)]
                leaf = name.rsplit(".", 1)[-1]
                if leaf not in names:
                    names.append(leaf)
        if not params:
            raise ValueError(f"lora.targetModules: {targets} matches no linear layer of this model")
        spec = {"r": lora["r"], "alpha": lora["alpha"], "targetModules": names}
        # peft turns this on for layers stored [in, out] (GPT-2's Conv1D); the saved config must say so
        if self.peft.peft_config["default"].fan_in_fan_out:
            spec["fanInFanOut"] = True
        return spec, params
