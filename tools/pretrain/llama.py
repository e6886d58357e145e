"""The pretraining model: a Llama built by svc's torch backend (packages/trainer-torch)
from the config.json this recipe exports, so it is the decoder the engine reads from
that file (the engine parses the config; svc_trainer builds the block it describes),
with every weight trainable. HF parameter names, so the state dict exports to
model.safetensors as it is.

  x (B, T) -> embed_tokens -> N x [x + attn(rmsnorm(x)); x + mlp(rmsnorm(x))] -> norm
  -> lm_head (tied to embed_tokens) -> logits (B, T, vocab)

Needs node and the built repo (the engine reads the config): `npx tsc -b`.
"""

import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "packages" / "trainer-torch"))
from svc_trainer.describe import describe  # noqa: E402
from svc_trainer.model import Decoder  # noqa: E402


@dataclass
class LlamaConfig:
    vocab_size: int = 4096
    hidden_size: int = 256
    intermediate_size: int = 688
    num_hidden_layers: int = 6
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 512
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    initializer_range: float = 0.02

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def to_dict(self) -> dict:
        return asdict(self)


def hf_config(cfg: LlamaConfig) -> dict:
    """config.json as the recipe exports it (tied embeddings, no biases, default rope)."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": cfg.max_position_embeddings,
        "rms_norm_eps": cfg.rms_norm_eps,
        "rope_theta": cfg.rope_theta,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "initializer_range": cfg.initializer_range,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "use_cache": True,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "pad_token_id": 0,
    }


class LlamaForCausalLM(Decoder):
    def __init__(self, cfg: LlamaConfig):
        super().__init__(describe(hf_config(cfg)), trainable=True)
        self.cfg = cfg
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                    p.fill_(1.0)
                else:
                    p.normal_(mean=0.0, std=cfg.initializer_range)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
