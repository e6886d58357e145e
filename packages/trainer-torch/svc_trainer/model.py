"""A decoder of any family the engine computes, built from the engine's block description.

The description (docs/gpu-training.md#the-model) is the engine's ModelConfig as
JSON plus its family's checkpoint layout: which norms a layer has and their
checkpoint names, whether norm weights apply as (1 + w), the linear modules and
the projections ("slots") each covers, biases, q/k norms, the activation, the
rotary tables' inverse frequencies per rope (default, linear, llama3, yarn and
longrope, partial rotary), each layer's rope (or none) and attention window,
and the embedding, attention, residual and logit scales and the logit softcap.
Each residual branch is x += residualScale * outNorm?(branch(inNorm?(x))).

Parameter names are the checkpoint's (model.layers.3.self_attn.q_proj.weight),
so a model.safetensors loads with load_state_dict and LoRA factors carry PEFT's
names. Base weights are frozen for LoRA; trainable=True trains them all
(tools/pretrain pretrains its base model with it).
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .int8 import Int8Weight

LAYER_NORMS = ("attnNorm", "attnOutNorm", "mlpNorm", "mlpOutNorm")


def slot_sizes(desc):
    C, Fd, D = desc["hiddenSize"], desc["intermediateSize"], desc["headDim"]
    q, kv = desc["numAttentionHeads"] * D, desc["numKeyValueHeads"] * D
    return {"q": q, "k": kv, "v": kv, "o": C, "gate": Fd, "up": Fd, "down": C}


def module_shape(desc, module):
    """(out, in) of one checkpoint linear module; a fused module's out is its slots' sum."""
    sizes = slot_sizes(desc)
    first = module["slots"][0]
    inputs = {"o": desc["numAttentionHeads"] * desc["headDim"], "down": desc["intermediateSize"]}
    return sum(sizes[s] for s in module["slots"]), inputs.get(first, desc["hiddenSize"])


class Linear(nn.Module):
    """A checkpoint projection with an optional LoRA pair: y = W x + b + scale * B (A x)."""

    def __init__(self, out_features, in_features, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.lora_A = None
        self.lora_B = None
        self.lora_scale = 0.0
        # Another policy's factors in place of the trained ones for a reference pass (lora.reference_policy):
        # (None, None) is the adapter switched off, (A, B) a frozen adapter's.
        self.lora_view = None
        # The frozen weight held int8 in place of `weight` (quantize; baseWeights "int8").
        self.int8 = None

    @property
    def device(self):
        return (self.weight if self.weight is not None else self.int8.q).device

    def quantize(self):
        """Holds the frozen weight as int8 with per-row scales (int8.py) and drops the float copy."""
        self.int8 = Int8Weight(self.weight)
        self.register_parameter("weight", None)

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias) if self.int8 is None else self.int8.linear(x, self.bias)
        a, b = (self.lora_A, self.lora_B) if self.lora_view is None else self.lora_view
        if a is None:
            return y
        u = F.linear(x, a)  # [..., r]
        # y + scale * u B^T with the scale and the sum in the GEMM's epilogue (no passes over y of their own)
        return torch.addmm(y.flatten(0, -2), u.flatten(0, -2), b.t(), alpha=self.lora_scale).view(y.shape)


class RMSNorm(nn.Module):
    def __init__(self, size, eps, plus_one):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(size))
        self.eps = eps
        self.plus_one = plus_one

    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        w = (1.0 + self.weight.float()) if self.plus_one else self.weight.float()
        return (normed * w).to(x.dtype)


def _attach(root, dotted, module):
    """Sets root.<a>.<b> = module, making plain containers for missing parents."""
    parts = dotted.split(".")
    for part in parts[:-1]:
        if not hasattr(root, part):
            root.add_module(part, nn.Module())
        root = getattr(root, part)
    root.add_module(parts[-1], module)


class Layer(nn.Module):
    def __init__(self, desc, index):
        super().__init__()
        block = desc["block"]
        norms = desc["norms"]
        eps, plus_one = desc["rmsNormEps"], desc["normPlusOne"]
        C, D = desc["hiddenSize"], desc["headDim"]
        self.add_module("self_attn", nn.Module())
        self.add_module("mlp", nn.Module())
        self.norm_names = {}
        for role in LAYER_NORMS:
            if block[role]:
                _attach(self, norms[role], RMSNorm(C, eps, plus_one))
                self.norm_names[role] = norms[role]
        if block["qkNorm"] != "none":
            per_head = block["qkNorm"] == "head"
            for role, heads in (("qNorm", desc["numAttentionHeads"]), ("kNorm", desc["numKeyValueHeads"])):
                _attach(self, norms[role], RMSNorm(D if per_head else heads * D, eps, plus_one))
                self.norm_names[role] = norms[role]
        self.linears = {}
        for module in desc["modules"]:
            out_f, in_f = module_shape(desc, module)
            bias = any(s in block["biases"] for s in module["slots"])
            linear = Linear(out_f, in_f, bias)
            getattr(self, module["parent"]).add_module(module["name"], linear)
            self.linears[module["name"]] = (linear, module["slots"])
        self.desc = desc
        self.spec = desc["layers"][index]

    def _norm(self, role):
        name = self.norm_names.get(role)
        if name is None:
            return None
        m = self
        for part in name.split("."):
            m = getattr(m, part)
        return m

    def _slots(self, h, wanted):
        """{slot: output} for the slots named, running each module that covers one once."""
        sizes = slot_sizes(self.desc)
        out = {}
        for linear, slots in self.linears.values():
            if not any(s in wanted for s in slots):
                continue
            y = linear(h)
            parts = y.split([sizes[s] for s in slots], dim=-1) if len(slots) > 1 else (y,)
            out.update(zip(slots, parts))
        return out

    def forward(self, x, rope, layout=None):
        desc, block = self.desc, self.desc["block"]
        B, T, _ = x.shape
        Hq, Hkv, D = desc["numAttentionHeads"], desc["numKeyValueHeads"], desc["headDim"]
        norm = self._norm("attnNorm")
        h = norm(x) if norm is not None else x
        qkv = self._slots(h, ("q", "k", "v"))
        q, k, v = qkv["q"], qkv["k"], qkv["v"]
        if block["qkNorm"] == "projection":
            q, k = self._norm("qNorm")(q), self._norm("kNorm")(k)
        q = q.view(B, T, Hq, D).transpose(1, 2)
        k = k.view(B, T, Hkv, D).transpose(1, 2)
        v = v.view(B, T, Hkv, D).transpose(1, 2)
        if block["qkNorm"] == "head":
            q, k = self._norm("qNorm")(q), self._norm("kNorm")(k)
        if rope is not None:
            cos, sin = rope
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        att = attention(q, k, v, desc["attentionScale"], self.spec["window"], layout)
        o = self._slots(att.transpose(1, 2).reshape(B, T, Hq * D), ("o",))["o"]
        x = self._residual(x, o, "attnOutNorm")
        norm = self._norm("mlpNorm")
        h = norm(x) if norm is not None else x
        gu = self._slots(h, ("gate", "up"))
        gate = F.silu(gu["gate"]) if block["activation"] == "silu" else F.gelu(gu["gate"], approximate="tanh")
        m = self._slots(gate * gu["up"], ("down",))["down"]
        return self._residual(x, m, "mlpOutNorm")

    def _residual(self, x, branch, out_norm):
        norm = self._norm(out_norm)
        if norm is not None:
            branch = norm(branch)
        scale = self.desc["residualScale"]
        return x + (branch * scale if scale != 1 else branch)


def _sdpa_has_gqa():
    """Whether scaled_dot_product_attention takes enable_gqa (PyTorch 2.5 and later; a builtin, so by version)."""
    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 5)


GQA_IN_SDPA = _sdpa_has_gqa()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, cos, sin):
    # in x's dtype (bf16 under autocast, as transformers does), so attention keeps its flash kernels
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    rot = cos.shape[-1]
    if rot == x.shape[-1]:
        return x * cos + rotate_half(x) * sin
    xr, xp = x[..., :rot], x[..., rot:]
    return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)


def attention(q, k, v, scale, window, layout=None):
    """Causal attention (a query sees keys j <= i, and i - window < j with a window) in float32 scores.
    With a packed layout (positions, segments [B, T]) a query sees only its own sequence's keys,
    by their positions in it."""
    Hq, Hkv, T = q.shape[1], k.shape[1], q.shape[2]
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    # causal without a mask tensor goes to flash attention, which reads grouped heads in place where torch can
    flash = sdpa is not None and q.is_cuda and layout is None and not window
    grouped_in_place = flash and Hq != Hkv and GQA_IN_SDPA
    if Hq != Hkv and not grouped_in_place:
        k = k.repeat_interleave(Hq // Hkv, dim=1)
        v = v.repeat_interleave(Hq // Hkv, dim=1)
    if flash:
        return sdpa(q, k, v, is_causal=True, scale=scale, **({"enable_gqa": True} if grouped_in_place else {}))
    if layout is None:
        i = torch.arange(T, device=q.device)[:, None]
        j = torch.arange(T, device=q.device)[None, :]
        visible = j <= i
    else:
        positions, segments = layout
        i, j = positions[:, None, :, None], positions[:, None, None, :]
        visible = (segments[:, None, :, None] == segments[:, None, None, :]) & (j <= i)
    if window:
        visible = visible & (j > i - window)
    if sdpa is not None and q.is_cuda:
        return sdpa(q, k, v, attn_mask=visible, scale=scale)
    # fp32 scores and softmax under the CPU's bf16 autocast too (it would round these two matmuls to bf16)
    with torch.autocast("cpu", enabled=False):
        scores = (q.float() @ k.float().transpose(-1, -2)) * scale
        scores = scores.masked_fill(~visible, float("-inf"))
        return (torch.softmax(scores, dim=-1) @ v.float()).to(q.dtype)


class Decoder(nn.Module):
    def __init__(self, desc, trainable=False):
        super().__init__()
        self.desc = desc
        C, V = desc["hiddenSize"], desc["vocabSize"]
        self.add_module("model", nn.Module())
        self.model.add_module("embed_tokens", nn.Module())
        self.model.embed_tokens.weight = nn.Parameter(torch.zeros(V, C))
        self.model.add_module("layers", nn.ModuleList(Layer(desc, l) for l in range(desc["numHiddenLayers"])))
        self.model.add_module("norm", RMSNorm(C, desc["rmsNormEps"], desc["normPlusOne"]))
        if not desc["tieWordEmbeddings"]:
            self.add_module("lm_head", Linear(V, C, False))
        # A tied LM head's own int8 copy (quantize_base); the embedding table stays as it is.
        self.head_int8 = None
        self._tables = {}
        for p in self.parameters():
            p.requires_grad_(trainable)
        # Recompute each layer's activations in the backward pass instead of keeping them.
        self.gradient_checkpointing = False

    def quantize_base(self):
        """baseWeights "int8": every frozen projection and the LM head held int8 (int8.py), from the
        loaded weights; embeddings and norms keep their dtype. Called before LoRA is attached."""
        for layer in self.model.layers:
            for linear, _ in layer.linears.values():
                linear.quantize()
        if self.desc["tieWordEmbeddings"]:
            self.head_int8 = Int8Weight(self.model.embed_tokens.weight)
        else:
            self.lm_head.quantize()

    def compile_layers(self):
        """torch.compile each decoder layer: its elementwise work (norms, rope, activation, residuals)
        fused and far fewer kernel launches, which bound small models on a GPU. The layers share one
        compiled graph per shape (their weights are its inputs); a graph that fails to compile runs eager."""
        import torch._dynamo as dynamo

        dynamo.config.suppress_errors = True
        for limit in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                      "accumulated_recompile_limit"):
            if hasattr(dynamo.config, limit):
                setattr(dynamo.config, limit, max(getattr(dynamo.config, limit), 256))
        for layer in self.model.layers:
            layer.compile()

    def rope_tables(self, index, T, device):
        """cos, sin [T, rotaryDim] of one rope; longrope's long factors for a forward pass longer than
        its original context (T: the padded batch length, as the engine decides it)."""
        rope = self.desc["ropes"][index]
        long = rope.get("long")
        use_long = long is not None and T > long["originalMaxPositions"]
        key = (index, T, use_long, str(device))
        if key not in self._tables:
            inv = torch.tensor(long["invFreq"] if use_long else rope["invFreq"], dtype=torch.float32)
            pos = torch.arange(T, dtype=torch.float32)
            freqs = pos[:, None] * inv[None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            af = rope["attentionFactor"]
            self._tables[key] = ((emb.cos() * af).to(device), (emb.sin() * af).to(device))
        return self._tables[key]

    def forward(self, input_ids, packing=None):
        """Logits [B, T, V] of right-padded input ids [B, T] (padding never reaches a real token).
        packing: (positions, segments [B, T], rope_len) for rows holding several sequences, each
        at positions from 0 and seeing only itself; rope_len is the length longrope decides on
        (the padded length the same sequences would have unpacked)."""
        desc = self.desc
        B, T = input_ids.shape
        x = F.embedding(input_ids, self.model.embed_tokens.weight)
        if desc["embeddingScale"] != 1:
            x = x * desc["embeddingScale"]
        layout = None if packing is None else packing[:2]
        for l, layer in enumerate(self.model.layers):
            index = desc["layers"][l]["rope"]
            rope = None
            if index >= 0 and packing is None:
                rope = self.rope_tables(index, T, x.device)
            elif index >= 0:
                positions, _, rope_len = packing
                cos, sin = self.rope_tables(index, max(rope_len, int(positions.max()) + 1), x.device)
                rope = (cos[positions][:, None], sin[positions][:, None])
            if self.gradient_checkpointing and torch.is_grad_enabled():
                x = checkpoint(layer, x, rope, layout, use_reentrant=False)
            else:
                x = layer(x, rope, layout)
        x = self.model.norm(x)
        if not desc["tieWordEmbeddings"]:
            logits = self.lm_head(x)
        elif self.head_int8 is not None:
            logits = self.head_int8.linear(x)
        else:
            logits = F.linear(x, self.model.embed_tokens.weight)
        if desc["logitScale"] != 1:
            logits = logits * desc["logitScale"]
        cap = desc["finalLogitSoftcap"]
        if cap and cap > 0:
            logits = torch.tanh(logits / cap) * cap
        return logits

    def load_checkpoint(self, tensors, source="model.safetensors"):
        """Loads the checkpoint's tensors; every tensor the description implies must be there with its
        shape, and every tensor there must be one the model computes with."""
        own = {name: p for name, p in self.named_parameters() if ".lora_" not in name}
        missing = sorted(set(own) - set(tensors))
        extra = sorted(set(tensors) - set(own))
        if missing:
            raise ValueError(f"{source}: missing tensor {missing[0]}")
        if extra:
            raise ValueError(f"{source}: tensor {extra[0]} is not one this model computes with")
        with torch.no_grad():
            for name, p in own.items():
                t = tensors[name]
                if tuple(t.shape) != tuple(p.shape):
                    raise ValueError(f"{source}: tensor {name} has shape {list(t.shape)}, expected {list(p.shape)}")
                p.copy_(t)
