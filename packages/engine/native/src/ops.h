// Every kernel but SGEMM, included by each ISA translation unit after gemm.h.
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

static void rope(float* x, const float* cos, const float* sin, const int32_t* pos, long T,
                 long nHeads, long headDim, bool inverse) {
  long half = headDim / 2;
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

// Softmax of one row of scores in place over its first n entries (the visible
// keys), zeroing the rest up to len; returns the sum of the exponentials (the
// row is left unnormalised) and writes the row maximum to *mx.
static inline float softmax_row(float* row, long n, long len, float* mx) {
  vf mv = vset1(-__builtin_inff());
  long s = 0;
  for (; s + W <= n; s += W) mv = vmax(mv, vload(row + s));
  float m = hmax(mv);
  for (; s < n; s++) m = row[s] > m ? row[s] : m;
  vf sv = vf{};
  s = 0;
  for (; s + W <= n; s += W) {
    vf p = vexp(vload(row + s) - m);
    vstore(row + s, p);
    sv += p;
  }
  float sum = hsum(sv);
  for (; s < n; s++) {
    row[s] = sexp(row[s] - m);
    sum += row[s];
  }
  for (; s < len; s++) row[s] = 0.f;
  *mx = m;
  return sum;
}

static inline void scale_row(float* row, long n, float f) {
  long i = 0;
  for (; i + W <= n; i += W) vstore(row + i, vload(row + i) * f);
  for (; i < n; i++) row[i] *= f;
}

constexpr long ATT_TB = 64;  // queries per attention block

// Prefill/training: per (head, block of queries) two GEMMs, S = Q·Kᵀ over the
// visible keys and O = softmax(S)·V, with the row softmax in between.
// Decode (T = 1): per KV head, the group's query rows against the cache as GEMVs.
static void attention_forward(const float* q, const float* k, const float* v, float* out, float* lse,
                              long T, long S, long nHeads, long nKv, long D, float scale,
                              long kvStride) {
  if (T <= 0) return;
  long group = nHeads / nKv, qs = nHeads * D;
  if (D == 0) {
    if (lse)
      for (long h = 0; h < nHeads; h++)
        for (long t = 0; t < T; t++) lse[h * T + t] = (float)slog((double)(S - T + t + 1));
    return;
  }
  if (T == 1) {
    par(nKv, [&](long kh) {
      float* sc = svc_scratch(SVC_SLOT_TASK, (size_t)group * S);
      float sums[4];
      for (long h0 = 0; h0 < group; h0 += 4) {
        long g = min_l(4, group - h0), h = kh * group + h0;
        gemv_rows(q + h * D, D, k + kh * D, kvStride, true, sc, S, 1, g, S, D, scale, false);
        for (long i = 0; i < g; i++) {
          float mx;
          sums[i] = softmax_row(sc + i * S, S, S, &mx);
          if (lse) lse[h + i] = (float)(mx + slog(sums[i]));
        }
        gemv_rows(sc, S, v + kh * D, kvStride, false, out + h * D, D, 1, g, D, S, 1.0f, false);
        for (long i = 0; i < g; i++) scale_row(out + (h + i) * D, D, 1.0f / sums[i]);
      }
    });
    return;
  }
  long nblocks = ceil_div(T, ATT_TB);
  par(nHeads * nblocks, [&](long task) {
    long h = task / nblocks, blk = nblocks - 1 - task % nblocks;  // longest blocks first
    long t0 = blk * ATT_TB, t1 = min_l(T, t0 + ATT_TB), tb = t1 - t0, kh = h / group;
    long L = S - T + t1;  // keys visible to the block's last query
    float* sc = svc_scratch(SVC_SLOT_TASK, (size_t)tb * L + tb);
    float* sums = sc + tb * L;
    const float* qb = q + (t0 * nHeads + h) * D;
    float* ob = out + (t0 * nHeads + h) * D;
    gemm_blocked(View{qb, qs, 1}, View{k + kh * D, 1, kvStride}, sc, L, 1, tb, L, D, scale, false);
    for (long r = 0; r < tb; r++) {
      float mx;
      sums[r] = softmax_row(sc + r * L, S - T + t0 + r + 1, L, &mx);
      if (lse) lse[h * T + t0 + r] = (float)(mx + slog(sums[r]));
    }
    gemm_blocked(View{sc, L, 1}, View{v + kh * D, kvStride, 1}, ob, qs, 1, tb, D, L, 1.0f, false);
    for (long r = 0; r < tb; r++) scale_row(ob + r * qs, D, 1.0f / sums[r]);
  });
}

// Per head, per block of queries (keys up to the block's end), recomputing the
// probabilities from the saved log-sum-exp:
//   P = exp(Q·Kᵀ·scale − lse), dP = dO·Vᵀ, dS = P∘(dP − rowsum(dO∘O))·scale,
//   dQ = dS·K, dK += dSᵀ·Q, dV += Pᵀ·dO.
// dK and dV go to per-head partials, summed over each GQA group at the end, so
// tasks never write the same memory.
static void attention_backward(const float* dOut, const float* q, const float* k, const float* v,
                               const float* out, const float* lse, float* dq, float* dk, float* dv,
                               long T, long nHeads, long nKv, long D, float scale) {
  if (T <= 0 || D == 0) return;
  long group = nHeads / nKv, kvs = nKv * D, qs = nHeads * D;
  long nblocks = ceil_div(T, ATT_TB);
  float* part = svc_scratch(SVC_SLOT_CALLER, (size_t)nHeads * 2 * T * D);
  par(nHeads, [&](long h) {
    long kh = h / group;
    float* dkh = part + h * 2 * T * D;
    float* dvh = dkh + T * D;
    for (long i = 0; i < 2 * T * D; i++) dkh[i] = 0.f;
    for (long blk = 0; blk < nblocks; blk++) {
      long t0 = blk * ATT_TB, t1 = min_l(T, t0 + ATT_TB), tb = t1 - t0, L = t1;
      float* P = svc_scratch(SVC_SLOT_TASK, (size_t)2 * tb * L + tb);
      float* dS = P + tb * L;
      float* Dt = dS + tb * L;
      long off = (t0 * nHeads + h) * D;
      View Qb{q + off, qs, 1}, dOb{dOut + off, qs, 1};
      gemm_blocked(Qb, View{k + kh * D, 1, kvs}, P, L, 1, tb, L, D, scale, false);
      gemm_blocked(dOb, View{v + kh * D, 1, kvs}, dS, L, 1, tb, L, D, 1.0f, false);
      for (long r = 0; r < tb; r++) {
        long t = t0 + r, n = t + 1;
        Dt[r] = dot(dOut + off + r * qs, out + off + r * qs, D);
        float l = lse[h * T + t];
        float* pr = P + r * L;
        float* dr = dS + r * L;
        long s = 0;
        for (; s + W <= n; s += W) {
          vf p = vexp(vload(pr + s) - l);
          vstore(pr + s, p);
          vstore(dr + s, p * (vload(dr + s) - Dt[r]) * scale);
        }
        for (; s < n; s++) {
          pr[s] = sexp(pr[s] - l);
          dr[s] = pr[s] * (dr[s] - Dt[r]) * scale;
        }
        for (; s < L; s++) pr[s] = dr[s] = 0.f;
      }
      gemm_blocked(View{dS, L, 1}, View{k + kh * D, kvs, 1}, dq + off, qs, 1, tb, D, L, 1.0f, false);
      gemm_blocked(View{dS, 1, L}, Qb, dkh, D, 1, L, D, tb, 1.0f, true);
      gemm_blocked(View{P, 1, L}, dOb, dvh, D, 1, L, D, tb, 1.0f, true);
    }
  });
  par(nKv, [&](long kh) {
    for (long s = 0; s < T; s++) {
      float* dkr = dk + s * kvs + kh * D;
      float* dvr = dv + s * kvs + kh * D;
      for (long d = 0; d < D; d++) dkr[d] = dvr[d] = 0.f;
      for (long h = kh * group; h < (kh + 1) * group; h++) {
        axpy(dkr, part + h * 2 * T * D + s * D, 1.0f, D);
        axpy(dvr, part + h * 2 * T * D + T * D + s * D, 1.0f, D);
      }
    }
  });
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
