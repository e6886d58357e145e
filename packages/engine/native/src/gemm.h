// SGEMM, C[m,n] = alpha * op(A)[m,k] · op(B)[k,n] (+ C), included by each ISA
// translation unit inside its namespace after simd.h (so W and vf are fixed).
//
// Large shapes: the BLIS loop nest. B is packed once per (NC, KC) block into
// NR-wide column panels shared by all threads; each thread packs its own MC x KC
// block of A into MR-tall row panels and runs the MR x NR register-tiled
// micro-kernel over it. Edges are zero-padded in the packed copies, so the
// micro-kernel only special-cases its store.
// Few rows (decode): a streaming GEMV that reads each weight once.

#if SVC_VEC_BYTES == 64
constexpr int MR = 12, NV = 2;  // 24 zmm accumulators + 2 B vectors + broadcast
#elif SVC_VEC_BYTES == 32
constexpr int MR = 6, NV = 2;  // 12 ymm accumulators (16 registers)
#else
constexpr int MR = 6, NV = 2;  // 12 xmm accumulators (16 registers)
#endif
constexpr int NR = NV * W;
constexpr long KC = 256;
constexpr long MC_MAX = MR * 16;
constexpr long NC = NR * 96;
constexpr long GEMV_MAX_ROWS = 4;

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

// A[i0.., p0..] (mc x kc) -> MR-tall panels, each stored k-major: out[p * MR + i].
static void pack_a(const View& A, long i0, long mc, long p0, long kc, float* out) {
  for (long ir = 0; ir < mc; ir += MR, out += MR * kc) {
    long mr = min_l(MR, mc - ir);
    if (A.cs == 1) {  // rows of A are contiguous along k
      for (long i = 0; i < mr; i++) {
        const float* row = A.p + (i0 + ir + i) * A.rs + p0;
        for (long p = 0; p < kc; p++) out[p * MR + i] = row[p];
      }
      for (long i = mr; i < MR; i++)
        for (long p = 0; p < kc; p++) out[p * MR + i] = 0.f;
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
  } else {  // transB: each column of op(B) is a contiguous row of the stored matrix
    for (long j = 0; j < nr; j++) {
      const float* col = B.p + (j0 + j) * B.cs + p0 * B.rs;
      for (long p = 0; p < kc; p++) out[p * NR + j] = col[p * B.rs];
    }
    for (long j = nr; j < NR; j++)
      for (long p = 0; p < kc; p++) out[p * NR + j] = 0.f;
  }
}

// C[mr, nr] (=|+=) alpha * Apanel · Bpanel over kc.
static inline void micro_kernel(long kc, const float* __restrict a, const float* __restrict b,
                                float* c, long ldc, float alpha, bool load_c, long mr, long nr) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
    for (int j = 0; j < NV; j++) acc[i][j] = vf{};
  for (long p = 0; p < kc; p++) {
    vf bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; j++) bv[j] = *reinterpret_cast<const vf*>(b + j * W);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      vf av = vset1(a[i]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; j++) acc[i][j] += av * bv[j];
    }
    a += MR;
    b += NR;
  }
  if (mr == MR && nr == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
      for (int j = 0; j < NV; j++) {
        float* cp = c + i * ldc + j * W;
        vf r = acc[i][j] * alpha;
        if (load_c) r += vload(cp);
        vstore(cp, r);
      }
  } else {
    for (long i = 0; i < mr; i++)
      for (long j = 0; j < nr; j++) {
        float r = acc[i][j / W][j % W] * alpha;
        float* cp = c + i * ldc + j;
        *cp = load_c ? *cp + r : r;
      }
  }
}

static void gemm_blocked(const View& A, const View& B, float* c, long m, long n, long k, float alpha,
                         bool accumulate) {
  int threads = svc_num_threads();
  if ((double)m * n * k < 2.0e5) threads = 1;
  // Row blocks: a multiple of the thread count, each at most MC_MAX tall.
  long nblocks = ceil_div(m, MC_MAX);
  nblocks = ceil_div(nblocks, threads) * threads;
  long mc = ceil_div(ceil_div(m, nblocks), MR) * MR;
  nblocks = ceil_div(m, mc);
  float* bpack = svc_scratch(1, (size_t)KC * NC);
  for (long jc = 0; jc < n; jc += NC) {
    long nc = min_l(NC, n - jc);
    long npanels = ceil_div(nc, NR);
    for (long pc = 0; pc < k; pc += KC) {
      long kc = min_l(KC, k - pc);
      bool load_c = accumulate || pc > 0;
      long pack_tasks = threads == 1 ? 1 : min_l(npanels, threads * 2);
      par(pack_tasks, [&](long t) {
        long q0 = npanels * t / pack_tasks, q1 = npanels * (t + 1) / pack_tasks;
        for (long q = q0; q < q1; q++)
          pack_b_panel(B, pc, kc, jc + q * NR, min_l(NR, nc - q * NR), bpack + q * NR * kc);
      });
      // Few row blocks: also split the column panels so every thread has work.
      long nsplit = nblocks >= threads ? 1 : min_l(npanels, ceil_div(threads, nblocks));
      par(nblocks * nsplit, [&](long t) {
        long blk = t / nsplit, s = t % nsplit;
        long ic = blk * mc, mcb = min_l(mc, m - ic);
        long q0 = npanels * s / nsplit, q1 = npanels * (s + 1) / nsplit;
        float* apack = svc_scratch(0, (size_t)MC_MAX * KC);
        pack_a(A, ic, mcb, pc, kc, apack);
        for (long q = q0; q < q1; q++) {
          long jr = q * NR, nr = min_l(NR, nc - jr);
          for (long ir = 0; ir < mcb; ir += MR)
            micro_kernel(kc, apack + ir * kc, bpack + q * NR * kc, c + (ic + ir) * n + jc + jr, n,
                         alpha, load_c, min_l(MR, mcb - ir), nr);
        }
      });
    }
  }
}

// Few rows with B stored [n, k] (a Linear layer's weight): each output is a dot
// product along a contiguous weight row; four weight rows per step share the x loads.
static void gemv_rows_bt(const float* x, const float* b, float* c, long m, long n, long k,
                         float alpha, bool accumulate) {
  long chunks = min_l(ceil_div(n, 4), svc_num_threads() * 8L);
  if ((double)n * k < 1.0e5) chunks = 1;
  par(chunks, [&](long t) {
    long j0 = ceil_div(n * t / chunks, 1), j1 = n * (t + 1) / chunks;
    long kv = k / W * W;
    for (long j = j0; j < j1; j += 4) {
      long nj = min_l(4, j1 - j);
      for (long i = 0; i < m; i++) {
        const float* xr = x + i * k;
        vf acc[4] = {vf{}, vf{}, vf{}, vf{}};
        for (long p = 0; p < kv; p += W) {
          vf xv = vload(xr + p);
          for (long jj = 0; jj < nj; jj++) acc[jj] += xv * vload(b + (j + jj) * k + p);
        }
        for (long jj = 0; jj < nj; jj++) {
          float s = hsum(acc[jj]);
          const float* br = b + (j + jj) * k;
          for (long p = kv; p < k; p++) s += xr[p] * br[p];
          float* cp = c + i * n + j + jj;
          *cp = accumulate ? *cp + alpha * s : alpha * s;
        }
      }
    }
  });
}

// Few rows with B stored [k, n]: stream B row by row, accumulating column chunks.
static void gemv_rows_b(const float* x, const float* b, float* c, long m, long n, long k,
                        float alpha, bool accumulate) {
  constexpr long CW = 4 * W;
  long nchunks = ceil_div(n, CW);
  long tasks = min_l(nchunks, svc_num_threads() * 4L);
  if ((double)n * k < 1.0e5) tasks = 1;
  par(tasks, [&](long t) {
    long c0 = nchunks * t / tasks, c1 = nchunks * (t + 1) / tasks;
    for (long ch = c0; ch < c1; ch++) {
      long j0 = ch * CW, nj = min_l(CW, n - j0);
      for (long i = 0; i < m; i++) {
        const float* xr = x + i * k;
        if (nj == CW) {
          vf acc[4] = {vf{}, vf{}, vf{}, vf{}};
          for (long p = 0; p < k; p++) {
            vf xv = vset1(xr[p]);
            const float* br = b + p * n + j0;
            for (int v = 0; v < 4; v++) acc[v] += xv * vload(br + v * W);
          }
          for (int v = 0; v < 4; v++) {
            float* cp = c + i * n + j0 + v * W;
            vf r = acc[v] * alpha;
            if (accumulate) r += vload(cp);
            vstore(cp, r);
          }
        } else {
          float acc[CW] = {};
          for (long p = 0; p < k; p++)
            for (long j = 0; j < nj; j++) acc[j] += xr[p] * b[p * n + j0 + j];
          for (long j = 0; j < nj; j++) {
            float* cp = c + i * n + j0 + j;
            *cp = accumulate ? *cp + alpha * acc[j] : alpha * acc[j];
          }
        }
      }
    }
  });
}

static void matmul(const float* a, const float* b, float* c, long m, long n, long k, bool transA,
                   bool transB, bool accumulate, float alpha) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (long i = 0; i < m * n; i++) c[i] = 0.f;
    return;
  }
  if (m <= GEMV_MAX_ROWS) {
    const float* x = a;
    if (transA) {  // gather the few rows of op(A) into contiguous scratch
      float* xs = svc_scratch(2, (size_t)m * k);
      for (long i = 0; i < m; i++)
        for (long p = 0; p < k; p++) xs[i * k + p] = a[p * m + i];
      x = xs;
    }
    if (transB) gemv_rows_bt(x, b, c, m, n, k, alpha, accumulate);
    else gemv_rows_b(x, b, c, m, n, k, alpha, accumulate);
    return;
  }
  View A = transA ? View{a, 1, m} : View{a, k, 1};
  View B = transB ? View{b, 1, k} : View{b, n, 1};
  gemm_blocked(A, B, c, m, n, k, alpha, accumulate);
}
