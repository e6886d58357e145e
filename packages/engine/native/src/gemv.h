// The paths of SGEMM for few rows (decode, batched decode, LoRA's dA) and few
// columns (LoRA's rank-r products), included by gemm.h after its blocked
// path (par, View, gemm_blocked) and before matmul, which picks among them.
// Each reads its large operand once; the streaming rule below is shared with
// the quantized GEMVs (quant.h, quant_int.h).

// The decode GEMVs (gemv_bt below, quant.h's qgemv, quant_int.h's igemv) read
// every weight once from memory, a group of R contiguous rows at a time
// (against one row of x, fp32, bf16 and int8: one row at a time, gemv_one), and
// split the rows over the pool like this:
// - One contiguous share per thread: each thread's reads stay one forward
//   stream. Eight tasks a thread (claimed in any order) restarted the stream
//   at every task and cost 15-30% of decode on a 32 MiB-L3 EPYC.
// - Each row read prefetches the same row position STREAM_AHEAD bytes (whole
//   groups) further on, into L1: a group's rows are read side by side, a
//   pattern the hardware prefetchers follow late. Into L1 rather than L2, one
//   thread of a Zen 5 EPYC streamed 5-15% more of every format; on Zen 4 the
//   two hints were level (docs/serving-formats.md).
constexpr long STREAM_AHEAD = 8192;
static inline long stream_tasks(long groups) { return min_l(groups, svc_num_threads()); }
static inline long stream_ahead(long group_bytes) {
  return group_bytes * ceil_div(STREAM_AHEAD, group_bytes);
}
static inline void stream_prefetch(const void* p) { __builtin_prefetch(p, 0, 3); }

// share(begin, end) over units 0..units-1, one contiguous share per thread (the
// first rule above); a product of fewer than 1e5 multiply-adds (`work`) stays
// on the calling thread, where waking the pool would cost more than it saves.
template <class F>
static void stream_shares(long units, double work, const F& share) {
  long tasks = work < 1.0e5 ? 1 : stream_tasks(units);
  par(tasks, [&](long t) { share(units * t / tasks, units * (t + 1) / tasks); });
}

// Batch 1: c[j * csc] (=|+=) alpha * dot(j) for the n weight rows, a
// contiguous share of rows a thread, each row read front to back by `dot`
// (four accumulators, so that the FMA's latency does not bound a row). Against
// a group of eight rows read side by side, whose steps interleave, one row
// after another streamed 7-19% more fp32 and 13-22% more bf16 on a Zen 5 VM,
// and about a third more int8 on a Zen 4 VM (docs/kernels.md).
template <class F>
static void gemv_one(float* c, long csc, long n, long k, float alpha, bool accumulate, const F& dot) {
  stream_shares(n, (double)n * k, [&](long j0, long j1) {
    for (long j = j0; j < j1; j++) {
      float s = dot(j) * alpha;
      float* cp = c + j * csc;
      *cp = accumulate ? *cp + s : s;
    }
  });
}

// f(Count<n>{}) for a count n of 1 to 4 known at run time.
template <int N>
struct Count {
  static constexpr int value = N;
};
template <class F>
static inline void with_count(long n, const F& f) {
  if (n == 4) f(Count<4>{});
  else if (n == 3) f(Count<3>{});
  else if (n == 2) f(Count<2>{});
  else f(Count<1>{});
}

// Few rows with B stored [n, k] (a Linear layer's weight, the decode case):
// each output is a dot product along a contiguous weight row. R weight rows are
// streamed together against the M rows of x, so every weight is read once and
// R*M independent accumulators hide the FMA latency. Leading dimensions are
// explicit so attention can run it over a KV cache.
template <int M, int R>
static void gemv_bt_block(const float* x, long ldx, const float* b, long ldb, float* c, long ldc,
                          long csc, long k, long j, float alpha, bool accumulate) {
  vf acc[M][R];
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) acc[i][r] = vf{};
  long kv = k / W * W;
  const long ahead = stream_ahead(R * ldb * (long)sizeof(float)) / (long)sizeof(float);
  for (long p = 0; p < kv; p += W) {
    vf xv[M];
#pragma GCC unroll 4
    for (int i = 0; i < M; i++) xv[i] = vload(x + i * ldx + p);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      // prefetch never faults, so the last groups may overrun
      stream_prefetch(b + (j + r) * ldb + p + ahead);
      vf bv = vload(b + (j + r) * ldb + p);
#pragma GCC unroll 4
      for (int i = 0; i < M; i++) acc[i][r] += xv[i] * bv;
    }
  }
  for (int i = 0; i < M; i++)
    for (int r = 0; r < R; r++) {
      float s = hsum(acc[i][r]);
      const float* br = b + (j + r) * ldb;
      for (long p = kv; p < k; p++) s += x[i * ldx + p] * br[p];
      float* cp = c + i * ldc + (j + r) * csc;
      *cp = accumulate ? *cp + alpha * s : alpha * s;
    }
}

// The m rows of x against n weight rows of k, every weight read from memory
// once: a group of R weight rows meets the rows of x four at a time and stays
// in L1 between them; the groups are split over the pool by the streaming
// rule. block(Count<M>, Count<R>, i, j) runs rows i..i+M-1 of x against
// weight rows j..j+R-1 (the last n % R rows: Count<1>, one at a time).
template <int R, class F>
static void stream_rows(long m, long n, long k, const F& block) {
  auto group = [&](long j, auto r) {
    for (long i = 0; i < m; i += 4) with_count(min_l(4, m - i), [&](auto mi) { block(mi, r, i, j); });
  };
  long groups = n / R;
  stream_shares(groups, (double)n * k, [&](long g0, long g1) {
    for (long g = g0; g < g1; g++) group(g * R, Count<R>{});
  });
  for (long j = groups * R; j < n; j++) group(j, Count<1>{});
}

// x[k] · b[k], b one weight row read front to back (gemv_one).
static float gemv_bt_row(const float* x, const float* b, long k) {
  vf acc[4] = {};
  long p = 0;
  for (; p + 4 * W <= k; p += 4 * W)
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) {
      stream_prefetch(b + p + u * W + STREAM_AHEAD / (long)sizeof(float));
      acc[u] += vload(x + p + u * W) * vload(b + p + u * W);
    }
  for (; p + W <= k; p += W) acc[0] += vload(x + p) * vload(b + p);
  float s = hsum((acc[0] + acc[1]) + (acc[2] + acc[3]));
  for (; p < k; p++) s += x[p] * b[p];
  return s;
}

// The m rows of x against B stored [n, k] (stream_rows, groups of 4; one row: gemv_one).
static void gemv_bt_rows(const float* x, long ldx, const float* b, long ldb, float* c, long ldc, long csc,
                         long m, long n, long k, float alpha, bool accumulate) {
  if (m == 1) {
    gemv_one(c, csc, n, k, alpha, accumulate, [&](long j) { return gemv_bt_row(x, b + j * ldb, k); });
    return;
  }
  stream_rows<4>(m, n, k, [&](auto mi, auto r, long i, long j) {
    gemv_bt_block<mi.value, r.value>(x + i * ldx, ldx, b, ldb, c + i * ldc, ldc, csc, k, j, alpha, accumulate);
  });
}

// Few rows with B stored [k, n]: B is read in CW-wide column chunks, a range
// of chunks per task. The rows of x meet a chunk four at a time: the first
// four read it from memory (prefetching GEMV_B_AHEAD rows ahead, as a chunk's
// rows are too far apart for the hardware prefetchers) and the rest from L2
// (k x CW floats), so B is read from memory once for any number of rows.
constexpr long GEMV_B_AHEAD = 16;
template <int M>
static void gemv_b_chunk(const float* x, long ldx, const float* b, long ldb, float* c, long ldc, long csc,
                         long j0, long nj, long k, float alpha, bool accumulate, bool first) {
  constexpr long CW = 4 * W;
  if (nj < CW) {
    for (int i = 0; i < M; i++) {
      float acc[CW] = {};
      for (long p = 0; p < k; p++)
        for (long j = 0; j < nj; j++) acc[j] += x[i * ldx + p] * b[p * ldb + j0 + j];
      for (long j = 0; j < nj; j++) {
        float* cp = c + i * ldc + (j0 + j) * csc;
        *cp = accumulate ? *cp + alpha * acc[j] : alpha * acc[j];
      }
    }
    return;
  }
  vf acc[M][4];
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) acc[i][v] = vf{};
  for (long p = 0; p < k; p++) {
    const float* br = b + p * ldb + j0;
    if (first)  // prefetch never faults, so it may run past B's last row
      for (long l = 0; l < CW; l += 64 / (long)sizeof(float)) stream_prefetch(br + GEMV_B_AHEAD * ldb + l);
    vf bv[4] = {vload(br), vload(br + W), vload(br + 2 * W), vload(br + 3 * W)};
#pragma GCC unroll 4
    for (int i = 0; i < M; i++) {
      vf xv = vset1(x[i * ldx + p]);
#pragma GCC unroll 4
      for (int v = 0; v < 4; v++) acc[i][v] += xv * bv[v];
    }
  }
  for (int i = 0; i < M; i++)
    for (int v = 0; v < 4; v++) {
      vf r = acc[i][v] * alpha;
      if (csc == 1) {
        float* cp = c + i * ldc + j0 + v * W;
        if (accumulate) r += vload(cp);
        vstore(cp, r);
      } else {
        for (int l = 0; l < W; l++) {
          float* cp = c + i * ldc + (j0 + v * W + l) * csc;
          *cp = accumulate ? *cp + r[l] : r[l];
        }
      }
    }
}

static void gemv_b(const float* x, long ldx, const float* b, long ldb, float* c, long ldc, long csc, long m,
                   long n, long k, float alpha, bool accumulate) {
  constexpr long CW = 4 * W;
  long nchunks = ceil_div(n, CW);
  long tasks = min_l(nchunks, svc_num_threads() * 4L);
  if ((double)n * k < 1.0e5) tasks = 1;
  par(tasks, [&](long t) {
    for (long ch = nchunks * t / tasks; ch < nchunks * (t + 1) / tasks; ch++) {
      long j0 = ch * CW, nj = min_l(CW, n - j0);
      for (long i = 0; i < m; i += 4)
        with_count(min_l(4, m - i), [&](auto mi) {
          gemv_b_chunk<mi.value>(x + i * ldx, ldx, b, ldb, c + i * ldc, ldc, csc, j0, nj, k, alpha, accumulate,
                                 i == 0);
        });
    }
  });
}

// C[m, n] (=|+=) alpha * X[m, k] · op(B) for any m, four rows of X at a time:
// op(B) = Bᵀ with B stored [n, k] when transB, else B stored [k, n]. C(i, j) is
// c[i * ldc + j * csc].
static void gemv_rows(const float* x, long ldx, const float* b, long ldb, bool transB, float* c,
                      long ldc, long csc, long m, long n, long k, float alpha, bool accumulate) {
  if (transB) gemv_bt_rows(x, ldx, b, ldb, c, ldc, csc, m, n, k, alpha, accumulate);
  else gemv_b(x, ldx, b, ldb, c, ldc, csc, m, n, k, alpha, accumulate);
}

// Few columns (LoRA's rank-r products: x·Aᵀ, dy·B, dyᵀ·xa): C[m, n] (=|+=)
// alpha * op(A) · op(B) with n <= GEMV_MAX_ROWS. op(B) is gathered into a
// [k, NV·W] scratch (zero-padded lanes), small enough to stay in L1/L2; op(A),
// the large operand, is then read once, row by row along its storage:
// - op(A) = A [m,k]: four rows of C at a time accumulate in registers over k;
// - op(A) = Aᵀ, A stored [k,m] (dyᵀ·xa): a task owns a range of C's rows, kept
//   in scratch, and streams the matching strip of every row of A, four at a time.
// Each element of C is summed by one task in a fixed order (deterministic).
template <int NVC>
static void gemm_few_cols(const float* a, bool transA, const float* bs, float* c, long m, long n,
                          long k, float alpha, bool accumulate) {
  constexpr long NP = NVC * W;
  auto store_row = [&](float* ci, const vf* acc) {
    float tmp[NP];
    for (int v = 0; v < NVC; v++) vstore(tmp + v * W, acc[v] * alpha);
    for (long j = 0; j < n; j++) ci[j] = accumulate ? ci[j] + tmp[j] : tmp[j];
  };
  if (!transA) {
    long groups = ceil_div(m, 4);
    long tasks = min_l(groups, svc_num_threads() * 4L);
    if ((double)m * k * n < 2.0e5) tasks = 1;
    par(tasks, [&](long t) {
      for (long gi = groups * t / tasks; gi < groups * (t + 1) / tasks; gi++) {
        long i0 = gi * 4, mi = min_l(4, m - i0);
        if (mi == 4) {
          vf acc[4][NVC];
          for (int r = 0; r < 4; r++)
            for (int v = 0; v < NVC; v++) acc[r][v] = vf{};
          const float* a0 = a + i0 * k;
          for (long p = 0; p < k; p++) {
            vf bv[NVC];
            for (int v = 0; v < NVC; v++) bv[v] = vload(bs + p * NP + v * W);
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
              vf av = vset1(a0[r * k + p]);
              for (int v = 0; v < NVC; v++) acc[r][v] += av * bv[v];
            }
          }
          for (int r = 0; r < 4; r++) store_row(c + (i0 + r) * n, acc[r]);
        } else {
          for (long r = 0; r < mi; r++) {
            vf acc[NVC];
            for (int v = 0; v < NVC; v++) acc[v] = vf{};
            const float* ar = a + (i0 + r) * k;
            for (long p = 0; p < k; p++) {
              vf av = vset1(ar[p]);
              for (int v = 0; v < NVC; v++) acc[v] += av * vload(bs + p * NP + v * W);
            }
            store_row(c + (i0 + r) * n, acc);
          }
        }
      }
    });
    return;
  }
  // A stored [k, m]: element (i, p) of op(A) is a[p * m + i].
  // Rows of C per task: at most 512 (their accumulators stay in L1), at least 64.
  long tasks = min_l(ceil_div(m, 64), svc_num_threads() * 4L);
  if ((double)m * k * n < 2.0e5) tasks = 1;
  long range = ceil_div(m, tasks);
  if (range > 512) range = 512;
  tasks = ceil_div(m, range);
  par(tasks, [&](long t) {
    long i0 = t * range, i1 = min_l(m, i0 + range);
    float* acc = svc_scratch(SVC_SLOT_TASK, (size_t)range * NP);
    for (long i = 0; i < (i1 - i0) * NP; i++) acc[i] = 0.f;
    long p = 0;
    for (; p + 4 <= k; p += 4) {
      vf b0[NVC], b1[NVC], b2[NVC], b3[NVC];
      for (int v = 0; v < NVC; v++) {
        b0[v] = vload(bs + p * NP + v * W);
        b1[v] = vload(bs + (p + 1) * NP + v * W);
        b2[v] = vload(bs + (p + 2) * NP + v * W);
        b3[v] = vload(bs + (p + 3) * NP + v * W);
      }
      const float* ap = a + p * m;
      for (long i = i0; i < i1; i++) {
        vf x0 = vset1(ap[i]), x1 = vset1(ap[m + i]), x2 = vset1(ap[2 * m + i]), x3 = vset1(ap[3 * m + i]);
        float* ci = acc + (i - i0) * NP;
        for (int v = 0; v < NVC; v++)
          vstore(ci + v * W, vload(ci + v * W) + x0 * b0[v] + x1 * b1[v] + x2 * b2[v] + x3 * b3[v]);
      }
    }
    for (; p < k; p++) {
      const float* ap = a + p * m;
      for (long i = i0; i < i1; i++) {
        vf x = vset1(ap[i]);
        float* ci = acc + (i - i0) * NP;
        for (int v = 0; v < NVC; v++) vstore(ci + v * W, vload(ci + v * W) + x * vload(bs + p * NP + v * W));
      }
    }
    for (long i = i0; i < i1; i++) {
      vf row[NVC];
      for (int v = 0; v < NVC; v++) row[v] = vload(acc + (i - i0) * NP + v * W);
      store_row(c + i * n, row);
    }
  });
}

