// Every kernel but SGEMM, included by each ISA translation unit after gemm.h.
// Rows (or heads, or element chunks) go to the pool; inner loops run over vf
// vectors with a scalar tail, so any size is legal.

static inline long round_up(long a, long b) { return ceil_div(a, b) * b; }

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
  float* partial = dw ? svc_scratch(3, (size_t)tasks * dim) : nullptr;
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

// kt[d * ld + s] = k[s * stride + d] for s < L, zero-padded to ld (a multiple of W).
static void transpose_rows(const float* k, long stride, long L, long D, float* kt, long ld) {
  for (long s = 0; s < L; s++)
    for (long d = 0; d < D; d++) kt[d * ld + s] = k[s * stride + d];
  for (long d = 0; d < D; d++)
    for (long s = L; s < ld; s++) kt[d * ld + s] = 0.f;
}

// sc[s] = scale * sum_d qd[d] * kt[d][s] for s < n (vectors over s; kt padded to ld).
static inline void scores_row(const float* qd, const float* kt, long ld, long D, long n, float scale,
                              float* sc) {
  long s = 0;
  for (; s + 2 * W <= round_up(n, W); s += 2 * W) {
    vf a0 = vf{}, a1 = vf{};
    for (long d = 0; d < D; d++) {
      vf qv = vset1(qd[d]);
      a0 += qv * vload(kt + d * ld + s);
      a1 += qv * vload(kt + d * ld + s + W);
    }
    vstore(sc + s, a0 * scale);
    vstore(sc + s + W, a1 * scale);
  }
  for (; s < n; s += W) {
    vf a0 = vf{};
    for (long d = 0; d < D; d++) a0 += qd[d] * vload(kt + d * ld + s);
    vstore(sc + s, a0 * scale);
  }
}

static void attention_forward(const float* q, const float* k, const float* v, float* out, float* lse,
                              long T, long S, long nHeads, long nKv, long D, float scale,
                              long kvStride) {
  if (T <= 0) return;
  long group = nHeads / nKv;
  long TB = T >= 64 ? 64 : T;
  long nblocks = ceil_div(T, TB);
  par(nHeads * nblocks, [&](long task) {
    long h = task / nblocks, t0 = (task % nblocks) * TB, t1 = min_l(T, t0 + TB);
    long kh = h / group;
    long L = S - T + t1;  // keys visible to the block's last query
    long ld = round_up(L, 2 * W);
    float* kt = svc_scratch(0, (size_t)D * ld);
    float* sc = svc_scratch(1, (size_t)ld);
    transpose_rows(k + kh * D, kvStride, L, D, kt, ld);
    for (long t = t0; t < t1; t++) {
      long n = S - T + t + 1;
      const float* qr = q + (t * nHeads + h) * D;
      float* orow = out + (t * nHeads + h) * D;
      scores_row(qr, kt, ld, D, n, scale, sc);
      float mx = sc[0];
      for (long s = 1; s < n; s++) mx = sc[s] > mx ? sc[s] : mx;
      vf sumv = vf{};
      long s = 0;
      for (; s + W <= n; s += W) {
        vf p = vexp(vload(sc + s) - mx);
        vstore(sc + s, p);
        sumv += p;
      }
      float sum = hsum(sumv);
      for (; s < n; s++) {
        sc[s] = sexp(sc[s] - mx);
        sum += sc[s];
      }
      for (long d = 0; d < D; d++) orow[d] = 0.f;
      for (s = 0; s < n; s++) axpy(orow, v + s * kvStride + kh * D, sc[s], D);
      float inv = 1.0f / sum;
      for (long d = 0; d < D; d++) orow[d] *= inv;
      if (lse) lse[h * T + t] = (float)(mx + slog(sum));
    }
  });
}

static void attention_backward(const float* dOut, const float* q, const float* k, const float* v,
                               const float* out, const float* lse, float* dq, float* dk, float* dv,
                               long T, long nHeads, long nKv, long D, float scale) {
  if (T <= 0) return;
  long group = nHeads / nKv, stride = nKv * D;
  long ld = round_up(T, 2 * W);
  // Per query head: dK and dV partials, transposed [D][ld], summed over the group after.
  float* part = svc_scratch(2, (size_t)nHeads * 2 * D * ld);
  par(nHeads, [&](long h) {
    long kh = h / group;
    float* kt = svc_scratch(0, (size_t)2 * D * ld);
    float* vt = kt + D * ld;
    float* p = svc_scratch(1, (size_t)2 * ld);
    float* ds = p + ld;
    float* dkt = part + h * 2 * D * ld;
    float* dvt = dkt + D * ld;
    for (long i = 0; i < 2 * D * ld; i++) dkt[i] = 0.f;
    transpose_rows(k + kh * D, stride, T, D, kt, ld);
    transpose_rows(v + kh * D, stride, T, D, vt, ld);
    for (long t = 0; t < T; t++) {
      long n = t + 1, nv = round_up(n, W);
      long qo = (t * nHeads + h) * D;
      const float* qr = q + qo;
      const float* dor = dOut + qo;
      float Dt = dot(dor, out + qo, D);
      float l = lse[h * T + t];
      scores_row(qr, kt, ld, D, n, scale, p);
      scores_row(dor, vt, ld, D, n, 1.0f, ds);  // ds <- dp = dOut_t . v_s
      for (long s = 0; s < nv; s += W) {
        vf pv = vexp(vload(p + s) - l);
        vstore(p + s, pv);
        vstore(ds + s, pv * (vload(ds + s) - Dt) * scale);
      }
      for (long s = n; s < nv; s++) p[s] = ds[s] = 0.f;  // lanes past the causal edge
      float* dqr = dq + qo;
      for (long d = 0; d < D; d++) dqr[d] = 0.f;
      for (long s = 0; s < n; s++) axpy(dqr, k + s * stride + kh * D, ds[s], D);
      for (long d = 0; d < D; d++) {
        float* dvd = dvt + d * ld;
        float* dkd = dkt + d * ld;
        vf dov = vset1(dor[d]), qv = vset1(qr[d]);
        for (long s = 0; s < nv; s += W) {
          vstore(dvd + s, vload(dvd + s) + vload(p + s) * dov);
          vstore(dkd + s, vload(dkd + s) + vload(ds + s) * qv);
        }
      }
    }
  });
  par(nKv, [&](long kh) {
    for (long s = 0; s < T; s++)
      for (long d = 0; d < D; d++) {
        float sk = 0.f, sv = 0.f;
        for (long h = kh * group; h < (kh + 1) * group; h++) {
          sk += part[h * 2 * D * ld + d * ld + s];
          sv += part[h * 2 * D * ld + D * ld + d * ld + s];
        }
        dk[s * stride + kh * D + d] = sk;
        dv[s * stride + kh * D + d] = sv;
      }
  });
}

static double cross_entropy(const float* logits, const int32_t* targets, long rows, long vocab,
                            float* dLogits, float gradScale) {
  float* loss = svc_scratch(3, (size_t)rows);
  par_range(rows, ceil_div(65536, vocab + 1), [&](long r0, long r1) {
    for (long r = r0; r < r1; r++) {
      const float* lr = logits + r * vocab;
      float* dr = dLogits ? dLogits + r * vocab : nullptr;
      long target = targets[r];
      if (target < 0) {
        loss[r] = 0.f;
        if (dr)
          for (long i = 0; i < vocab; i++) dr[i] = 0.f;
        continue;
      }
      vf mv = vset1(-__builtin_inff());
      long i = 0;
      for (; i + W <= vocab; i += W) mv = vmax(mv, vload(lr + i));
      float mx = hmax(mv);
      for (; i < vocab; i++) mx = lr[i] > mx ? lr[i] : mx;
      vf sv = vf{};
      i = 0;
      for (; i + W <= vocab; i += W) sv += vexp(vload(lr + i) - mx);
      double sum = hsum(sv);
      for (; i < vocab; i++) sum += sexp(lr[i] - mx);
      double logz = mx + slog(sum);
      float tl = lr[target];
      loss[r] = (float)(logz - tl);
      if (dr) {
        float lz = (float)logz;
        i = 0;
        for (; i + W <= vocab; i += W) vstore(dr + i, gradScale * vexp(vload(lr + i) - lz));
        for (; i < vocab; i++) dr[i] = gradScale * sexp(lr[i] - lz);
        dr[target] -= gradScale;
      }
    }
  });
  double total = 0;
  for (long r = 0; r < rows; r++) total += loss[r];
  return total;
}

static void adamw(float* __restrict p, const float* __restrict g, float* __restrict m,
                  float* __restrict v, long n, float lr, float beta1, float beta2, float eps,
                  float weightDecay, float bc1, float bc2) {
  par_range(n, 65536, [&](long i0, long i1) {
    float decay = 1.0f - lr * weightDecay, step = lr / bc1, rbc2 = 1.0f / bc2;
    for (long i = i0; i < i1; i++) {
      float gi = g[i];
      float mi = beta1 * m[i] + (1.0f - beta1) * gi;
      float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      p[i] = p[i] * decay - step * mi / (__builtin_sqrtf(vi * rbc2) + eps);
    }
  });
}
