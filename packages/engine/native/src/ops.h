// Every kernel but SGEMM (gemm.h) and attention (attention.h), included by each
// ISA translation unit after gemm.h.
// Rows (or heads, or element chunks) go to the pool; inner loops run over vf
// vectors with a scalar tail, so any size is legal.

// Splits [0, n) into chunks of at least `grain` items, at most 4 per thread.
template <class F>
static void par_range(long n, long grain, const F& f) {
  long tasks = min_l(ceil_div(n, grain), svc_num_threads() * 4L);
  if (tasks <= 1) {
    if (n > 0) f(0L, n);
    return;
  }
  par(tasks, [&](long t) { f(n * t / tasks, n * (t + 1) / tasks); });
}

static inline float dot(const float* a, const float* b, long n) {
  vf acc0 = vf{}, acc1 = vf{};
  long i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 += vload(a + i) * vload(b + i);
    acc1 += vload(a + i + W) * vload(b + i + W);
  }
  for (; i + W <= n; i += W) acc0 += vload(a + i) * vload(b + i);
  float s = hsum(acc0 + acc1);
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

// y[0..n) += alpha * x[0..n)
static inline void axpy(float* y, const float* x, float alpha, long n) {
  long i = 0;
  for (; i + W <= n; i += W) vstore(y + i, vload(y + i) + alpha * vload(x + i));
  for (; i < n; i++) y[i] += alpha * x[i];
}

static void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, long rows,
                            long dim, float eps) {
  par_range(rows, ceil_div(16384, dim + 1), [&](long r0, long r1) {
    for (long r = r0; r < r1; r++) {
      const float* xr = x + r * dim;
      float* yr = y + r * dim;
      float rs = 1.0f / __builtin_sqrtf(dot(xr, xr, dim) / (float)dim + eps);
      rstd[r] = rs;
      long i = 0;
      for (; i + W <= dim; i += W) vstore(yr + i, vload(xr + i) * rs * vload(w + i));
      for (; i < dim; i++) yr[i] = xr[i] * rs * w[i];
    }
  });
}

static void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                             float* dx, float* dw, long rows, long dim) {
  // Each task sums its rows' weight gradient privately; the partials are added
  // in task order afterwards, so the result does not depend on scheduling.
  long tasks = min_l(ceil_div(rows, ceil_div(16384, dim + 1)), svc_num_threads() * 4L);
  if (tasks < 1) tasks = 1;
  float* partial = dw ? svc_scratch(SVC_SLOT_CALLER, (size_t)tasks * dim) : nullptr;
  par(tasks, [&](long t) {
    long r0 = rows * t / tasks, r1 = rows * (t + 1) / tasks;
    float* pw = partial ? partial + t * dim : nullptr;
    if (pw)
      for (long i = 0; i < dim; i++) pw[i] = 0.f;
    for (long r = r0; r < r1; r++) {
      const float* dyr = dy + r * dim;
      const float* xr = x + r * dim;
      float* dxr = dx + r * dim;
      float rs = rstd[r];
      // dx = rs * w * dy - (rs^3 / dim) * x * sum(w * dy * x)
      vf accv = vf{};
      long i = 0;
      for (; i + W <= dim; i += W) accv += vload(w + i) * vload(dyr + i) * vload(xr + i);
      float acc = hsum(accv);
      for (; i < dim; i++) acc += w[i] * dyr[i] * xr[i];
      float coef = rs * rs * rs * acc / (float)dim;
      i = 0;
      for (; i + W <= dim; i += W) {
        vf xv = vload(xr + i), dyv = vload(dyr + i);
        vstore(dxr + i, rs * vload(w + i) * dyv - coef * xv);
        if (pw) vstore(pw + i, vload(pw + i) + dyv * xv * rs);
      }
      for (; i < dim; i++) {
        dxr[i] = rs * w[i] * dyr[i] - coef * xr[i];
        if (pw) pw[i] += dyr[i] * xr[i] * rs;
      }
    }
  });
  if (dw)
    for (long t = 0; t < tasks; t++) axpy(dw, partial + t * dim, 1.0f, dim);
}

// Partial rotary (rotaryDim < headDim) rotates the head's first rotaryDim dims
// and leaves the rest as they are; the tables are [maxPos, rotaryDim/2].
static void rope(float* x, const float* cos, const float* sin, const int32_t* pos, long T,
                 long nHeads, long headDim, bool inverse, long rotaryDim) {
  long half = rotaryDim / 2;
  float sign = inverse ? -1.f : 1.f;
  par_range(T, ceil_div(16384, nHeads * headDim + 1), [&](long t0, long t1) {
    for (long t = t0; t < t1; t++) {
      const float* c = cos + (long)pos[t] * half;
      const float* s = sin + (long)pos[t] * half;
      for (long h = 0; h < nHeads; h++) {
        float* x1 = x + (t * nHeads + h) * headDim;
        float* x2 = x1 + half;
        long i = 0;
        for (; i + W <= half; i += W) {
          vf a = vload(x1 + i), b = vload(x2 + i), cv = vload(c + i), sv = sign * vload(s + i);
          vstore(x1 + i, a * cv - b * sv);
          vstore(x2 + i, b * cv + a * sv);
        }
        for (; i < half; i++) {
          float a = x1[i], b = x2[i], sv = sign * s[i];
          x1[i] = a * c[i] - b * sv;
          x2[i] = b * c[i] + a * sv;
        }
      }
    }
  });
}

static inline vf vsigmoid(vf g) { return 1.0f / (1.0f + vexp(-g)); }

static void swiglu_forward(const float* gate, const float* up, float* out, long n) {
  par_range(n, 32768, [&](long i0, long i1) {
    long i = i0;
    for (; i + W <= i1; i += W) {
      vf g = vload(gate + i);
      vstore(out + i, g * vsigmoid(g) * vload(up + i));
    }
    for (; i < i1; i++) {
      float g = gate[i];
      out[i] = g / (1.0f + sexp(-g)) * up[i];
    }
  });
}

static void swiglu_backward(const float* dOut, const float* gate, const float* up, float* dGate,
                            float* dUp, long n) {
  par_range(n, 32768, [&](long i0, long i1) {
    long i = i0;
    for (; i + W <= i1; i += W) {
      vf g = vload(gate + i), d = vload(dOut + i), sig = vsigmoid(g);
      vf u = vload(up + i);
      vstore(dUp + i, d * g * sig);
      vstore(dGate + i, d * u * sig * (1.0f + g * (1.0f - sig)));
    }
    for (; i < i1; i++) {
      float g = gate[i], sig = 1.0f / (1.0f + sexp(-g));
      dUp[i] = dOut[i] * g * sig;
      dGate[i] = dOut[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
    }
  });
}

// gelu_tanh(x) = 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), computed as
// x·σ(2u) (the same function): one exp, and no cancellation in 1 + tanh(u) for
// negative x. x is clamped to ±40 inside σ, where σ is already exactly 0 or 1
// (vexp clamps its argument and saturates), so x³ never overflows.
constexpr float GELU_2BETA = 1.5957691216057308f;  // 2·√(2/π)
constexpr float GELU_KAPPA = 0.044715f;

// (Operands in this order keep a NaN: vmax/vmin return their second one on a NaN.)
static inline vf vgelu_clamp(vf x) { return vmin(vset1(40.f), vmax(vset1(-40.f), x)); }
static inline float sgelu_clamp(float x) { return x < -40.f ? -40.f : x > 40.f ? 40.f : x; }
// e^(-2u) of a clamped x: in [~1e-38, inf]; σ(2u) = 1 / (1 + e).
static inline vf vgelu_exp(vf xc) { return vexp(-GELU_2BETA * (xc + GELU_KAPPA * xc * xc * xc)); }
static inline float sgelu_exp(float xc) {
  return sexp(-GELU_2BETA * (xc + GELU_KAPPA * xc * xc * xc));
}

static void geglu_forward(const float* gate, const float* up, float* out, long n) {
  par_range(n, 32768, [&](long i0, long i1) {
    long i = i0;
    for (; i + W <= i1; i += W) {
      vf x = vload(gate + i);
      vstore(out + i, x / (1.0f + vgelu_exp(vgelu_clamp(x))) * vload(up + i));
    }
    for (; i < i1; i++) out[i] = gate[i] / (1.0f + sgelu_exp(sgelu_clamp(gate[i]))) * up[i];
  });
}

// d/dx x·σ(2u) = σ + x·σ·(1−σ)·2u', u' = √(2/π)·(1 + 3·0.044715·x²), with
// 1−σ = 1/(1 + 1/e) (not 1 − σ, which cancels where σ nears 1); e = inf gives
// σ = 0 and 1−σ = 1. Beyond the clamp the second term is below 1e-33.
static void geglu_backward(const float* dOut, const float* gate, const float* up, float* dGate,
                           float* dUp, long n) {
  par_range(n, 32768, [&](long i0, long i1) {
    long i = i0;
    for (; i + W <= i1; i += W) {
      vf x = vload(gate + i), xc = vgelu_clamp(x), e = vgelu_exp(xc);
      vf s = 1.0f / (1.0f + e), oms = 1.0f / (1.0f + 1.0f / e), d = vload(dOut + i);
      vf dg = s + xc * s * oms * GELU_2BETA * (1.0f + 3.0f * GELU_KAPPA * xc * xc);
      vstore(dUp + i, d * x * s);
      vstore(dGate + i, d * vload(up + i) * dg);
    }
    for (; i < i1; i++) {
      float x = gate[i], xc = sgelu_clamp(x), e = sgelu_exp(xc);
      float s = 1.0f / (1.0f + e), oms = 1.0f / (1.0f + 1.0f / e);
      float dg = s + xc * s * oms * GELU_2BETA * (1.0f + 3.0f * GELU_KAPPA * xc * xc);
      dUp[i] = dOut[i] * x * s;
      dGate[i] = dOut[i] * up[i] * dg;
    }
  });
}

// y[r, :] += alpha * bias[:]
static void add_bias(float* y, const float* bias, long rows, long dim, float alpha) {
  if (rows == 1) {  // one long row (the graph's residual-stream adds, y += alpha·x): split it
    par_range(dim, 32768, [&](long i0, long i1) { axpy(y + i0, bias + i0, alpha, i1 - i0); });
    return;
  }
  par_range(rows, ceil_div(32768, dim + 1), [&](long r0, long r1) {
    for (long r = r0; r < r1; r++) axpy(y + r * dim, bias, alpha, dim);
  });
}

static inline void scale_row(float* row, long n, float f) {
  long i = 0;
  for (; i + W <= n; i += W) vstore(row + i, vload(row + i) * f);
  for (; i < n; i++) row[i] *= f;
}

static double cross_entropy(const float* logits, const int32_t* targets, long rows, long vocab,
                            float* dLogits, float gradScale) {
  double* loss = reinterpret_cast<double*>(svc_scratch(SVC_SLOT_CALLER, (size_t)rows * 2));
  par_range(rows, ceil_div(65536, vocab + 1), [&](long r0, long r1) {
    for (long r = r0; r < r1; r++) {
      const float* lr = logits + r * vocab;
      float* dr = dLogits ? dLogits + r * vocab : nullptr;
      long target = targets[r];
      if (target < 0) {
        loss[r] = 0;
        if (dr)
          for (long i = 0; i < vocab; i++) dr[i] = 0.f;
        continue;
      }
      vf mv = vset1(-__builtin_inff());
      long i = 0;
      for (; i + W <= vocab; i += W) mv = vmax(mv, vload(lr + i));
      float mx = hmax(mv);
      for (; i < vocab; i++) mx = lr[i] > mx ? lr[i] : mx;
      float tl = lr[target];  // read first: dr may be lr itself
      vf sv = vf{};
      i = 0;
      if (dr) {  // one exp per logit: store exp(l - max), then scale by gradScale / sum
        for (; i + W <= vocab; i += W) {
          vf e = vexp(vload(lr + i) - mx);
          vstore(dr + i, e);
          sv += e;
        }
        double sum = hsum(sv);
        for (; i < vocab; i++) {
          dr[i] = sexp(lr[i] - mx);
          sum += dr[i];
        }
        scale_row(dr, vocab, (float)(gradScale / sum));
        dr[target] -= gradScale;
        loss[r] = mx + slog(sum) - tl;
      } else {
        for (; i + W <= vocab; i += W) sv += vexp(vload(lr + i) - mx);
        double sum = hsum(sv);
        for (; i < vocab; i++) sum += sexp(lr[i] - mx);
        loss[r] = mx + slog(sum) - tl;
      }
    }
  });
  double total = 0;
  for (long r = 0; r < rows; r++) total += loss[r];
  return total;
}

static inline vf vsqrt(vf x) {
  vf r;
  for (int l = 0; l < W; l++) r[l] = __builtin_sqrtf(x[l]);  // one vsqrtps / f32x4.sqrt
  return r;
}

static void adamw(float* p, const float* g, float* m, float* v, long n, float lr, float beta1,
                  float beta2, float eps, float weightDecay, float bc1, float bc2) {
  par_range(n, 65536, [&](long i0, long i1) {
    float decay = 1.0f - lr * weightDecay, step = lr / bc1, rbc2 = 1.0f / bc2;
    long i = i0;
    for (; i + W <= i1; i += W) {
      vf gi = vload(g + i);
      vf mi = beta1 * vload(m + i) + (1.0f - beta1) * gi;
      vf vi = beta2 * vload(v + i) + (1.0f - beta2) * gi * gi;
      vstore(m + i, mi);
      vstore(v + i, vi);
      vstore(p + i, vload(p + i) * decay - step * mi / (vsqrt(vi * rbc2) + eps));
    }
    for (; i < i1; i++) {
      float gi = g[i];
      float mi = beta1 * m[i] + (1.0f - beta1) * gi;
      float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      p[i] = p[i] * decay - step * mi / (__builtin_sqrtf(vi * rbc2) + eps);
    }
  });
}
