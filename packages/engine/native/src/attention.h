// Causal self-attention (forward and backward), included by each ISA
// translation unit after ops.h: per head, blocks of ATT_TB queries against the
// keys they see, as two GEMMs around a row softmax.
//
// A sliding window W > 0 limits the query at absolute position p to keys
// p-W < j <= p. Each block then starts its key range at its first query's
// first key, so keys no query of the block sees are never multiplied; inside
// that range the few masked scores are zeroed like the causal ones. The bounds
// are worked out per block and per row, never per element.

// The first key the query at absolute position p sees (window 0: none cut off).
static inline long first_key(long p, long window) {
  return window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
}

// Lanes i < n of a vector (n may be <= 0 or >= W).
static inline vi lanes_below(long n) {
  vi idx;
  for (int i = 0; i < W; i++) idx[i] = i;
  return idx < (int)(n < W ? (n > 0 ? n : 0) : W);
}

// Softmax of one row of scores in place over entries [a, n) (the visible keys),
// zeroing the rest of [0, len); returns the sum of the exponentials (the row is
// left unnormalised) and writes the row maximum to *mx. A ragged end of [a, n)
// is one masked vector where the row has room for it, not a scalar loop.
static inline float softmax_row(float* row, long a, long n, long len, float* mx) {
  for (long s = 0; s < a; s++) row[s] = 0.f;
  const vf ninf = vset1(-__builtin_inff());
  vf mv = ninf;
  long s = a;
  for (; s + W <= n; s += W) mv = vmax(mv, vload(row + s));
  bool vtail = s < n && s + W <= len;
  if (vtail) mv = vmax(mv, lanes_below(n - s) ? vload(row + s) : ninf);
  float m = hmax(mv);
  if (!vtail)
    for (long t = s; t < n; t++) m = row[t] > m ? row[t] : m;
  vf sv = vf{};
  s = a;
  for (; s + W <= n; s += W) {
    vf p = vexp(vload(row + s) - m);
    vstore(row + s, p);
    sv += p;
  }
  if (vtail) {
    vf p = lanes_below(n - s) ? vexp(vload(row + s) - m) : vf{};
    vstore(row + s, p);
    sv += p;
    s += W;
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

// The row stride of a transposed head ([D, S]) : S rounded up to whole lines,
// an odd number of them. The GEMMs read 16 floats of each of D rows; rows a
// power of two apart (S = 256: 1 KiB) fall into a few L1 sets, which then
// cannot hold the D lines a column panel is re-read from.
static inline long transposed_stride(long S) {
  long lines = ceil_div(S, 16);
  return (lines | 1) * 16;
}

// out[(h * D + d) * ldt + j] = x[j * ld + h * D + d] (ldt = transposed_stride(S)):
// each KV head's keys (or values) transposed, made once per call and shared by
// every block that reads them. Tasks take 64 keys of one head, so a few KV
// heads still fill the pool.
constexpr long ATT_ROWS = 64;  // keys (or rows) per task of the per-call copies and sums
static void transpose_heads(const float* x, long ld, long S, long nKv, long D, float* out) {
  long chunks = ceil_div(S, ATT_ROWS), ldt = transposed_stride(S);
  par(nKv * chunks, [&](long t) {
    long h = t / chunks, j0 = t % chunks * ATT_ROWS, rows = min_l(ATT_ROWS, S - j0);
    pack_transposed(x + j0 * ld + h * D, ld, rows, D, out + h * D * ldt + j0, ldt, rows);
  });
}

// out[j] = scale · q·k_j for the NB <= 4 keys k_j = k + j·ld (D values each).
template <int NB>
static inline void decode_scores(const float* q, const float* k, long ld, long D, float scale, float* out) {
  vf acc[4] = {};
  long d = 0;
  for (; d + W <= D; d += W) {
    vf qv = vload(q + d);
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) acc[j] += qv * vload(k + j * ld + d);
  }
  float s[4];
  hsum4(acc[0], acc[1], acc[2], acc[3], s);
  for (int j = 0; j < NB; j++) {
    for (long t = d; t < D; t++) s[j] += q[t] * k[j * ld + t];
    out[j] = s[j] * scale;
  }
}

// o[0..D) += Σ_j p[j] · v_j for the NB <= 4 value rows v_j = v + j·ld.
template <int NB>
static inline void decode_values(const float* p, const float* v, long ld, long D, float* o) {
  vf pv[4];
#pragma GCC unroll 4
  for (int j = 0; j < NB; j++) pv[j] = vset1(p[j]);
  long d = 0;
  for (; d + W <= D; d += W) {
    vf acc = vload(o + d);
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) acc += pv[j] * vload(v + j * ld + d);
    vstore(o + d, acc);
  }
  for (; d < D; d++)
    for (int j = 0; j < NB; j++) o[d] += p[j] * v[j * ld + d];
}

// Decode (T = 1): the visible keys are cut into chunks of consecutive keys,
// one task each over every head, so each task reads its stretch of the KV
// cache once, front to back, and every thread has work at any context length
// (one task per KV head gave two threads three tasks, and read each cache row
// in strided passes). A chunk's softmax uses its own maximum m_c and sum l_c
// with its unnormalised output o_c; the chunks are then merged (as
// flash-decoding does): out = Σ_c e^(m_c − M)·o_c / Σ_c e^(m_c − M)·l_c,
// M = max_c m_c.
constexpr long DEC_MIN_KEYS = 64;   // keys a chunk holds at least (fewer: not worth a thread)
constexpr long DEC_MAX_KEYS = 128;  // and at most: long contexts give each thread several chunks

static void attention_decode(const float* q, const float* k, const float* v, float* out, float* lse,
                             long S, long nHeads, long nKv, long D, float scale, long kvStride,
                             long window) {
  long group = nHeads / nKv;
  long k0 = first_key(S - 1, window), n = S - k0;  // keys k0..S-1
  long chunks = min_l(svc_num_threads(), ceil_div(n, DEC_MIN_KEYS));
  if (chunks < ceil_div(n, DEC_MAX_KEYS)) chunks = ceil_div(n, DEC_MAX_KEYS);
  long len = ceil_div(n, chunks);
  chunks = ceil_div(n, len);
  const long ps = D + 2;  // a chunk's partial per query head: o_c[D], m_c, l_c
  float* part = svc_scratch(SVC_SLOT_CALLER, (size_t)(chunks * nHeads * ps));
  par(chunks, [&](long c) {
    long j0 = k0 + c * len, nj = min_l(len, S - j0);
    float* sc = svc_scratch(SVC_SLOT_TASK, (size_t)(nHeads * nj));  // [nHeads, nj]
    // Four cache rows at a time, every head of each; the prefetch takes whole
    // rows two blocks ahead (it never faults, so it may run past the cache).
    for (long j = 0; j < nj; j += 4)
      with_count(min_l(4, nj - j), [&](auto nb) {
        const float* kr = k + (j0 + j) * kvStride;
        for (long i = 0; i < 4 * kvStride; i += 16) stream_prefetch(kr + 8 * kvStride + i);
        for (long h = 0; h < nHeads; h++)
          decode_scores<nb.value>(q + h * D, kr + h / group * D, kvStride, D, scale, sc + h * nj + j);
      });
    for (long h = 0; h < nHeads; h++) {
      float* ph = part + (c * nHeads + h) * ps;
      ph[D + 1] = softmax_row(sc + h * nj, 0, nj, nj, &ph[D]);
      for (long d = 0; d < D; d++) ph[d] = 0.f;
    }
    for (long j = 0; j < nj; j += 4)
      with_count(min_l(4, nj - j), [&](auto nb) {
        const float* vr = v + (j0 + j) * kvStride;
        for (long i = 0; i < 4 * kvStride; i += 16) stream_prefetch(vr + 8 * kvStride + i);
        for (long h = 0; h < nHeads; h++)
          decode_values<nb.value>(sc + h * nj + j, vr + h / group * D, kvStride, D, part + (c * nHeads + h) * ps);
      });
  });
  for (long h = 0; h < nHeads; h++) {
    float M = -__builtin_inff(), L = 0.f;
    for (long c = 0; c < chunks; c++) {
      float m = part[(c * nHeads + h) * ps + D];
      M = m > M ? m : M;
    }
    float* o = out + h * D;
    for (long d = 0; d < D; d++) o[d] = 0.f;
    for (long c = 0; c < chunks; c++) {
      const float* ph = part + (c * nHeads + h) * ps;
      float w = sexp(ph[D] - M);
      L += w * ph[D + 1];
      axpy(o, ph, w, D);
    }
    scale_row(o, D, 1.0f / L);
    if (lse) lse[h] = (float)(M + slog(L));
  }
}

// A GQA group's query heads share their keys and values, so prefill and
// training stack them: a block's rows are its queries' heads, query-major (row
// i·group + g is query t0 + i of head kh·group + g), one GEMM pair per KV head
// and block instead of one per query head (Band::row_div maps rows to queries).
// Those rows lie two strides apart in q (a query's heads are adjacent, queries
// qs apart), so with group > 1 they are gathered into a dense copy first.
template <class F>  // float or const float
struct GroupRows {
  F* base;  // row (i, g) of the block at base + i * qs + g * D
  long qs, D, group;
  F* row(long r) const { return base + r / group * qs + r % group * D; }
  // The block's m rows as a dense [m, D] copy in `to`, and back.
  void gather(float* to, long m) const {
    for (long r = 0; r < m; r += group)
      for (long d = 0; d < group * D; d++) to[r * D + d] = base[r / group * qs + d];
  }
  void scatter(const float* from, long m) const {
    for (long r = 0; r < m; r += group)
      for (long d = 0; d < group * D; d++) base[r / group * qs + d] = from[r * D + d];
  }
};

// Prefill/training: per (KV head, block of queries) two GEMMs over the group's
// stacked rows, S = Q·Kᵀ over the keys the block sees and O = softmax(S)·V,
// with the row softmax in between. Decode (T = 1): attention_decode above.
// bf16 (T > 1): the GEMMs' operands rounded to bf16 (Q, K; the unnormalised
// probabilities and V), fp32 sums, as bf16 autocast's attention matmuls; the
// softmax and its sums stay fp32. Decode is fp32 whatever bf16 says.
static void attention_forward(const float* q, const float* k, const float* v, float* out, float* lse,
                              long T, long S, long nHeads, long nKv, long D, float scale,
                              long kvStride, long window, bool bf16) {
  if (T <= 0) return;
  long group = nHeads / nKv, qs = nHeads * D;
  if (D == 0) {
    if (lse)
      for (long h = 0; h < nHeads; h++)
        for (long t = 0; t < T; t++) {
          long p = S - T + t;
          lse[h * T + t] = (float)slog((double)(p + 1 - first_key(p, window)));
        }
    return;
  }
  if (T == 1) {
    attention_decode(q, k, v, out, lse, S, nHeads, nKv, D, scale, kvStride, window);
    return;
  }
  // Kᵀ per KV head ([nKv, D, S]), so that S = Q·Kᵀ reads its B row-major in place.
  long ldt = transposed_stride(S);
  float* kT = svc_scratch(SVC_SLOT_CALLER, (size_t)nKv * D * ldt);
  transpose_heads(k, kvStride, S, nKv, D, kT);
  long nblocks = ceil_div(T, ATT_TB);
  par(nKv * nblocks, [&](long task) {
    long kh = task / nblocks, blk = nblocks - 1 - task % nblocks;  // longest blocks first
    long t0 = blk * ATT_TB, t1 = min_l(T, t0 + ATT_TB), tb = t1 - t0, m = group * tb;
    long p0 = S - T + t0;            // the block's first query's absolute position
    long k0 = first_key(p0, window);  // the first key any query of the block sees
    long L = S - T + t1 - k0;         // keys k0.. up to the block's last query
    float* sc = svc_scratch(SVC_SLOT_TASK, (size_t)m * L + m + (group > 1 ? 2 * m * D : 0));
    float* sums = sc + m * L;
    GroupRows<const float> qrows{q + (t0 * nHeads + kh * group) * D, qs, D, group};
    GroupRows<float> orows{out + (t0 * nHeads + kh * group) * D, qs, D, group};
    View Q{qrows.base, qs, 1};
    float* o = orows.base;
    long ldo = qs;
    if (group > 1) {
      float* qd = sums + m;
      qrows.gather(qd, m);
      Q = View{qd, D, 1};
      o = qd + m * D;
      ldo = D;
    }
    // row r (query p0 + r / group) sees the keys before p0 + r / group + 1 - k0: as columns, as k
    Band keys, keys_k;
    keys.col_end = keys_k.k_end = p0 + 1 - k0;
    keys.row_div = keys_k.row_div = group;
    gemm_in_cache(Q, kT + kh * D * ldt + k0, ldt, sc, L, m, L, D, scale, false, keys, bf16);
    for (long r = 0; r < m; r++) {
      float mx;
      long p = p0 + r / group;
      sums[r] = softmax_row(sc + r * L, first_key(p, window) - k0, p + 1 - k0, L, &mx);
      if (lse) lse[(kh * group + r % group) * T + t0 + r / group] = (float)(mx + slog(sums[r]));
    }
    gemm_in_cache(View{sc, L, 1}, v + k0 * kvStride + kh * D, kvStride, o, ldo, m, D, L, 1.0f, false, keys_k, bf16);
    for (long r = 0; r < m; r++) scale_row(o + r * ldo, D, 1.0f / sums[r]);
    if (group > 1) orows.scatter(o, m);
  });
}

// Parts per KV head: up to 4 (each holds a dK/dV partial), until the tasks fill
// every thread evenly or number eight a thread.
static long backward_parts(long nKv, long nblocks) {
  long most = min_l(4, ceil_div(nblocks, 2)), threads = svc_num_threads(), parts = 1;
  while (parts < most && (nKv * parts) % threads != 0 && nKv * parts < 8 * threads) parts++;
  return parts;
}

// Per KV head, per block of queries over the group's stacked rows (as the
// forward pass; the keys the block sees: up to its end, from its first query's
// first key), recomputing the probabilities from the saved log-sum-exp:
//   P = exp(Q·Kᵀ·scale − lse), dP = dO·Vᵀ, dS = P∘(dP − rowsum(dO∘O))·scale,
//   dQ = dS·K, dK += dSᵀ·Q, dV += Pᵀ·dO.
// bf16: the five GEMMs' operands rounded to bf16, fp32 sums; P, dS and
// rowsum(dO∘O) are computed in fp32 before the products round them.
// dK and dV go to per-task partials, summed at the end, so tasks never write
// the same memory. A task is a KV head, or part of one where the heads alone
// would leave a thread idle (3 KV heads on 2 threads): its query blocks then go
// to parts in pairs, a long one with a short one, so the causal triangle's
// parts cost the same.
static void attention_backward(const float* dOut, const float* q, const float* k, const float* v,
                               const float* out, const float* lse, float* dq, float* dk, float* dv,
                               long T, long nHeads, long nKv, long D, float scale,
                               long window, bool bf16) {
  if (T <= 0 || D == 0) return;
  long group = nHeads / nKv, kvs = nKv * D, qs = nHeads * D;
  long nblocks = ceil_div(T, ATT_TB), pairs = ceil_div(nblocks, 2);
  long parts = backward_parts(nKv, nblocks), tasks = nKv * parts;
  long ldt = transposed_stride(T);
  float* part = svc_scratch(SVC_SLOT_CALLER, (size_t)tasks * 2 * T * D + 2 * nKv * D * ldt);
  float* kT = part + tasks * 2 * T * D;  // [nKv, D, ldt], and Vᵀ after it
  float* vT = kT + nKv * D * ldt;
  transpose_heads(k, kvs, T, nKv, D, kT);
  transpose_heads(v, kvs, T, nKv, D, vT);
  par(tasks, [&](long task) {
    long kh = task / parts;
    float* dkh = part + task * 2 * T * D;
    float* dvh = dkh + T * D;
    for (long i = 0; i < 2 * T * D; i++) dkh[i] = 0.f;
    auto block = [&](long blk) {
      long t0 = blk * ATT_TB, t1 = min_l(T, t0 + ATT_TB), tb = t1 - t0, m = group * tb;
      long k0 = first_key(t0, window), L = t1 - k0;  // keys k0..t1-1
      float* P = svc_scratch(SVC_SLOT_TASK, (size_t)2 * m * L + m + (group > 1 ? 3 * m * D : 0));
      float* dS = P + m * L;
      float* Dt = dS + m * L;
      long off = (t0 * nHeads + kh * group) * D;
      GroupRows<const float> qrows{q + off, qs, D, group}, dorows{dOut + off, qs, D, group};
      GroupRows<const float> orows{out + off, qs, D, group};
      GroupRows<float> dqrows{dq + off, qs, D, group};
      View Qb{q + off, qs, 1}, dOb{dOut + off, qs, 1};
      float* dqb = dq + off;
      long ldq = qs;
      if (group > 1) {
        float* qd = Dt + m;
        qrows.gather(qd, m);
        dorows.gather(qd + m * D, m);
        Qb = View{qd, D, 1};
        dOb = View{qd + m * D, D, 1};
        dqb = qd + 2 * m * D;
        ldq = D;
      }
      const float* kb = k + k0 * kvs + kh * D;
      // row r (query t0 + r / group) sees keys before t0 + r / group + 1 - k0 (as
      // columns, as k); key i is seen from row (i + k0 - t0) · group
      Band keys, keys_k, seen;
      keys.col_end = keys_k.k_end = t0 + 1 - k0;
      keys.row_div = keys_k.row_div = group;
      seen.k_begin = k0 - t0;
      seen.k_mul = group;
      gemm_in_cache(Qb, kT + kh * D * ldt + k0, ldt, P, L, m, L, D, scale, false, keys, bf16);
      gemm_in_cache(dOb, vT + kh * D * ldt + k0, ldt, dS, L, m, L, D, 1.0f, false, keys, bf16);
      for (long r = 0; r < m; r++) {
        long t = t0 + r / group, a = first_key(t, window) - k0, n = t + 1 - k0;  // visible: [a, n)
        Dt[r] = dot(dorows.row(r), orows.row(r), D);
        float l = lse[(kh * group + r % group) * T + t];
        float* pr = P + r * L;
        float* dr = dS + r * L;
        for (long s = 0; s < a; s++) pr[s] = dr[s] = 0.f;
        long s = a;
        for (; s + W <= n; s += W) {
          vf p = vexp(vload(pr + s) - l);
          vstore(pr + s, p);
          vstore(dr + s, p * (vload(dr + s) - Dt[r]) * scale);
        }
        if (s < n && s + W <= L) {  // the ragged end as one masked vector, zeroing past n
          vi keep = lanes_below(n - s);
          vf p = keep ? vexp(vload(pr + s) - l) : vf{};
          vstore(pr + s, p);
          vstore(dr + s, keep ? p * (vload(dr + s) - Dt[r]) * scale : vf{});
          s += W;
        }
        for (; s < n; s++) {
          pr[s] = sexp(pr[s] - l);
          dr[s] = pr[s] * (dr[s] - Dt[r]) * scale;
        }
        for (; s < L; s++) pr[s] = dr[s] = 0.f;
      }
      gemm_in_cache(View{dS, L, 1}, kb, kvs, dqb, ldq, m, D, L, 1.0f, false, keys_k, bf16);
      gemm_in_cache(View{dS, 1, L}, Qb.p, Qb.rs, dkh + k0 * D, D, L, D, m, 1.0f, true, seen, bf16);
      gemm_in_cache(View{P, 1, L}, dOb.p, dOb.rs, dvh + k0 * D, D, L, D, m, 1.0f, true, seen, bf16);
      if (group > 1) dqrows.scatter(dqb, m);
    };
    for (long pair = task % parts; pair < pairs; pair += parts) {
      block(pair);
      if (nblocks - 1 - pair != pair) block(nblocks - 1 - pair);
    }
  });
  long chunks = ceil_div(T, ATT_ROWS);
  par(nKv * chunks, [&](long c) {
    long kh = c / chunks, s0 = c % chunks * ATT_ROWS;
    for (long s = s0; s < min_l(T, s0 + ATT_ROWS); s++) {
      float* dkr = dk + s * kvs + kh * D;
      float* dvr = dv + s * kvs + kh * D;
      for (long d = 0; d < D; d++) dkr[d] = dvr[d] = 0.f;
      for (long t = kh * parts; t < (kh + 1) * parts; t++) {
        axpy(dkr, part + t * 2 * T * D + s * D, 1.0f, D);
        axpy(dvr, part + t * 2 * T * D + T * D + s * D, 1.0f, D);
      }
    }
  });
}
