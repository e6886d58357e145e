// Matrix products of fp32 activations with weights stored in a serving format,
// y[m, n] (=|+=) alpha * x[m, k] · Wᵀ with W [n, k] (a Linear layer's weight,
// as the decode path holds it). Included by each ISA translation unit after
// gemm.h (W, vf, par, gemm_blocked, and gemv.h's stream_* rule).
//
// Formats (SVC_QUANT_*, the numbers the addon and the wasm exports pass):
//   bf16  data: uint16 [n, k], the top half of each fp32 weight.
//   int8  data: int8 [n, k]; scales: fp32 [n], w = q * scale (per output row).
//   q4_0  data: uint8 [n, k/2]; scales: f16 [n, k/32]. GGUF's Q4_0: blocks of
//         32 weights, w = (nibble - 8) * d; byte j of a block holds weight j in
//         its low nibble and weight j + 16 in its high nibble. k % 32 == 0.
//
// This is the fp32-activation path: weights are widened to fp32 in registers
// (int8 and q4_0: a zero extension and a convert per vector; bf16: a shift or
// a mask of 32-bit lanes, QBf16::pairs), so there is no second
// rounding of the activations. Many rows (prefill) dequantize a panel of
// weight rows at a time into fp32 scratch and run the blocked SGEMM on it.
// Units with integer dot products take int8 and q4_0 at up to 32 rows
// through quant_int.h instead (x rounded to 8 bits), and this path for the rest.

enum { SVC_QUANT_BF16 = 1, SVC_QUANT_INT8 = 2, SVC_QUANT_Q4_0 = 3 };

typedef unsigned int vu __attribute__((vector_size(SVC_VEC_BYTES)));
typedef unsigned int vu_u __attribute__((vector_size(SVC_VEC_BYTES), aligned(2), may_alias));
typedef unsigned short vh_u __attribute__((vector_size(SVC_VEC_BYTES / 2), aligned(1), may_alias));
typedef unsigned char vu8_u __attribute__((vector_size(SVC_VEC_BYTES / 4), aligned(1), may_alias));
typedef unsigned short vh __attribute__((vector_size(SVC_VEC_BYTES / 2)));
typedef unsigned char vu8 __attribute__((vector_size(SVC_VEC_BYTES / 4)));

constexpr long QBLOCK = 32;       // the k step of every format (Q4_0's block)
constexpr long SCALE_CHUNK = 64;  // q4_0 block scales widened at a time (decode)

// IEEE half -> float: one vcvtph2ps where the unit is built with F16C (the
// AVX2 and AVX-512 units); elsewhere the exponent and mantissa shifted into
// place and scaled by 2^112 (right for normals and subnormals alike),
// infinities and NaNs apart.
static inline float f16_to_f32(unsigned short h) {
#if defined(__F16C__)
  _Float16 f;
  __builtin_memcpy(&f, &h, 2);
  return (float)f;
#else
  unsigned int em = h & 0x7fffu, bits;
  if (em >= 0x7c00u) {
    bits = 0x7f800000u | ((em & 0x3ffu) << 13);
  } else {
    unsigned int t = em << 13;
    float f;
    __builtin_memcpy(&f, &t, 4);
    f *= 5.192296858534828e33f;  // 2^112
    __builtin_memcpy(&bits, &f, 4);
  }
  bits |= (unsigned int)(h & 0x8000u) << 16;
  float r;
  __builtin_memcpy(&r, &bits, 4);
  return r;
#endif
}

// Each format's row reader: W weights of row r at column pb + off (pb a block
// start, off a multiple of W below 32) as floats before any per-block or
// per-row scale, the scales, and the address of a row position (for prefetches).
struct QBf16 {
  const unsigned short* w;
  long k;
  static constexpr bool kBlockScale = false, kRowScale = false, kPairs = true;
  // 2W weights from column pb + off as fp32, without a widening convert: read
  // as W 32-bit lanes, lane l holds weight 2l in its low half and 2l + 1 in
  // its high half, so a shift gives the even weights and a mask the odd ones
  // (GCC widens 16-bit lanes to a zmm as two ymm converts and an insert, which
  // left bf16 decode compute-bound at two thirds of fp32's bandwidth).
  void pairs(long r, long pb, int off, vf& even, vf& odd) const {
    vu u = in_register(*reinterpret_cast<const vu_u*>(w + r * k + pb + off));
    vu e = u << 16, o = u & 0xffff0000u;
    __builtin_memcpy(&even, &e, sizeof even);
    __builtin_memcpy(&odd, &o, sizeof odd);
  }
  vf load(long r, long pb, int off) const {
    vu u = __builtin_convertvector(*reinterpret_cast<const vh_u*>(w + r * k + pb + off), vu) << 16;
    vf f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
  }
  float scalar(long r, long p) const {
    unsigned int u = (unsigned int)w[r * k + p] << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  }
  float block_scale(long, long) const { return 1.f; }
  void block_scales(long, long, long, float*) const {}
  float row_scale(long) const { return 1.f; }
  const void* addr(long r, long p) const { return w + r * k + p; }
};

struct QInt8 {
  const signed char* w;
  const float* scales;
  long k;
  static constexpr bool kBlockScale = false, kRowScale = true, kPairs = false;
  // Widened as unsigned bytes (a sign-extending convert of a byte vector
  // compiles to scalar code in GCC 12): q = (b ^ 0x80) - 128.
  vf load(long r, long pb, int off) const {
    vu8 b = *reinterpret_cast<const vu8_u*>(w + r * k + pb + off) ^ (unsigned char)0x80;
    return __builtin_convertvector(__builtin_convertvector(b, vi) - 128, vf);
  }
  float scalar(long r, long p) const { return (float)w[r * k + p]; }
  float block_scale(long, long) const { return 1.f; }
  void block_scales(long, long, long, float*) const {}
  float row_scale(long r) const { return scales[r]; }
  const void* addr(long r, long p) const { return w + r * k + p; }
};

struct QQ4 {
  const unsigned char* w;
  const unsigned short* scales;
  long k;
  static constexpr bool kBlockScale = true, kRowScale = false, kPairs = false;
  // Weights off..off+W-1 of the block are the low nibbles of its bytes off..
  // when off < 16, else the high nibbles of bytes off-16 ...
  vf load(long r, long pb, int off) const { return nibbles(r, pb, off) - 8.f; }
  // The nibbles as they are (0..15): one decode row folds the −8 into the block's x sum.
  vf nibbles(long r, long pb, int off) const {
    const unsigned char* b = w + r * (k / 2) + pb / 2 + (off & 15);
    vu8 bytes = *reinterpret_cast<const vu8_u*>(b);
    vu8 nib = off < 16 ? (bytes & (unsigned char)15) : (bytes >> 4);
    return __builtin_convertvector(__builtin_convertvector(nib, vi), vf);
  }
  float scalar(long, long) const { return 0.f; }  // k % 32 == 0: there is no tail
  float block_scale(long r, long blk) const { return f16_to_f32(scales[r * (k / QBLOCK) + blk]); }
  void block_scales(long r, long blk, long n, float* out) const {
    const unsigned short* h = scales + r * (k / QBLOCK) + blk;
    for (long i = 0; i < n; i++) out[i] = f16_to_f32(h[i]);
  }
  float row_scale(long) const { return 1.f; }
  const void* addr(long r, long p) const { return w + r * (k / 2) + p / 2; }
};

// The block's sums into C: each accumulator's lanes, the tail columns past
// the last whole block (x as the caller laid it: the tail is never split),
// the row scale, alpha.
template <class Q, int M, int R>
static inline void qgemv_finish(const Q& q, const vf (&acc)[M][R], const float* x, long ldx, float* c, long ldc,
                                long k, long j, float alpha, bool accumulate) {
  long kb = k / QBLOCK * QBLOCK;
  for (int i = 0; i < M; i++)
    for (int r = 0; r < R; r++) {
      float s = hsum(acc[i][r]);
      for (long p = kb; p < k; p++) s += x[i * ldx + p] * q.scalar(j + r, p);
      if (Q::kRowScale) s *= q.row_scale(j + r);
      float* cp = c + i * ldc + j + r;
      *cp = accumulate ? *cp + alpha * s : alpha * s;
    }
}

// R weight rows j..j+R-1 against M rows of x, streamed once: per 32-wide
// block each row's weights are widened in registers and feed M·R accumulators.
template <class Q, int M, int R>
static void qgemv_block(const Q& q, const float* x, long ldx, float* c, long ldc, long k, long j,
                        float alpha, bool accumulate) {
  vf acc[M][R];
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) acc[i][r] = vf{};
  long kb = k / QBLOCK * QBLOCK;
  const long row_bytes = static_cast<const char*>(q.addr(1, 0)) - static_cast<const char*>(q.addr(0, 0));
  const long ahead = stream_ahead(R * row_bytes);
  float ds[M == 1 && Q::kBlockScale ? R : 1][SCALE_CHUNK];
  for (long p = 0; p < kb; p += QBLOCK) {
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) stream_prefetch(static_cast<const char*>(q.addr(j + r, p)) + ahead);
    if constexpr (M == 1 && Q::kBlockScale) {
      // One row of x (decode): Σ x·(q − 8)·d = d·(Σ x·q − 8·Σ x); the −8·Σ x term,
      // as a vector, seeds every row's block sum, and d scales the sum once.
      // The rows' scales are widened SCALE_CHUNK blocks at a time (a vector
      // convert), so each block reads its d as one broadcast from the stack.
      long blk = p / QBLOCK, in_chunk = blk % SCALE_CHUNK;
      if (in_chunk == 0) {
        long nb = min_l(SCALE_CHUNK, k / QBLOCK - blk);
        for (int r = 0; r < R; r++) q.block_scales(j + r, blk, nb, ds[r]);
      }
      vf xv[QBLOCK / W], xm = vf{};
#pragma GCC unroll 8
      for (int v = 0; v < QBLOCK / W; v++) {
        xv[v] = vload(x + p + v * W);
        xm += xv[v];
      }
      xm *= -8.f;
#pragma GCC unroll 8
      for (int r = 0; r < R; r++) {
        vf t = xm;
#pragma GCC unroll 8
        for (int v = 0; v < QBLOCK / W; v++) t += xv[v] * q.nibbles(j + r, p, v * W);
        acc[0][r] += ds[r][in_chunk] * t;
      }
      continue;
    }
    if constexpr (Q::kPairs) {
      // x's even and odd columns meet the even and odd weights (QBf16::pairs)
#pragma GCC unroll 4
      for (int v = 0; v < QBLOCK / W; v += 2) {
        vf xe[M], xo[M];
#pragma GCC unroll 4
        for (int i = 0; i < M; i++) {
          vf x0 = vload(x + i * ldx + p + v * W), x1 = vload(x + i * ldx + p + v * W + W);
          xe[i] = __builtin_shufflevector(x0, x1, SVC_EVEN_LANES);
          xo[i] = __builtin_shufflevector(x0, x1, SVC_ODD_LANES);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
          vf we, wo;
          q.pairs(j + r, p, v * W, we, wo);
#pragma GCC unroll 4
          for (int i = 0; i < M; i++) {
            acc[i][r] += xe[i] * we;
            acc[i][r] += xo[i] * wo;
          }
        }
      }
      continue;
    }
    float d[R];
    if (Q::kBlockScale)
#pragma GCC unroll 8
      for (int r = 0; r < R; r++) d[r] = q.block_scale(j + r, p / QBLOCK);
#pragma GCC unroll 8
    for (int v = 0; v < QBLOCK / W; v++) {
      vf xv[M];
#pragma GCC unroll 4
      for (int i = 0; i < M; i++) xv[i] = vload(x + i * ldx + p + v * W);
#pragma GCC unroll 8
      for (int r = 0; r < R; r++) {
        vf wv = q.load(j + r, p, v * W);
        if (Q::kBlockScale) wv *= d[r];
#pragma GCC unroll 4
        for (int i = 0; i < M; i++) acc[i][r] += xv[i] * wv;
      }
    }
  }
  qgemv_finish<Q, M, R>(q, acc, x, ldx, c, ldc, k, j, alpha, accumulate);
}

// bf16 against 2-4 rows of x on a 16-register unit (AVX2): x's even and odd
// columns are split once per call (pairs_split), so the block reads them as
// FMA memory operands and holds only its M x 3 accumulators and one row's
// even and odd weights. qgemv_block's M x 4 accumulators, M pairs of x and
// the shuffles that make them spilled to the stack, and left batched bf16
// decode slower than fp32 on a Zen 3 EPYC. Same sums in the same order.
template <int M, int R>
static void bf16_pairs_block(const QBf16& q, const float* xs, long ldx, float* c, long ldc, long k, long j,
                             float alpha, bool accumulate) {
  vf acc[M][R];
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[i][r] = vf{};
  long kb = k / QBLOCK * QBLOCK;
  const long ahead = stream_ahead(R * k * (long)sizeof(unsigned short));
  for (long p = 0; p < kb; p += QBLOCK) {
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) stream_prefetch(static_cast<const char*>(q.addr(j + r, p)) + ahead);
#pragma GCC unroll 4
    for (int v = 0; v < QBLOCK / W; v += 2)
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) {
        vf we, wo;
        q.pairs(j + r, p, v * W, we, wo);
#pragma GCC unroll 4
        for (int i = 0; i < M; i++) {
          acc[i][r] += vload(xs + i * ldx + p + v * W) * we;
          acc[i][r] += vload(xs + i * ldx + p + v * W + W) * wo;
        }
      }
  }
  qgemv_finish<QBf16, M, R>(q, acc, xs, ldx, c, ldc, k, j, alpha, accumulate);
}

// x [m, k] into xs with each 2W-column stretch below kb as its W even columns,
// then its W odd ones (the lanes QBf16::pairs gives); the tail as it is.
static void pairs_split(const float* x, long m, long k, float* xs) {
  long kb = k / QBLOCK * QBLOCK;
  for (long i = 0; i < m; i++) {
    const float* xr = x + i * k;
    float* o = xs + i * k;
    for (long p = 0; p < kb; p += 2 * W) {
      vf x0 = vload(xr + p), x1 = vload(xr + p + W);
      vstore(o + p, __builtin_shufflevector(x0, x1, SVC_EVEN_LANES));
      vstore(o + p + W, __builtin_shufflevector(x0, x1, SVC_ODD_LANES));
    }
    for (long p = kb; p < k; p++) o[p] = xr[p];
  }
}

// Row j of a bf16 W against one row of x split by pairs_split, the row read
// front to back (gemv_one): a step is one load, a shift, a mask and two FMAs.
static float bf16_row(const QBf16& q, long j, const float* xs, long k) {
  long kb = k / QBLOCK * QBLOCK, p = 0;
  vf acc[4] = {};
  auto pair = [&](long at, int u) {
    stream_prefetch(static_cast<const char*>(q.addr(j, at)) + STREAM_AHEAD);
    vf we, wo;
    q.pairs(j, at, 0, we, wo);
    acc[u] += we * vload(xs + at);
    acc[u + 1] += wo * vload(xs + at + W);
  };
  for (; p + 4 * W <= kb; p += 4 * W) {
    pair(p, 0);
    pair(p + 2 * W, 2);
  }
  for (; p < kb; p += 2 * W) pair(p, 0);
  float s = hsum((acc[0] + acc[1]) + (acc[2] + acc[3]));
  for (; p < k; p++) s += q.scalar(j, p) * xs[p];
  return s;
}

// The m rows of x [m, k] against every weight row, each read from memory once (gemv.h's stream_rows).
template <class Q>
static void qgemv(const Q& q, const float* x, float* c, long m, long n, long k, float alpha, bool accumulate) {
  if constexpr (Q::kPairs) {
    if (m == 1) {  // batch-1 decode
      float* xs = svc_scratch(SVC_SLOT_QUANT_X, (size_t)k);
      pairs_split(x, 1, k, xs);
      gemv_one(c, 1, n, k, alpha, accumulate, [&](long j) { return bf16_row(q, j, xs, k); });
      return;
    }
#if SVC_VEC_BYTES == 32
    float* xs = svc_scratch(SVC_SLOT_QUANT_X, (size_t)m * k);
    pairs_split(x, m, k, xs);
    stream_rows<3>(m, n, k, [&](auto mi, auto r, long i, long j) {
      bf16_pairs_block<mi.value, r.value>(q, xs + i * k, k, c + i * n, n, k, j, alpha, accumulate);
    });
    return;
#endif
  }
  auto block = [&](auto mi, auto r, long i, long j) {
    qgemv_block<Q, mi.value, r.value>(q, x + i * k, k, c + i * n, n, k, j, alpha, accumulate);
  };
  if constexpr (!Q::kPairs) {
    // int8 and q4_0 against one row of x where the integer path does not take
    // it (no integer unit, a row of x with a NaN, int8 rows not whole 32-blocks):
    // eight rows side by side, so R independent sums hide the FMA's latency
    if (m == 1) {
      stream_rows<8>(m, n, k, block);
      return;
    }
  }
  stream_rows<4>(m, n, k, block);
}

// Row r of W as fp32 into out[k].
template <class Q>
static void dequant_row(const Q& q, long r, long k, float* out) {
  long kb = k / QBLOCK * QBLOCK;
  float rs = Q::kRowScale ? q.row_scale(r) : 1.f;
  for (long p = 0; p < kb; p += QBLOCK) {
    float d = Q::kBlockScale ? q.block_scale(r, p / QBLOCK) : rs;
    for (int v = 0; v < QBLOCK / W; v++) {
      vf wv = q.load(r, p, v * W);
      if (Q::kBlockScale || Q::kRowScale) wv *= d;
      vstore(out + p + v * W, wv);
    }
  }
  for (long p = kb; p < k; p++) out[p] = q.scalar(r, p) * rs;
}

template <class Q>
static void qmatmul(const Q& q, const float* x, float* y, long m, long n, long k, float alpha,
                    bool accumulate) {
  if (m <= STREAM_MAX_ROWS) {
    qgemv(q, x, y, m, n, k, alpha, accumulate);
    return;
  }
  // Many rows: a panel of weight rows at a time (about 4 MB of fp32), then SGEMM.
  long nb = (1L << 20) / (k > 0 ? k : 1);
  nb = nb < 64 ? 64 : nb / 64 * 64;
  if (nb > n) nb = n;
  float* panel = svc_scratch(SVC_SLOT_QUANT, (size_t)nb * k);
  View A{x, k, 1};
  for (long j0 = 0; j0 < n; j0 += nb) {
    long rows = min_l(nb, n - j0);
    long tasks = min_l(rows, svc_num_threads() * 4L);
    par(tasks, [&](long t) {
      for (long r = rows * t / tasks; r < rows * (t + 1) / tasks; r++)
        dequant_row(q, j0 + r, k, panel + r * k);
    });
    View B{panel, 1, k};
    gemm_blocked(A, B, y + j0, n, 1, m, rows, k, alpha, accumulate);
  }
}

// The table's entry. The caller has checked the format, lengths and k % 32 == 0 for q4_0.
static void matmul_quant(int format, const float* x, const void* w, const void* scales, float* y,
                         long m, long n, long k, bool accumulate, float alpha) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (long i = 0; i < m * n; i++) y[i] = 0.f;
    return;
  }
  if (format == SVC_QUANT_BF16) {
    qmatmul(QBf16{static_cast<const unsigned short*>(w), k}, x, y, m, n, k, alpha, accumulate);
  } else if (format == SVC_QUANT_INT8) {
    qmatmul(QInt8{static_cast<const signed char*>(w), static_cast<const float*>(scales), k}, x, y, m,
            n, k, alpha, accumulate);
  } else {
    qmatmul(QQ4{static_cast<const unsigned char*>(w), static_cast<const unsigned short*>(scales), k}, x,
            y, m, n, k, alpha, accumulate);
  }
}
