"""A frozen base weight held int8 (the job's `baseWeights: "int8"`; docs/training-precision.md).

The serving formats' int8 layout (docs/serving-formats.md, the engine's quant/int8.ts): one fp32
scale per output channel, scale = max|row| / 127, each weight rounded to the nearest multiple of it
(a half rounds up, as the engine's Math.round does), symmetric, no zero point, so w = q * scale
within scale / 2. Weight-only quantization: each product dequantizes the whole matrix in the compute
dtype (bf16 under bf16 autocast, fp32 otherwise), multiplies, and lets the dequantized copy go; the
backward dequantizes again for the input gradient instead of keeping the copy, so a layer's base
costs a quarter of its fp32 bytes between products. The int8 weight has no gradient.
"""

import torch
import torch.nn.functional as F
from torch import nn


def quantize_int8(w):
    """(q int8 [out, in], scale fp32 [out]) of a float matrix, value for value the engine's quantizeInt8."""
    w = w.detach().float()
    scale = w.abs().amax(dim=1) / 127
    inv = torch.where(scale > 0, 1 / scale, torch.zeros_like(scale))
    q = torch.floor(w * inv[:, None] + 0.5).clamp_(-127, 127).to(torch.int8)
    return q, scale


def compute_dtype(x):
    """The dtype a product with x runs in: autocast's on x's device where it is on, else x's."""
    kind = x.device.type
    if kind not in ("cuda", "cpu"):
        return x.dtype
    if hasattr(torch, "get_autocast_dtype"):  # PyTorch 2.4 and later take the device type
        return torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else x.dtype
    if kind == "cuda":
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else x.dtype
    return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else x.dtype


class _Int8Matmul(torch.autograd.Function):
    """y = x W^T with W = q * scale dequantized in `dtype`; the backward recomputes W for dx = dy W."""

    @staticmethod
    def forward(ctx, x, q, scale, dtype):
        ctx.save_for_backward(q, scale)
        ctx.dtype, ctx.x_dtype = dtype, x.dtype
        return F.linear(x.to(dtype), dequantize(q, scale, dtype))

    @staticmethod
    def backward(ctx, dy):
        q, scale = ctx.saved_tensors
        dx = dy.to(ctx.dtype) @ dequantize(q, scale, ctx.dtype)
        return dx.to(ctx.x_dtype), None, None, None


def dequantize(q, scale, dtype):
    # widened in fp32 (q * scale rounds once), then rounded to the compute dtype
    return (q.float() * scale[:, None]).to(dtype)


class Int8Weight(nn.Module):
    """A frozen [out, in] matrix as int8 rows and their fp32 scales (buffers: they move with the
    model's device and have no gradient; keep them out of a dtype cast, see cast_float_parameters)."""

    def __init__(self, weight):
        super().__init__()
        q, scale = quantize_int8(weight)
        self.register_buffer("q", q.to(weight.device))
        self.register_buffer("scale", scale.to(weight.device))

    def linear(self, x, bias=None):
        # under autocast the custom function sees autocast's dtype, and runs outside it (no second cast)
        dtype = compute_dtype(x)
        with torch.autocast(x.device.type, enabled=False):
            y = _Int8Matmul.apply(x, self.q, self.scale, dtype)
        return y if bias is None else y + bias.to(y.dtype)


def cast_float_parameters(model, dtype):
    """Casts the model's parameters (embeddings, norms, biases, unquantized weights) to dtype and leaves
    its buffers alone: an int8 weight's scales stay fp32 (model.to(dtype=...) would round them)."""
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point() and p.dtype != dtype:
                p.data = p.data.to(dtype)
