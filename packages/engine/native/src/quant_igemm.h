// Prefill (more than INT_MAX_ROWS rows) with int8 and q4_0 weights on
// AVX-512 VNNI, included after quant_int.h: x is rounded to 8 bits per
// 32-block exactly as in the decode path, and a register tile of MR rows of x
// by 32 weight rows takes the products with vpdpbusd, 64 byte products per
// instruction where the fp32 SGEMM (which the other ISAs keep, after
// dequantizing panels of weights) does 16 multiply-adds.
//
// Each task packs a panel of 32 weight rows at a time: per step of 4 k, the
// 4 bytes of each of the 32 rows (two vectors), biased to unsigned w + 128
// (q4_0's nibbles become q − 8 first), and per 32-block the 32 rows' scales
// (q4_0's block scales, int8's row scale). A tile then runs over the panel block by block: per
// block the products go to int32 lanes (starting from −128·Σxq, which the
// bias adds, see quant_int.h), and the block sum
// is scaled by x's block scale times the weights' into fp32 accumulators.
// The panel stays in L1/L2 while every row of x passes it.
//
// AVX2 has no instruction that does more byte products than its FMA does
// float ones (vpmaddubsw needs a vpmaddwd to widen), so it keeps quant.h's path.

#if SVC_INT_DECODE && SVC_VEC_BYTES == 64
#define SVC_INT_GEMM 1
constexpr long IG_NR = 2 * W;  // weight rows per panel
constexpr int IG_MR = 6;       // rows of x per tile: 12 int32 and 12 fp32 accumulators
constexpr long IG_STEP = 4 * IG_NR;  // panel bytes per step of 4 k

// x rounded to 8 bits, row-major: q [m, k], and per row and 32-block its scale and Σ q.
struct IgRows {
  const signed char* q;
  const float* d;
  const int* sum;
  long k, nblk;
};

// Weight rows j0.. (up to IG_NR; the rest read as zero, with zero scales)
// into the panel described above. A step's 4 bytes of 16 rows are one gather
// of dwords a row apart: the panel is the weights' [rows, k] bytes transposed
// by 4-byte columns, and q4_0's bytes hold k and k + 16 of a block in their two
// nibbles, so one gather serves two steps. Byte by byte, this copy took about
// a third of a q4_0 prefill of 256 rows against Qwen2.5-0.5B's projections.
static void ig_pack(bool q4, const void* w, const void* scales, long n, long k, long j0, signed char* pq,
                    float* pd) {
  long nblk = k / QBLOCK, cols = min_l(IG_NR, n - j0), row_bytes = q4 ? k / 2 : k;
  const char* base = static_cast<const char*>(w) + j0 * row_bytes;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i rows[2] = {_mm512_mullo_epi32(lane, _mm512_set1_epi32((int)row_bytes)),
                           _mm512_mullo_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(16)),
                                              _mm512_set1_epi32((int)row_bytes))};
  const __mmask16 live[2] = {(__mmask16)(cols >= 16 ? 0xffff : (1u << cols) - 1),
                             (__mmask16)(cols >= 32 ? 0xffff : cols > 16 ? (1u << (cols - 16)) - 1 : 0)};
  const __m512i zero = _mm512_setzero_si512();
  float row_scale[IG_NR];  // int8: one scale per row
  if (!q4)
    for (long c = 0; c < IG_NR; c++)
      row_scale[c] = c < cols ? static_cast<const float*>(scales)[j0 + c] : 0.f;
  for (long b = 0; b < nblk; b++) {
    signed char* pb = pq + b * 8 * IG_STEP;
    for (int h = 0; h < 2; h++) {
      if (q4) {  // nibbles n -> n - 8 + 128 = n + 120 per byte, no carry between bytes
        const __m512i nib = _mm512_set1_epi32(0x0f0f0f0f), bias = _mm512_set1_epi32(0x78787878);
        for (int s = 0; s < 4; s++) {
          __m512i idx = _mm512_add_epi32(rows[h], _mm512_set1_epi32((int)(b * 16 + 4 * s)));
          __m512i v = _mm512_mask_i32gather_epi32(zero, live[h], idx, base, 1);
          __m512i lo = _mm512_add_epi32(_mm512_and_si512(v, nib), bias);
          // an arithmetic shift: the bits it fills (28-31) are masked off
          __m512i hi = _mm512_add_epi32(_mm512_and_si512((__m512i)((vi)v >> 4), nib), bias);
          _mm512_storeu_si512(pb + s * IG_STEP + h * VB, lo);
          _mm512_storeu_si512(pb + (s + 4) * IG_STEP + h * VB, hi);
        }
      } else {  // w + 128 as an unsigned byte
        const __m512i flip = _mm512_set1_epi32((int)0x80808080u);
        for (int s = 0; s < 8; s++) {
          __m512i idx = _mm512_add_epi32(rows[h], _mm512_set1_epi32((int)(b * QBLOCK + 4 * s)));
          __m512i v = _mm512_mask_i32gather_epi32(zero, live[h], idx, base, 1);
          _mm512_storeu_si512(pb + s * IG_STEP + h * VB, _mm512_xor_si512(v, flip));
        }
      }
    }
    float* db = pd + b * IG_NR;
    if (q4) {
      const unsigned short* hs = static_cast<const unsigned short*>(scales);
      unsigned short half[IG_NR];
      for (long c = 0; c < IG_NR; c++) half[c] = c < cols ? hs[(j0 + c) * nblk + b] : 0;
      for (int h = 0; h < 2; h++) {
        __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(half + h * W));
        _mm512_storeu_ps(db + h * W, _mm512_maskz_cvtph_ps(0xffff, halves));
      }
    } else {
      for (int h = 0; h < 2; h++) vstore(db + h * W, vload(row_scale + h * W));
    }
  }
}
// Rows i0..i0+MR-1 of x against one packed panel: y[i, j0 + c] for c < cols.
template <int MR>
static void ig_tile(const IgRows& x, long i0, const signed char* pq, const float* pd, float* y, long ldy,
                    long j0, long cols, float alpha, bool accumulate) {
  vf acc[MR][2] = {};
  for (long b = 0; b < x.nblk; b++) {
    vi ia[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) ia[i][0] = ia[i][1] = vi{} - I8_BIAS * x.sum[(i0 + i) * x.nblk + b];
    const signed char* xb = x.q + i0 * x.k + b * QBLOCK;
#pragma GCC unroll 8
    for (int s = 0; s < QBLOCK / 4; s++) {
      const signed char* bp = pq + (b * 8 + s) * IG_STEP;
      vs8 w0 = *reinterpret_cast<const vs8_u*>(bp), w1 = *reinterpret_cast<const vs8_u*>(bp + VB);
#pragma GCC unroll 6
      for (int i = 0; i < MR; i++) {
        int four;
        __builtin_memcpy(&four, xb + i * x.k + 4 * s, 4);
        vs8 xv = (vs8)_mm512_set1_epi32(four);
        ia[i][0] = dot_us(ia[i][0], w0, xv);
        ia[i][1] = dot_us(ia[i][1], w1, xv);
      }
    }
    vf d0 = vload(pd + b * IG_NR), d1 = vload(pd + b * IG_NR + W);
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
      vf dx = vset1(x.d[(i0 + i) * x.nblk + b]);
      acc[i][0] += __builtin_convertvector(ia[i][0], vf) * (d0 * dx);
      acc[i][1] += __builtin_convertvector(ia[i][1], vf) * (d1 * dx);
    }
  }
  for (int i = 0; i < MR; i++) {
    float* yr = y + (i0 + i) * ldy + j0;
    for (int v = 0; v < 2; v++) {
      vf r = acc[i][v] * alpha;
      if (cols >= (v + 1) * W) {
        if (accumulate) r += vload(yr + v * W);
        vstore(yr + v * W, r);
      } else {
        for (long c = v * W; c < cols; c++) yr[c] = accumulate ? yr[c] + r[c - v * W] : r[c - v * W];
      }
    }
  }
}

template <int MR>
static void ig_rows(const IgRows& x, long i0, long mr, const signed char* pq, const float* pd, float* y,
                    long ldy, long j0, long cols, float alpha, bool accumulate) {
  if constexpr (MR > 1)
    if (mr < MR) return ig_rows<MR - 1>(x, i0, mr, pq, pd, y, ldy, j0, cols, alpha, accumulate);
  ig_tile<MR>(x, i0, pq, pd, y, ldy, j0, cols, alpha, accumulate);
}

// y[m, n] (=|+=) alpha · x·Wᵀ for k % 32 == 0; false (nothing written) when x
// holds a NaN or an infinity, which 8 bits cannot carry.
static bool igemm(bool q4, const float* x, const void* w, const void* scales, float* y, long m, long n,
                  long k, float alpha, bool accumulate) {
  long nblk = k / QBLOCK;
  // scratch in floats: q (m·k bytes), then d and sum (m·nblk each)
  float* buf = svc_scratch(SVC_SLOT_QUANT_X, (size_t)(m * k / 4 + 2 * m * nblk));
  signed char* q = reinterpret_cast<signed char*>(buf);
  float* d = buf + m * k / 4;
  int* sum = reinterpret_cast<int*>(d + m * nblk);
  long qtasks = min_l(m, svc_num_threads());
  bool finite[64];
  par(qtasks, [&](long t) {
    finite[t] = true;
    for (long i = m * t / qtasks; i < m * (t + 1) / qtasks && finite[t]; i++)
      for (long b = 0; b < nblk && finite[t]; b++)
        finite[t] = quantize_block(x + i * k + b * QBLOCK, q + i * k + b * QBLOCK, &d[i * nblk + b],
                                   &sum[i * nblk + b]);
  });
  for (long t = 0; t < qtasks; t++)
    if (!finite[t]) return false;
  const IgRows rows{q, d, sum, k, nblk};
  long panels = ceil_div(n, IG_NR);
  long tasks = min_l(panels, svc_num_threads() * 4L);
  par(tasks, [&](long t) {
    size_t panel_floats = (size_t)(k * IG_NR / 4 + nblk * IG_NR);  // the bytes, then a scale per row and block
    signed char* pq = reinterpret_cast<signed char*>(svc_scratch(SVC_SLOT_TASK, panel_floats));
    float* pd = reinterpret_cast<float*>(pq + k * IG_NR);
    for (long p = panels * t / tasks; p < panels * (t + 1) / tasks; p++) {
      long j0 = p * IG_NR, cols = min_l(IG_NR, n - j0);
      ig_pack(q4, w, scales, n, k, j0, pq, pd);
      for (long i0 = 0; i0 < m; i0 += IG_MR)
        ig_rows<IG_MR>(rows, i0, min_l(IG_MR, m - i0), pq, pd, y, n, j0, cols, alpha, accumulate);
    }
  });
  return true;
}
#else
#define SVC_INT_GEMM 0
#endif

#if SVC_INT_DECODE
// The most rows at which matmul_quant rounds x to 8 bits (the table's quant_int8_max_rows).
constexpr long INT_ROWS_LIMIT = SVC_INT_GEMM ? 0x7fffffffL : INT_MAX_ROWS;

// The table's matmul_quant where the unit has the integer path: int8 and q4_0
// with whole 32-blocks go the integer way (igemv up to INT_MAX_ROWS rows,
// igemm beyond where the unit has it), everything else to quant.h's.
static void matmul_quant_int(int format, const float* x, const void* w, const void* scales, float* y,
                             long m, long n, long k, bool accumulate, float alpha) {
  bool q4 = format == SVC_QUANT_Q4_0;
  if (format == SVC_QUANT_BF16 || m == 0 || n == 0 || k == 0 || k % QBLOCK || m > INT_ROWS_LIMIT) {
    matmul_quant(format, x, w, scales, y, m, n, k, accumulate, alpha);
    return;
  }
#if SVC_INT_GEMM
  if (m > INT_MAX_ROWS) {
    if (!igemm(q4, x, w, scales, y, m, n, k, alpha, accumulate))
      matmul_quant(format, x, w, scales, y, m, n, k, accumulate, alpha);
    return;
  }
#endif
  long row_bytes = int_row_bytes(q4, k);
  float* scratch = svc_scratch(SVC_SLOT_QUANT_X, (size_t)(m * row_bytes / 4));
  signed char* buf = reinterpret_cast<signed char*>(scratch);
  IntRow xr[INT_MAX_ROWS];
  for (long i = 0; i < m; i++)
    if (!quantize_row(x + i * k, k, q4, buf + i * row_bytes, &xr[i])) {
      matmul_quant(format, x, w, scales, y, m, n, k, accumulate, alpha);
      return;
    }
  igemv(q4, w, scales, xr, m, y, n, k, alpha, accumulate);
}
#endif
