// AdamW over a list of parameter arrays (PyTorch semantics, via kernels.adamw),
// with global-norm gradient clipping as torch.nn.utils.clip_grad_norm_ does it.
import { getKernels } from "../kernels/index.js";

export interface AdamWOptions {
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}

export class AdamW {
  readonly m: Float32Array[];
  readonly v: Float32Array[];
  /** Optimizer steps taken (the bias corrections use step + 1 for the next one). */
  step = 0;

  constructor(
    readonly params: Float32Array[],
    readonly options: AdamWOptions,
  ) {
    this.m = params.map((p) => new Float32Array(p.length));
    this.v = params.map((p) => new Float32Array(p.length));
  }

  /** One update with learning rate lr; grads align with params. */
  update(grads: Float32Array[], lr: number): void {
    const k = getKernels();
    const { beta1, beta2, eps, weightDecay } = this.options;
    this.step++;
    for (let i = 0; i < this.params.length; i++) {
      const p = this.params[i];
      k.adamw(p, grads[i], this.m[i], this.v[i], p.length, lr, beta1, beta2, eps, weightDecay, this.step);
    }
  }
}

/** The L2 norm of all gradients together (accumulated in float64). */
export function globalGradNorm(grads: Float32Array[]): number {
  let sum = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) sum += g[i] * g[i];
  return Math.sqrt(sum);
}

/**
 * Scales gradients so their global norm is at most maxNorm (no-op when
 * maxNorm <= 0); returns the norm before clipping.
 */
export function clipGradNorm(grads: Float32Array[], maxNorm: number): number {
  const norm = globalGradNorm(grads);
  if (maxNorm <= 0) return norm;
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) {
    const c = Math.fround(coef);
    for (const g of grads) for (let i = 0; i < g.length; i++) g[i] *= c;
  }
  return norm;
}
