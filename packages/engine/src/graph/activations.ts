// The graph's per-layer activations and shared scratch, sized for N rows.
// Training keeps one set per layer for the backward pass; inference reuses one.
import type { ModelConfig } from "../families/index.js";

export interface LayerActivations {
  resid: Float32Array; // [N,C] the layer's input (residual stream)
  rstd1: Float32Array; // [N] attention input norm
  qPre: Float32Array; // [N,Q] q before its norm (q/k norms only)
  kPre: Float32Array; // [N,K]
  rstdQ: Float32Array; // [N*Hq] (per head) or [N]
  rstdK: Float32Array; // [N*Hkv] or [N]
  q: Float32Array; // [N,Q] after norm and RoPE
  k: Float32Array; // [N,K] after norm and RoPE
  v: Float32Array; // [N,K]
  att: Float32Array; // [N,Q] attention output, input of o_proj
  lse: Float32Array; // [N*Hq]
  attnOut: Float32Array; // [N,C] o_proj output before its norm (attnOutNorm only)
  rstd3: Float32Array; // [N]
  xmid: Float32Array; // [N,C] residual after attention
  rstd2: Float32Array; // [N] MLP input norm
  gate: Float32Array; // [N,F] pre-activation
  up: Float32Array; // [N,F]
  mlpOut: Float32Array; // [N,C] down_proj output before its norm (mlpOutNorm only)
  rstd4: Float32Array; // [N]
}

const EMPTY = new Float32Array(0);

/** Allocates n zeroed floats (Kernels.zeroedFloats where the kernels have it). */
export type Allocate = (n: number) => Float32Array<ArrayBuffer>;
const plain: Allocate = (n) => new Float32Array(n);

export function layerActivations(config: ModelConfig, N: number, alloc: Allocate = plain): LayerActivations {
  const {
    hiddenSize: C,
    intermediateSize: F,
    numAttentionHeads: Hq,
    numKeyValueHeads: Hkv,
    headDim: D,
  } = config;
  const Q = Hq * D;
  const K = Hkv * D;
  const b = config.block;
  const qk = b.qkNorm !== "none";
  return {
    resid: alloc(N * C),
    rstd1: new Float32Array(N),
    qPre: qk ? alloc(N * Q) : EMPTY,
    kPre: qk ? alloc(N * K) : EMPTY,
    rstdQ: qk ? alloc(N * Hq) : EMPTY,
    rstdK: qk ? alloc(N * Hkv) : EMPTY,
    q: alloc(N * Q),
    k: alloc(N * K),
    v: alloc(N * K),
    att: alloc(N * Q),
    lse: alloc(N * Hq),
    attnOut: b.attnOutNorm || config.residualScale !== 1 ? alloc(N * C) : EMPTY,
    rstd3: new Float32Array(N),
    xmid: alloc(N * C),
    rstd2: new Float32Array(N),
    gate: alloc(N * F),
    up: alloc(N * F),
    mlpOut: b.mlpOutNorm || config.residualScale !== 1 ? alloc(N * C) : EMPTY,
    rstd4: new Float32Array(N),
  };
}

/** Scratch shared by all layers (forward temporaries and backward gradients). */
export interface Scratch {
  final: Float32Array; // [N,C] residual after the last layer
  xf: Float32Array; // [N,C] final norm output
  rstdf: Float32Array; // [N]
  ln: Float32Array; // [N,C] a norm output (forward), recomputed in backward
  act: Float32Array; // [N,F]
  dact: Float32Array; // [N,F]
  dgate: Float32Array; // [N,F]
  dup: Float32Array; // [N,F]
  dres: Float32Array; // [N,C]
  dxmid: Float32Array; // [N,C]
  dtmp: Float32Array; // [N,C]
  dbranch: Float32Array; // [N,C]
  dln: Float32Array; // [N,C]
  datt: Float32Array; // [N,Q]
  dq: Float32Array; // [N,Q]
  dk: Float32Array; // [N,K]
  dv: Float32Array; // [N,K]
  dqPre: Float32Array; // [N,Q]
  dkPre: Float32Array; // [N,K]
  rstdTmp: Float32Array; // [N*Hq] throwaway rstd of recomputed norms
}

export function scratch(config: ModelConfig, N: number, training: boolean, alloc: Allocate = plain): Scratch {
  const {
    hiddenSize: C,
    intermediateSize: F,
    numAttentionHeads: Hq,
    numKeyValueHeads: Hkv,
    headDim: D,
  } = config;
  const Q = Hq * D;
  const K = Hkv * D;
  const grad = (n: number) => (training ? alloc(n) : EMPTY);
  const qk = training && config.block.qkNorm !== "none";
  return {
    final: alloc(N * C),
    xf: alloc(N * C),
    rstdf: new Float32Array(N),
    ln: alloc(N * C),
    act: alloc(N * F),
    dact: grad(N * F),
    dgate: grad(N * F),
    dup: grad(N * F),
    dres: grad(N * C),
    dxmid: grad(N * C),
    dtmp: alloc(N * C),
    dbranch: grad(N * C),
    dln: grad(N * C),
    datt: grad(N * Q),
    dq: grad(N * Q),
    dk: grad(N * K),
    dv: grad(N * K),
    dqPre: qk ? alloc(N * Q) : EMPTY,
    dkPre: qk ? alloc(N * K) : EMPTY,
    rstdTmp: new Float32Array(N * Math.max(Hq, 1)),
  };
}
