"""RoPE inverse frequencies and attention factors, as transformers 5 computes them.

Every function takes one *standardized* rope-parameter dict (see configs.py:
what `RotaryEmbeddingConfigMixin.standardize_rope_params` leaves in
`config.rope_parameters[...]`) and returns (inv_freq float32 [rot_dim/2],
attention_factor). cos/sin are then, per position p (float32):

    freqs = p * inv_freq ; emb = cat(freqs, freqs) ; cos = cos(emb) * attention_factor
                                                    sin = sin(emb) * attention_factor

and q/k are rotated with rotate_half on their first rot_dim features
(rot_dim = int(head_dim * partial_rotary_factor), the rest passes through).

Formulas (transformers 5 src/transformers/modeling_rope_utils.py):
  default : inv = 1 / theta ** (arange(0, d, 2) / d)                       af = 1
  linear  : inv = default / factor                                          af = 1
  llama3  : wavelen = 2*pi / inv; lo = omax / low_freq_factor, hi = omax / high_freq_factor
            wavelen > lo -> inv / factor; wavelen < hi -> inv;
            otherwise s = (omax / wavelen - low_ff) / (high_ff - low_ff),
            (1 - s) * inv / factor + s * inv                                af = 1
  yarn    : pos = theta ** (arange(0, d, 2) / d); extrap = 1/pos, interp = 1/(factor*pos)
            corr(n) = d * ln(omax / (n * 2 * pi)) / (2 * ln theta)
            low = corr(beta_fast or 32), high = corr(beta_slow or 1); when truncate
            (default True): low = floor(low), high = ceil(high); low = max(low, 0),
            high = min(high, d - 1); if low == high: high += 0.001
            ramp = clamp((arange(d/2) - low) / (high - low), 0, 1); e = 1 - ramp
            inv = interp * (1 - e) + extrap * e
            factor defaults to max_position_embeddings / omax when absent;
            af = attention_factor or (mscale and mscale_all_dim:
                 m(factor, mscale) / m(factor, mscale_all_dim)) or m(factor),
            m(s, k=1) = 1 if s <= 1 else 0.1 * k * ln(s) + 1
  longrope: ext = long_factor if seq_len > omax else short_factor
            inv = 1 / (ext * theta ** (arange(0, d, 2) / d))
            factor = rope_parameters.factor, else max_position_embeddings / omax;
            af = attention_factor or (1 if factor <= 1 else sqrt(1 + ln(factor) / ln(omax)))
            (omax = original_max_position_embeddings; for Phi-3 the top-level config key
            wins over the one inside rope_parameters). seq_len is max(position_ids) + 1 of
            the forward call: transformers' dynamic_rope_update swaps inv_freq per call.
"""

import math

import torch


def _exponents(dim):
    return torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim


def default_inv_freq(theta, dim):
    return 1.0 / (theta ** _exponents(dim))


def rope_init(p, head_dim, max_position_embeddings, seq_len=None):
    """(inv_freq, attention_factor) for one standardized rope-parameter dict."""
    kind = p.get("rope_type", "default")
    theta = p["rope_theta"]
    dim = int(head_dim * p.get("partial_rotary_factor", 1.0))
    if kind == "default":
        return default_inv_freq(theta, dim), 1.0
    if kind == "linear":
        inv = default_inv_freq(theta, dim)
        inv /= p["factor"]
        return inv, 1.0
    if kind == "llama3":
        inv = default_inv_freq(theta, dim)
        factor, low_ff, high_ff = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
        omax = p["original_max_position_embeddings"]
        low_wl, high_wl = omax / low_ff, omax / high_ff
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > low_wl, inv / factor, inv)
        smooth = (omax / wavelen - low_ff) / (high_ff - low_ff)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        return torch.where(medium, smoothed, inv_l), 1.0
    if kind == "yarn":
        return _yarn(p, theta, dim, max_position_embeddings)
    if kind == "longrope":
        omax = p["original_max_position_embeddings"]
        factor = p.get("factor")
        if factor is None:
            factor = max_position_embeddings / omax
        af = p.get("attention_factor")
        if af is None:
            af = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(omax))
        ext = p["long_factor"] if seq_len and seq_len > omax else p["short_factor"]
        ext = torch.tensor(ext, dtype=torch.float32)
        shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
        return 1.0 / (ext * theta ** shape), af
    raise ValueError(f"rope_type {kind!r} is not implemented by the reference")


def _yarn(p, theta, dim, max_position_embeddings):
    omax = p["original_max_position_embeddings"]
    factor = p.get("factor")
    if factor is None:
        factor = max_position_embeddings / omax

    def mscale(scale, k=1):
        return 1.0 if scale <= 1 else 0.1 * k * math.log(scale) + 1.0

    af = p.get("attention_factor")
    if af is None:
        ms, msa = p.get("mscale"), p.get("mscale_all_dim")
        af = float(mscale(factor, ms) / mscale(factor, msa)) if ms and msa else mscale(factor)
    beta_fast = p.get("beta_fast") or 32
    beta_slow = p.get("beta_slow") or 1

    def corr(rot):
        return (dim * math.log(omax / (rot * 2 * math.pi))) / (2 * math.log(theta))

    low, high = corr(beta_fast), corr(beta_slow)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    pos = theta ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    extrap, interp = 1.0 / pos, 1.0 / (factor * pos)
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    e = 1 - ramp
    return interp * (1 - e) + extrap * e, af


def cos_sin(inv_freq, attention_factor, T):
    """cos, sin [T, rot_dim] for positions 0..T-1, as the rotary modules compute them."""
    pos = torch.arange(T, dtype=torch.float32)
    freqs = (inv_freq[:, None].float() @ pos[None, :]).transpose(0, 1)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_factor, emb.sin() * attention_factor
