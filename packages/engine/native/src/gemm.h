// SGEMM, C[m,n] = alpha * op(A)[m,k] · op(B)[k,n] (+ C), included by each ISA
// translation unit inside its namespace after simd.h (so W and vf are fixed).
//
// Large shapes: the BLIS loop nest. B is packed once per (NC, KC) block into
// NR-wide column panels shared by all threads; each thread packs its own MC x KC
// block of A into MR-tall row panels and runs the MR x NR register-tiled
// micro-kernel over it. Edges are zero-padded in the packed copies, so the
// micro-kernel only special-cases its store.
// Few rows (decode) and few columns (LoRA's rank-r products): gemv.h.
// matmul, at the end, picks the path.

#if SVC_VEC_BYTES == 64
constexpr int MR = 12, NV = 2;  // 24 zmm accumulators + 2 B vectors + broadcast
#elif SVC_VEC_BYTES == 32
constexpr int MR = 6, NV = 2;  // 12 ymm accumulators (16 registers)
#elif defined(__wasm__)
constexpr int MR = 4, NV = 2;  // 8 accumulators: V8 maps v128 onto 16 xmm, and mul+add needs temporaries
#else
constexpr int MR = 6, NV = 2;  // 12 xmm accumulators (SSE2: 16 registers, no FMA)
#endif
constexpr int NR = NV * W;
constexpr long KC = 768;  // the most k per pass; passes are balanced (1536 -> 2 x 768)
constexpr long MC_MAX = MR * 16;
constexpr long NC = NR * 96;
constexpr double STREAM_C_FLOATS = 1 << 19;  // 2 MB: more than a core's share of L2
constexpr long GEMV_MAX_ROWS = 16;
// Rows of x up to which x·Wᵀ streams the weights once through a GEMV (every
// format) instead of packing or dequantizing them for the blocked SGEMM,
// which reads them twice: decode batches of up to 32 streams.
constexpr long STREAM_MAX_ROWS = 32;

template <class F>
static void par(long n, const F& f) {
  if (n <= 0) return;
  if (n == 1 || svc_num_threads() == 1) {
    for (long i = 0; i < n; i++) f(i);
    return;
  }
  svc_parallel_for(n, [](const void* ctx, long i) { (*static_cast<const F*>(ctx))(i); }, &f);
}

static inline long min_l(long a, long b) { return a < b ? a : b; }
static inline long ceil_div(long a, long b) { return (a + b - 1) / b; }

// Element (i, j) of a strided matrix view is p[i * rs + j * cs].
struct View {
  const float* p;
  long rs, cs;
};

typedef float v4 __attribute__((vector_size(16)));
typedef float v4_u __attribute__((vector_size(16), aligned(4), may_alias));

// out[p * P + i] = src[i * ld + p] for i < rows, p < kc, zero rows up to
// `padded` (P when packing a panel; rows when the copy is part of a larger
// transpose): a transposing copy done as 4x4 in-register transposes (packing
// row-major A, or Bᵀ for x·Wᵀ), where a scalar loop spends a cycle per element.
static void pack_transposed(const float* src, long ld, long rows, long kc, float* out, long P,
                            long padded) {
  long i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* r = src + i * ld;
    long p = 0;
    for (; p + 4 <= kc; p += 4) {
      v4 a = *reinterpret_cast<const v4_u*>(r + p), b = *reinterpret_cast<const v4_u*>(r + ld + p);
      v4 c = *reinterpret_cast<const v4_u*>(r + 2 * ld + p);
      v4 d = *reinterpret_cast<const v4_u*>(r + 3 * ld + p);
      v4 t0 = __builtin_shufflevector(a, b, 0, 4, 1, 5), t1 = __builtin_shufflevector(a, b, 2, 6, 3, 7);
      v4 t2 = __builtin_shufflevector(c, d, 0, 4, 1, 5), t3 = __builtin_shufflevector(c, d, 2, 6, 3, 7);
      float* o = out + p * P + i;
      *reinterpret_cast<v4_u*>(o) = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
      *reinterpret_cast<v4_u*>(o + P) = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
      *reinterpret_cast<v4_u*>(o + 2 * P) = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
      *reinterpret_cast<v4_u*>(o + 3 * P) = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
    }
    for (; p < kc; p++)
      for (long q = 0; q < 4; q++) out[p * P + i + q] = r[q * ld + p];
  }
  for (; i < rows; i++)
    for (long p = 0; p < kc; p++) out[p * P + i] = src[i * ld + p];
  for (; i < padded; i++)
    for (long p = 0; p < kc; p++) out[p * P + i] = 0.f;
}

// A[i0.., p0..] (mc x kc) -> MR-tall panels, each stored k-major: out[p * MR + i],
// a panel every ldp floats (MR * kc when 0).
static void pack_a(const View& A, long i0, long mc, long p0, long kc, float* out, long ldp = 0) {
  for (long ir = 0; ir < mc; ir += MR, out += ldp ? ldp : MR * kc) {
    long mr = min_l(MR, mc - ir);
    if (A.cs == 1) {  // rows of A are contiguous along k
      pack_transposed(A.p + (i0 + ir) * A.rs + p0, A.rs, mr, kc, out, MR, MR);
    } else {  // columns contiguous (transA): a k-slice of MR rows is contiguous
      for (long p = 0; p < kc; p++) {
        const float* src = A.p + (p0 + p) * A.cs + (i0 + ir) * A.rs;
        float* dst = out + p * MR;
        for (long i = 0; i < mr; i++) dst[i] = src[i * A.rs];
        for (long i = mr; i < MR; i++) dst[i] = 0.f;
      }
    }
  }
}

// B[p0.., j0 + jr..] for one NR-wide panel -> out[p * NR + j].
static void pack_b_panel(const View& B, long p0, long kc, long j0, long nr, float* out) {
  if (B.cs == 1) {
    for (long p = 0; p < kc; p++) {
      const float* src = B.p + (p0 + p) * B.rs + j0;
      float* dst = out + p * NR;
      if (nr == NR) {
        for (int v = 0; v < NV; v++) vstore(dst + v * W, vload(src + v * W));
      } else {
        for (long j = 0; j < nr; j++) dst[j] = src[j];
        for (long j = nr; j < NR; j++) dst[j] = 0.f;
      }
    }
  } else if (B.rs == 1) {  // transB: each column of op(B) is a contiguous row of the stored matrix
    pack_transposed(B.p + j0 * B.cs + p0, B.cs, nr, kc, out, NR, NR);
  } else {
    for (long p = 0; p < kc; p++)
      for (long j = 0; j < NR; j++) out[p * NR + j] = j < nr ? B.p[(p0 + p) * B.rs + (j0 + j) * B.cs] : 0.f;
  }
}

// C[mr, nr] (=|+=) alpha * Apanel · Bpanel over kc, with R >= mr accumulator
// rows; C(i, j) is c[i * rsc + j * csc]. A panels are MR tall, B panels NR wide
// (every caller packs B first).
// A second stretch of k may follow in a separate NR-wide panel (b2, k2 rows):
// a LoRA branch's B next to a weight packed ahead; A's panel runs on through it.
template <int R>
static inline void micro_tile(long kc, const float* __restrict a, const float* __restrict b,
                              float* c, long rsc, long csc, float alpha, bool load_c, long mr, long nr,
                              bool stream, const float* __restrict b2, long k2) {
  vf acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; i++)
#pragma GCC unroll 4
    for (int j = 0; j < NV; j++) acc[i][j] = vf{};
  // An accumulated C (a second k pass, or dx += ...) starts arriving while
  // the k loop runs (thousands of cycles), so its read at the end does not
  // wait on L3 or memory. Zen 3, alternated per call: 1024x576x1536 with
  // accumulate 5-8% faster, 1024x576x1536 in two k passes 2.5-5%; prefetching
  // a C that is only written as well was level.
  if (load_c && csc == 1)
    for (long i = 0; i < mr; i++) {
      __builtin_prefetch(c + i * rsc, 1, 3);
      __builtin_prefetch(c + i * rsc + NR - 1, 1, 3);
    }
  auto run = [&](const float* __restrict bp, long kn) {
    for (long p = 0; p < kn; p++) {
      vf bv[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; j++) bv[j] = vload(bp + j * W);
#pragma GCC unroll 16
      for (int i = 0; i < R; i++) {
        vf av = vset1(a[i]);
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) acc[i][j] += av * bv[j];
      }
      a += MR;
      bp += NR;
    }
  };
  run(b, kc);
  if (k2) run(b2, k2);
  if (mr == R && nr == NR && csc == 1) {
#pragma GCC unroll 16
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
      for (int j = 0; j < NV; j++) {
        float* cp = c + i * rsc + j * W;
        vf r = acc[i][j] * alpha;
        if (load_c) r += vload(cp);
        if (stream && vector_aligned(cp)) vstream(cp, r);
        else vstore(cp, r);
      }
  } else {
    for (long i = 0; i < mr; i++)
      for (long j = 0; j < nr; j++) {
        float r = acc[i][j / W][j % W] * alpha;
        float* cp = c + i * rsc + j * csc;
        *cp = load_c ? *cp + r : r;
      }
  }
}

// The narrowest tile that covers mr rows, so an edge of a few rows (64 = 5 x 12
// + 4) does not pay for a whole MR.
// stream: C is written once and not read soon (see gemm_blocked); its
// aligned vectors then bypass the caches.
static inline void micro_kernel(long kc, const float* a, const float* b, float* c, long rsc,
                                long csc, float alpha, bool load_c, long mr, long nr, bool stream = false,
                                const float* b2 = nullptr, long k2 = 0) {
  constexpr int MID = MR > 8 ? 8 : MR;
  if (mr > MR - 4) micro_tile<MR>(kc, a, b, c, rsc, csc, alpha, load_c, mr, nr, stream, b2, k2);
  else if (mr > 4) micro_tile<MID>(kc, a, b, c, rsc, csc, alpha, load_c, mr, nr, stream, b2, k2);
  else micro_tile<4>(kc, a, b, c, rsc, csc, alpha, load_c, mr, nr, stream, b2, k2);
}

// A second product appended along k: C += alpha · A[m, k] · op(B)[k, n] in the
// last k pass of the main one, so C is written once (a LoRA branch's
// (x·Aᵀ)·Bᵀ next to its projection's x·Wᵀ).
struct LowRank {
  View A, B;
  long k;
  float alpha;
};

// `ahead`: op(B) packed once by pack_b_ahead (a frozen weight), so no call
// copies it again; nullptr: each call packs its panels.
static void gemm_blocked(const View& A, const View& B, float* c, long rsc, long csc, long m, long n,
                         long k, float alpha, bool accumulate, const LowRank* lr = nullptr,
                         const float* ahead = nullptr) {
  int threads = svc_num_threads();
  if ((double)m * n * k < 2.0e5) threads = 1;
  // Row blocks: a multiple of the thread count, each at most MC_MAX tall.
  long nblocks = ceil_div(m, MC_MAX);
  nblocks = ceil_div(nblocks, threads) * threads;
  long mc = ceil_div(ceil_div(m, nblocks), MR) * MR;
  nblocks = ceil_div(m, mc);
  long k2 = lr ? lr->k : 0;
  long own = ahead ? 0 : KC * NC;  // this call's own panels of B, then the low-rank B's (k2 rows each)
  float* bpack = svc_scratch(SVC_SLOT_GEMM_B, (size_t)(own + k2 * NC));
  float* lpack = bpack + own;
  long kstep = ceil_div(k, ceil_div(k, KC));
  // A C larger than the caches, written in one pass, streams to memory: its
  // lines are not read in first (they would be from memory: a training
  // step's activations never stay cached). 1.06-1.09x on the small shape's
  // training step on two Sapphire Rapids cores, level on Zen 4 (docs/kernels.md).
  bool stream = SVC_HAS_STREAM && !accumulate && csc == 1 && kstep >= k && (double)m * n >= STREAM_C_FLOATS;
  for (long jc = 0; jc < n; jc += NC) {
    long nc = min_l(NC, n - jc);
    long npanels = ceil_div(nc, NR);
    for (long pc = 0; pc < k; pc += kstep) {
      long kc = min_l(kstep, k - pc);
      long kx = pc + kc == k ? k2 : 0;  // the low-rank product's k, in the last pass
      long kt = kc + kx;
      bool load_c = accumulate || pc > 0;
      const float* panels = ahead ? ahead + jc * k + pc * npanels * NR : bpack;  // pack_b_ahead's order
      long pack_tasks = threads == 1 ? 1 : min_l(npanels, threads * 2);
      if (!ahead || kx)
        par(pack_tasks, [&](long t) {
          long q0 = npanels * t / pack_tasks, q1 = npanels * (t + 1) / pack_tasks;
          for (long q = q0; q < q1; q++) {
            long nr = min_l(NR, nc - q * NR);
            if (!ahead) pack_b_panel(B, pc, kc, jc + q * NR, nr, bpack + q * NR * kc);
            if (kx) pack_b_panel(lr->B, 0, kx, jc + q * NR, nr, lpack + q * NR * kx);
          }
        });
      // At least three tasks per thread (splitting column panels when rows run
      // short), so a thread the OS preempts holds up little: tasks are claimed
      // dynamically. Each split re-packs its A block, under 1% of its FMAs.
      long nsplit = threads == 1 ? 1 : min_l(ceil_div(npanels, 3), ceil_div(3 * threads, nblocks));
      if (nsplit < 1) nsplit = 1;
      par(nblocks * nsplit, [&](long t) {
        long blk = t / nsplit, s = t % nsplit;
        long ic = blk * mc, mcb = min_l(mc, m - ic);
        long q0 = npanels * s / nsplit, q1 = npanels * (s + 1) / nsplit;
        float* apack = svc_scratch(SVC_SLOT_GEMM_A, (size_t)MC_MAX * (KC + k2));
        pack_a(A, ic, mcb, pc, kc, apack, MR * kt);
        if (kx) {
          pack_a(lr->A, ic, mcb, 0, kx, apack + MR * kc, MR * kt);
          for (long ir = 0; ir < mcb; ir += MR)
            for (float *p = apack + ir * kt + MR * kc, *e = p + MR * kx; p < e; p++) *p *= lr->alpha;
        }
        for (long q = q0; q < q1; q++) {
          long jr = q * NR, nr = min_l(NR, nc - jr);
          for (long ir = 0; ir < mcb; ir += MR)
            micro_kernel(kc, apack + ir * kt, panels + q * NR * kc, c + (ic + ir) * rsc + (jc + jr) * csc,
                         rsc, csc, alpha, load_c, min_l(MR, mcb - ir), nr, stream, lpack + q * NR * kx, kx);
        }
        if (stream) vstream_fence();  // before the pool reports the task done
      });
    }
  }
}

// op(B) [k, n] (B stored [n, k] when transB) packed once, in the order
// gemm_blocked reads its panels: per NC-wide column block, per k pass, NR-wide
// panels of that pass's rows, zero-padded. A frozen weight packed this way is
// read in place by every product with it, where each call would copy it anew.
static long packed_b_floats(long k, long n) { return ceil_div(n, NR) * NR * k; }

static void pack_b_ahead(const float* b, long k, long n, bool transB, float* out) {
  if (k == 0) return;
  View B = transB ? View{b, 1, k} : View{b, n, 1};
  long kstep = ceil_div(k, ceil_div(k, KC));
  for (long jc = 0; jc < n; jc += NC) {
    long nc = min_l(NC, n - jc), npanels = ceil_div(nc, NR);
    for (long pc = 0; pc < k; pc += kstep) {
      long kc = min_l(kstep, k - pc);
      float* o = out + jc * k + pc * npanels * NR;
      par(npanels, [&](long q) { pack_b_panel(B, pc, kc, jc + q * NR, min_l(NR, nc - q * NR), o + q * NR * kc); });
    }
  }
}

#include "gemv.h"

// bPacked: op(b) as pack_b_ahead left it (or nullptr), for the blocked path;
// the few-row and few-column paths read b itself.
static void matmul(const float* a, const float* b, float* c, long m, long n, long k, bool transA,
                   bool transB, bool accumulate, float alpha, const float* bPacked = nullptr) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (long i = 0; i < m * n; i++) c[i] = 0.f;
    return;
  }
  // Few rows (decode, LoRA's dA = dxaᵀ·x): stream op(B) once. Where op(B) is
  // long (transA with k > 4n: dA over many tokens) the blocked path, which
  // reads it once, wins: 16x576x4096 1.9 -> 1.1 ms.
  if ((m <= GEMV_MAX_ROWS && !(transA && k > 4 * n)) || (m <= STREAM_MAX_ROWS && transB && !transA)) {
    const float* x = a;
    if (transA) {  // gather the few rows of op(A) into contiguous scratch
      float* xs = svc_scratch(SVC_SLOT_GEMV_X, (size_t)m * k);
      for (long i = 0; i < m; i++)
        for (long p = 0; p < k; p++) xs[i * k + p] = a[p * m + i];
      x = xs;
    }
    gemv_rows(x, k, b, transB ? k : n, transB, c, n, 1, m, n, k, alpha, accumulate);
    return;
  }
  // Few columns (LoRA's rank-r products). From 32 columns on, the blocked path
  // wins (no padded lanes left to save).
  if (n <= GEMV_MAX_ROWS) {
    long nvc = ceil_div(n, W), np = nvc * W;
    float* bs = svc_scratch(SVC_SLOT_GEMV_X, (size_t)k * np);  // op(B) as [k, np]
    for (long p = 0; p < k; p++)
      for (long j = 0; j < np; j++) bs[p * np + j] = j < n ? (transB ? b[j * k + p] : b[p * n + j]) : 0.f;
    if (nvc == 1) gemm_few_cols<1>(a, transA, bs, c, m, n, k, alpha, accumulate);
    else if (nvc == 2) gemm_few_cols<2>(a, transA, bs, c, m, n, k, alpha, accumulate);
    else if (nvc == 3) gemm_few_cols<3>(a, transA, bs, c, m, n, k, alpha, accumulate);
    else gemm_few_cols<4>(a, transA, bs, c, m, n, k, alpha, accumulate);
    return;
  }
  View A = transA ? View{a, 1, m} : View{a, k, 1};
  View B = transB ? View{b, 1, k} : View{b, n, 1};
  gemm_blocked(A, B, c, n, 1, m, n, k, alpha, accumulate, nullptr, bPacked);
}

// C[m,n] (=|+=) A[m,k]·op(B) + alpha2·A2[m,k2]·op(B2): a frozen projection and
// its LoRA branch's second product. The blocked path takes A2·op(B2) as extra k
// in its last pass, so C is written once where two products would stream it
// twice; few rows or columns run the two products.
static void matmul_low_rank(const float* a, const float* b, float* c, long m, long n, long k, bool transB,
                            const float* a2, const float* b2, long k2, bool transB2, float alpha2,
                            bool accumulate, const float* bPacked = nullptr) {
  if (m <= GEMV_MAX_ROWS || n <= GEMV_MAX_ROWS || k == 0 || k2 == 0) {
    matmul(a, b, c, m, n, k, false, transB, accumulate, 1.0f, bPacked);
    matmul(a2, b2, c, m, n, k2, false, transB2, true, alpha2);
    return;
  }
  LowRank lr{View{a2, k2, 1}, transB2 ? View{b2, 1, k2} : View{b2, n, 1}, k2, alpha2};
  gemm_blocked(View{a, k, 1}, transB ? View{b, 1, k} : View{b, n, 1}, c, n, 1, m, n, k, 1.0f, accumulate,
               &lr, bPacked);
}
