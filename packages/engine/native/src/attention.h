// Causal self-attention (forward and backward), included by each ISA
// translation unit after ops.h: per head, blocks of ATT_TB queries against the
// keys they see, as two GEMMs around a row softmax.

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

