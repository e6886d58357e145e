// Rotary embeddings as transformers 5 computes them (modeling_rope_utils.py):
// the inverse frequencies and attention factor of each rope type, read from
// the Hub's classic keys (rope_theta + rope_scaling) or transformers 5's
// rope_parameters. Values follow torch's float32 arithmetic step by step.
import { EngineError } from "../errors.js";
import type { RopeParams, RopeSpec } from "./types.js";

const f32 = Math.fround;

/** Keys a rope parameter object may hold; anything else changes the computation in a way we do not know. */
const ROPE_KEYS = new Set([
  "rope_type",
  "type",
  "rope_theta",
  "factor",
  "low_freq_factor",
  "high_freq_factor",
  "original_max_position_embeddings",
  "attention_factor",
  "beta_fast",
  "beta_slow",
  "mscale",
  "mscale_all_dim",
  "truncate",
  "long_factor",
  "short_factor",
  "partial_rotary_factor",
]);

export interface RopeContext {
  file: string;
  /** Where the parameters sit, for errors, e.g. "rope_parameters.sliding_attention". */
  where: string;
  headDim: number;
  maxPositionEmbeddings: number;
  /** The config's top-level partial_rotary_factor (rope parameters may override it). */
  partialRotaryFactor: number;
  /** The config's top-level original_max_position_embeddings, if any (Phi-3 keeps it there). */
  originalMaxPositionEmbeddings?: number;
}

/** Rope parameters (rope_type plus its keys, rope_theta included) to inverse frequencies. */
export function parseRope(params: Record<string, unknown>, ctx: RopeContext): RopeSpec {
  const refuse = (why: string) =>
    new EngineError("unsupported_architecture", `${ctx.file}: ${ctx.where}: ${why}`, ctx.file);
  for (const key of Object.keys(params)) {
    if (!ROPE_KEYS.has(key)) throw refuse(`key "${key}" is not supported`);
  }
  const num = (key: string, fallback?: number): number => {
    const value = params[key] ?? fallback;
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      throw refuse(`"${key}" must be a positive number (got ${JSON.stringify(value)})`);
    }
    return value;
  };
  const type = String(params.rope_type ?? params.type ?? "default");
  const theta = num("rope_theta", 10000);
  const partial = num("partial_rotary_factor", ctx.partialRotaryFactor);
  const dim = Math.trunc(ctx.headDim * partial);
  if (dim < 2 || dim % 2 !== 0 || dim > ctx.headDim) {
    throw refuse(
      `rotary dimension ${dim} (head_dim ${ctx.headDim} × ${partial}) must be even and within the head`,
    );
  }
  const half = dim / 2;
  const { type: _older, ...given } = params;
  const givenOriginal = given.original_max_position_embeddings ?? ctx.originalMaxPositionEmbeddings;
  const source: RopeParams = {
    ...given,
    ...(givenOriginal === undefined ? {} : { original_max_position_embeddings: givenOriginal }),
    rope_type: type,
    rope_theta: theta,
  };
  // base ** (2i / dim), in float32 as torch computes it
  const posFreq = (i: number) => f32(theta ** f32((2 * i) / dim));
  const invFreq = new Float32Array(half);
  let attentionFactor = 1;
  switch (type) {
    case "default":
      for (let i = 0; i < half; i++) invFreq[i] = f32(1 / posFreq(i));
      break;
    case "linear": {
      const factor = num("factor");
      for (let i = 0; i < half; i++) invFreq[i] = f32(f32(1 / posFreq(i)) / factor);
      break;
    }
    case "llama3": {
      const factor = num("factor");
      const low = num("low_freq_factor");
      const high = num("high_freq_factor");
      const old = num("original_max_position_embeddings");
      const lowWavelen = old / low;
      const highWavelen = old / high;
      for (let i = 0; i < half; i++) {
        const inv = f32(1 / posFreq(i));
        const wavelen = f32((2 * Math.PI) / inv);
        if (wavelen < highWavelen) invFreq[i] = inv;
        else if (wavelen > lowWavelen) invFreq[i] = f32(inv / factor);
        else {
          const smooth = f32(f32(f32(old / wavelen) - low) / (high - low));
          invFreq[i] = f32(f32(f32(1 - smooth) * f32(inv / factor)) + f32(smooth * inv));
        }
      }
      break;
    }
    case "yarn": {
      const original = num(
        "original_max_position_embeddings",
        ctx.originalMaxPositionEmbeddings ?? ctx.maxPositionEmbeddings,
      );
      const factor = num("factor", ctx.maxPositionEmbeddings / original);
      const mscaleOf = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
      const given = params.attention_factor;
      if (given != null) attentionFactor = num("attention_factor");
      else {
        const mscale = params.mscale as number | undefined;
        const mscaleAll = params.mscale_all_dim as number | undefined;
        attentionFactor =
          mscale && mscaleAll ? mscaleOf(factor, mscale) / mscaleOf(factor, mscaleAll) : mscaleOf(factor);
      }
      const betaFast = (params.beta_fast as number) || 32;
      const betaSlow = (params.beta_slow as number) || 1;
      const truncate = params.truncate !== false;
      const correctionDim = (rotations: number) =>
        (dim * Math.log(original / (rotations * 2 * Math.PI))) / (2 * Math.log(theta));
      let low = correctionDim(betaFast);
      let high = correctionDim(betaSlow);
      if (truncate) {
        low = Math.floor(low);
        high = Math.ceil(high);
      }
      low = Math.max(low, 0);
      high = Math.min(high, dim - 1);
      if (low === high) high += 0.001;
      for (let i = 0; i < half; i++) {
        const pos = posFreq(i);
        const extrapolation = f32(1 / pos);
        const interpolation = f32(1 / f32(factor * pos));
        const ramp = Math.min(1, Math.max(0, f32(f32(i - low) / f32(high - low))));
        const extrapolationFactor = f32(1 - ramp);
        invFreq[i] = f32(
          f32(interpolation * f32(1 - extrapolationFactor)) + f32(extrapolation * extrapolationFactor),
        );
      }
      break;
    }
    case "longrope": {
      // short_factor for a sequence within the original context, long_factor
      // past it (transformers picks per forward pass, by the sequence's length)
      const original = ctx.originalMaxPositionEmbeddings ?? num("original_max_position_embeddings");
      const factors = (key: string): number[] => {
        const v = params[key];
        if (!Array.isArray(v) || v.length !== half || v.some((x) => typeof x !== "number")) {
          throw refuse(`"${key}" must be a list of ${half} numbers`);
        }
        return v as number[];
      };
      const short = factors("short_factor");
      const long = factors("long_factor");
      const factor = num("factor", ctx.maxPositionEmbeddings / original);
      if (params.attention_factor != null) attentionFactor = num("attention_factor");
      else attentionFactor = factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(original));
      const longInv = new Float32Array(half);
      for (let i = 0; i < half; i++) {
        invFreq[i] = f32(1 / f32(f32(short[i]) * posFreq(i)));
        longInv[i] = f32(1 / f32(f32(long[i]) * posFreq(i)));
      }
      return {
        rotaryDim: dim,
        invFreq,
        attentionFactor,
        long: { invFreq: longInv, originalMaxPositions: original },
        params: source,
      };
    }
    default:
      throw refuse(`rope type "${type}" is not supported (default, linear, llama3, yarn, longrope)`);
  }
  return { rotaryDim: dim, invFreq, attentionFactor, params: source };
}

/** cos/sin tables [maxPos, rotaryDim/2] of a rope: angle = pos·invFreq in float32, times the attention factor. */
export function ropeTables(
  rope: Pick<RopeSpec, "rotaryDim" | "invFreq" | "attentionFactor">,
  maxPos: number,
): { cos: Float32Array; sin: Float32Array } {
  const half = rope.rotaryDim / 2;
  const cos = new Float32Array(maxPos * half);
  const sin = new Float32Array(maxPos * half);
  const factor = rope.attentionFactor;
  for (let i = 0; i < half; i++) {
    const inv = rope.invFreq[i];
    for (let p = 0; p < maxPos; p++) {
      const angle = f32(p * inv);
      cos[p * half + i] = factor === 1 ? Math.cos(angle) : f32(Math.cos(angle)) * factor;
      sin[p * half + i] = factor === 1 ? Math.sin(angle) : f32(Math.sin(angle)) * factor;
    }
  }
  return { cos, sin };
}
