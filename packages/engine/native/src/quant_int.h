// The integer decode path of matmul_quant for int8 and q4_0 weights: at up to
// 32 rows (INT_MAX_ROWS) each row of x is rounded once per call to 8 bits
// per 32-block (xq = round(x / d), d = max|x| / 127 in fp32, like llama.cpp's
// Q8_0 activations), and every weight row is multiplied with it by integer dot
// products: four byte products summed into each int32 lane per instruction,
// where the float path widens every weight to fp32 first. Each block's integer
// sum is then scaled in fp32 (x's block scale, and q4_0's weight block scale).
//
// The result is no longer the fp32 product: an element's rounding error is at
// most d/2, so |y - y_fp32| <= Σ_j |w_j| d_b(j) / 2 (the conformance tests
// hold each output to that bound, and their RMS error to its statistics).
// Prefill (many rows), bf16 and int8 rows that are not whole 32-blocks keep
// the float path (quant.h).
//
// The dot products need instructions GCC's vector extensions cannot express
// (vpdpbusd, vpmaddubsw: byte products summed into wider lanes), so this file
// uses intrinsics for those two primitives and vector extensions for the rest.
// Units: AVX-512 VNNI (zmm, vpdpbusd) and AVX2 (ymm, vpmaddubsw + vpmaddwd);
// the unit includes <immintrin.h> before its namespace. Elsewhere
// SVC_INT_DECODE is 0 and the table keeps quant.h's matmul_quant.
//
// Operands: vpdpbusd/vpmaddubsw multiply an unsigned byte by a signed one.
//   q4_0: the weight is the unsigned nibble u (0..15), x the signed byte:
//         Σ (u - 8)·xq = Σ u·xq - 8·Σ xq, and -8·Σ xq (x only) is added once
//         per block as the starting value of one lane of the block.
//   int8 with vpdpbusd: u = w + 128 (w ^ 0x80), and -128·Σ xq per block alike.
//   int8 with vpmaddubsw: |w| times xq with w's sign (vpsignb); the products
//         fit its saturating 16-bit pair sums (128·127·2 < 32767), where
//         (w + 128)·xq would not.

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && SVC_VEC_BYTES == 64
#define SVC_INT_DECODE 1
#elif defined(__AVX2__) && SVC_VEC_BYTES == 32
#define SVC_INT_DECODE 1
#else
#define SVC_INT_DECODE 0
#endif

#if SVC_INT_DECODE
constexpr long VB = SVC_VEC_BYTES;  // bytes per vector
// Rows of x the GEMVs below take (more: quant_igemm.h where the unit has it,
// else quant.h's panels). Against dequantized panels for the SGEMM they were
// about 2x faster at 32 rows on SmolLM2's shapes, even at 64, behind from 128.
constexpr long INT_MAX_ROWS = STREAM_MAX_ROWS;
typedef signed char vs8 __attribute__((vector_size(SVC_VEC_BYTES)));
typedef signed char vs8_u __attribute__((vector_size(SVC_VEC_BYTES), aligned(1), may_alias));
typedef unsigned short vu16 __attribute__((vector_size(SVC_VEC_BYTES)));

#if SVC_VEC_BYTES == 64
typedef __m512i vnative;
// acc + Σ of four u·s products per lane, u unsigned bytes and s signed ones.
static inline vi dot_us(vi acc, vs8 u, vs8 s) {
  return (vi)_mm512_dpbusd_epi32((vnative)acc, (vnative)u, (vnative)s);
}
// The same for two operand pairs (q4_0's low and high nibbles).
static inline vi dot_us2(vi acc, vs8 u1, vs8 s1, vs8 u2, vs8 s2) {
  return dot_us(dot_us(acc, u1, s1), u2, s2);
}
// acc + Σ (w + I8_BIAS)·x per lane for signed bytes w and x.
constexpr int I8_BIAS = 128;
// d[b] in lanes 4b..4b+3 (a vpermps: GCC's own lowering of that shuffle goes
// through the stack, a store-forwarding stall per call).
// The first `blocks` (< 4) q4_0 blocks of a step and their scales, the rest zero (masked loads).
static inline void q4_partial(const unsigned char* p, const unsigned short* h, long blocks, vs8* bytes,
                              v4* d) {
  *bytes = (vs8)_mm512_maskz_loadu_epi8((__mmask64)((1ULL << (16 * blocks)) - 1), p);
  *d = (v4)_mm_cvtph_ps(_mm_maskz_loadu_epi16((__mmask8)((1u << blocks) - 1), h));
}
static inline vf block_lanes(v4 d) {
  const __m512i idx = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  return (vf)_mm512_maskz_permutexvar_ps((__mmask16)0xffff, idx, _mm512_zextps128_ps512((__m128)d));
}
static inline vi dot_i8(vi acc, vs8 w, vs8 x) { return dot_us(acc, w ^ (signed char)0x80, x); }
#else
typedef __m256i vnative;
// vpmaddubsw sums byte pairs into saturating int16, vpmaddwd by ones widens them.
static inline vi widen_pairs(__m256i p) { return (vi)_mm256_madd_epi16(p, _mm256_set1_epi16(1)); }
// u < 16 here (nibbles): |pair sums| <= 2·15·127, and two of them added stay below 2^15.
static inline vi dot_us2(vi acc, vs8 u1, vs8 s1, vs8 u2, vs8 s2) {
  __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16((vnative)u1, (vnative)s1),
                               _mm256_maddubs_epi16((vnative)u2, (vnative)s2));
  return acc + widen_pairs(p);
}
constexpr int I8_BIAS = 0;
// A step's first block alone (the row's last 16 bytes) and its scale, the rest zero.
static inline void q4_partial(const unsigned char* p, const unsigned short* h, long, vs8* bytes, v4* d) {
  *bytes = (vs8)_mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  *d = v4{f16_to_f32(h[0]), 0.f, 0.f, 0.f};
}
static inline vf block_lanes(v4 d) {
  const __m256i idx = _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0);
  return (vf)_mm256_permutevar8x32_ps(_mm256_zextps128_ps256((__m128)d), idx);
}
static inline vi dot_i8(vi acc, vs8 w, vs8 x) {
  __m256i wv = (vnative)w;
  __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8((vnative)x, wv));
  return acc + widen_pairs(p);
}
#endif

// One row of x, quantized, in the order the weights are read: per step (one
// weight vector of a row) the activation bytes it multiplies (int8: VB of
// them; q4_0: VB for the low nibbles, then VB for the high ones), the block
// scale of every int32 lane and each lane's starting value (the bias term in
// the first lane of each block, 0 elsewhere). Steps past k are zero.
// A compile-time flag for a step lambda: whether it is the row's last, partial step.
template <bool B>
struct Tail {
  static constexpr bool value = B;
};

struct IntRow {
  const vs8* q;
  const vf* s;
  const vi* c;
};

// Steps of a row: int8 reads VB weights a step, q4_0 2·VB (VB bytes of nibbles).
static inline long int_steps(bool q4, long k) { return q4 ? ceil_div(k, 2 * VB) : ceil_div(k, VB); }

typedef signed char vq __attribute__((vector_size(W)));  // one byte per float lane

// One 32-block of x rounded to 8 bits: xq = round(x / d) half to even, d =
// max|x| / 127. Writes q[32] and returns false when the block holds a NaN or
// an infinity (which 8 bits cannot carry). *d is the scale, *sum Σ xq.
static inline bool quantize_block(const float* xb, signed char* q, float* d, int* sum) {
  constexpr int V = QBLOCK / W;  // vectors a block
  vf v[V];
  vi top = vi{};  // the largest |x| as bits: above 0x7f7fffff only for NaN or ±inf
  for (int i = 0; i < V; i++) {
    v[i] = vload(xb + i * W);
    vi bits;
    __builtin_memcpy(&bits, &v[i], sizeof bits);
    top = vmax(top, bits & 0x7fffffff);
  }
  int top_bits = hmax(top);
  if (top_bits > 0x7f7fffff) return false;
  float amax;
  __builtin_memcpy(&amax, &top_bits, sizeof amax);
  // 127 / amax overflows below amax ~ 3.7e-37: such blocks are scaled up by 2^64 first (exact)
  float pre = amax < 1e-30f ? 18446744073709551616.f : 1.f;
  float id = amax > 0.f ? 127.f / (amax * pre) : 0.f;
  *d = amax / 127.f;
  vi total = vi{};
  for (int i = 0; i < V; i++) {
    // round half to even by the 1.5·2^23 trick (|x·id| <= 127); (x·pre)·id, as
    // pre·id = 127 / amax overflows to infinity for the tiny blocks pre is for
    vi r = __builtin_convertvector((v[i] * pre * id + 12582912.0f) - 12582912.0f, vi);
    total += r;
    vq bytes = __builtin_convertvector(r, vq);
    __builtin_memcpy(q + i * W, &bytes, W);
  }
  *sum = hsum(total);
  return true;
}

// Quantizes x[k] (k % 32 == 0) into `out` laid out as IntRow says, into *row.
// False when x holds a NaN or an infinity (the caller takes the float path,
// so they reach y as they would there).
static bool quantize_row(const float* x, long k, bool q4, signed char* out, IntRow* row) {
  long steps = int_steps(q4, k), qbytes = steps * VB * (q4 ? 2 : 1);
  signed char* q = out;
  float* s = reinterpret_cast<float*>(out + qbytes);
  int* c = reinterpret_cast<int*>(out + qbytes + steps * VB);
  __builtin_memset(q, 0, (size_t)qbytes);
  __builtin_memset(s, 0, (size_t)steps * W * sizeof(float));
  __builtin_memset(c, 0, (size_t)steps * W * sizeof(int));
  const int bias = q4 ? 8 : I8_BIAS;
  const long lanes_per_block = q4 ? 4 : 8;  // int32 lanes a 32-block's products land in
  for (long b = 0; b < k / QBLOCK; b++) {
    signed char qb[QBLOCK];
    float d;
    int sum;
    if (!quantize_block(x + b * QBLOCK, qb, &d, &sum)) return false;
    long lane;  // the block's first lane (of the whole row's steps)
    if (q4) {
      long per_step = VB / 16, st = b / per_step, slot = b % per_step;
      __builtin_memcpy(q + st * 2 * VB + slot * 16, qb, 16);
      __builtin_memcpy(q + st * 2 * VB + VB + slot * 16, qb + 16, 16);
      lane = st * W + slot * lanes_per_block;
    } else {
      __builtin_memcpy(q + b * QBLOCK, qb, QBLOCK);
      lane = b * lanes_per_block;
    }
    for (long l = 0; l < lanes_per_block; l++) s[lane + l] = d;
    c[lane] = -bias * sum;
  }
  *row = IntRow{reinterpret_cast<const vs8*>(q), reinterpret_cast<const vf*>(s),
                reinterpret_cast<const vi*>(c)};
  return true;
}

// Bytes quantize_row writes for one row.
static inline long int_row_bytes(bool q4, long k) { return int_steps(q4, k) * VB * (q4 ? 4 : 3); }

// A weight vector from p; Last: the row's last step, 32 bytes (zmm, k % 64 == 32), the rest zero.
template <bool Last>
static inline vs8 int8_step(const signed char* p) {
  vs8 v{};
  if (Last) __builtin_memcpy(&v, p, 32);
  else v = *reinterpret_cast<const vs8_u*>(p);
  return v;
}

// Weight rows j..j+R-1 (int8, per-row scales) against M quantized rows of x.
// A step takes one weight row at a time against every row of x, whose
// operands are read again from L1 for each weight row: one row's weight
// vectors live at a time leaves the registers to the M x R accumulators
// (igemv_q4 alike; at 32 rows of x 5-12% faster than all R rows' vectors
// loaded first, docs/serving-formats.md).
template <int M, int R>
static void igemv_int8(const signed char* w, const float* wscale, const IntRow* xr, long k, float* c,
                       long ldc, long j, float alpha, bool accumulate) {
  vf acc[M][R] = {};
  long full = k / VB;
  const long ahead = stream_ahead(R * k);
  auto step = [&](long v, auto tail) {
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const signed char* p = w + (j + r) * k + v * VB;
      stream_prefetch(p + ahead);
      vs8 wv = int8_step<decltype(tail)::value>(p);
#pragma GCC unroll 4
      for (int i = 0; i < M; i++) {
        vi d = dot_i8(I8_BIAS ? xr[i].c[v] : vi{}, wv, xr[i].q[v]);
        acc[i][r] += __builtin_convertvector(d, vf) * xr[i].s[v];
      }
    }
  };
  for (long v = 0; v < full; v++) step(v, Tail<false>{});
  if (full * VB < k) step(full, Tail<true>{});
  for (int i = 0; i < M; i++)
    for (int r = 0; r < R; r++) {
      float s = hsum(acc[i][r]) * wscale[j + r] * alpha;
      float* cp = c + i * ldc + j + r;
      *cp = accumulate ? *cp + s : s;
    }
}

// One step of a q4_0 row: its nibbles as bytes (low: weights 0..15 of each
// block, high: 16..31) and the weight scale of every int32 lane (lane l holds
// block l / 4). Last: the row's last step, `blocks` (< VB / 16) blocks left.
template <bool Last>
static inline void q4_step(const unsigned char* p, const unsigned short* h, long blocks, vs8* lo, vs8* hi,
                           vf* dl) {
  vs8 bytes{};
  v4 d4{};
  if (Last) {
    q4_partial(p, h, blocks, &bytes, &d4);
  } else {
    bytes = *reinterpret_cast<const vs8_u*>(p);
#if SVC_VEC_BYTES == 64
    d4 = (v4)_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(h)));  // 4 halves
#else
    int two;  // 2 halves
    __builtin_memcpy(&two, h, 4);
    d4 = (v4)_mm_cvtph_ps(_mm_cvtsi32_si128(two));
#endif
  }
  *lo = bytes & (signed char)15;
  *hi = (vs8)((vu16)bytes >> 4) & (signed char)15;
  *dl = block_lanes(d4);
}

// Weight rows j..j+R-1 (q4_0) against M quantized rows of x.
template <int M, int R>
static void igemv_q4(const unsigned char* w, const unsigned short* scales, const IntRow* xr, long k,
                     float* c, long ldc, long j, float alpha, bool accumulate) {
  constexpr long BPS = VB / 16;  // blocks a step
  vf acc[M][R] = {};
  long nblk = k / QBLOCK, rowb = k / 2, full = nblk / BPS;
  const long ahead = stream_ahead(R * rowb);
  auto step = [&](long v, auto tail) {
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      vs8 lo, hi;
      vf dl;
      const unsigned char* p = w + (j + r) * rowb + v * VB;
      stream_prefetch(p + ahead);
      q4_step<decltype(tail)::value>(p, scales + (j + r) * nblk + v * BPS, nblk - v * BPS, &lo, &hi, &dl);
#pragma GCC unroll 4
      for (int i = 0; i < M; i++) {
        vi d = dot_us2(xr[i].c[v], lo, xr[i].q[2 * v], hi, xr[i].q[2 * v + 1]);
        acc[i][r] += __builtin_convertvector(d, vf) * (xr[i].s[v] * dl);
      }
    }
  };
  for (long v = 0; v < full; v++) step(v, Tail<false>{});
  if (full * BPS < nblk) step(full, Tail<true>{});
  for (int i = 0; i < M; i++)
    for (int r = 0; r < R; r++) {
      float s = hsum(acc[i][r]) * alpha;
      float* cp = c + i * ldc + j + r;
      *cp = accumulate ? *cp + s : s;
    }
}

template <int M, int R>
static void igemv_rows(bool q4, const void* w, const void* scales, const IntRow* xr, long k, float* c,
                       long ldc, long j, float alpha, bool accumulate) {
  if (q4)
    igemv_q4<M, R>(static_cast<const unsigned char*>(w), static_cast<const unsigned short*>(scales), xr, k,
                   c, ldc, j, alpha, accumulate);
  else
    igemv_int8<M, R>(static_cast<const signed char*>(w), static_cast<const float*>(scales), xr, k, c, ldc,
                     j, alpha, accumulate);
}

// Weight rows j..j+3 (or j alone: one) against all m quantized rows of x, four
// rows of x at a time: the weight rows are read from memory once and stay in
// L1 for the later rows of x.
static void igemv_group(bool q4, const void* w, const void* scales, const IntRow* xr, long m, float* y,
                        long n, long k, long j, bool one, float alpha, bool accumulate) {
  constexpr bool narrow = SVC_VEC_BYTES == 32;  // AVX2 has 16 registers: 2 weight rows against 3-4 x rows
  for (long i = 0; i < m; i += 4)
    with_count(min_l(4, m - i), [&](auto mi) {
      constexpr int M = mi.value;
      const IntRow* x = xr + i;
      float* c = y + i * n;
      if (one) {
        igemv_rows<M, 1>(q4, w, scales, x, k, c, n, j, alpha, accumulate);
      } else if constexpr (narrow && M >= 3) {
        for (long jj = j; jj < j + 4; jj += 2)
          igemv_rows<M, 2>(q4, w, scales, x, k, c, n, jj, alpha, accumulate);
      } else {
        igemv_rows<M, 4>(q4, w, scales, x, k, c, n, j, alpha, accumulate);
      }
    });
}

// One int8 weight row against one quantized row of x (batch-1 decode), the row
// read front to back (gemv.h's gemv_one).
static float irow_int8(const signed char* wr, const IntRow& x, long k) {
  vf acc[4] = {};
  long full = k / VB, v = 0;
  auto step = [&](long at, int u, auto tail) {
    const signed char* p = wr + at * VB;
    stream_prefetch(p + STREAM_AHEAD);
    vi c0 = I8_BIAS ? x.c[at] : vi{};
    vs8 wv = int8_step<decltype(tail)::value>(p);
    acc[u] += __builtin_convertvector(dot_i8(c0, wv, x.q[at]), vf) * x.s[at];
  };
  for (; v + 4 <= full; v += 4)
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) step(v + u, u, Tail<false>{});
  for (int u = 0; v < full; v++, u++) step(v, u, Tail<false>{});
  if (full * VB < k) step(full, 3, Tail<true>{});
  return hsum((acc[0] + acc[1]) + (acc[2] + acc[3]));
}

// All m quantized rows of x against the n weight rows, groups of 4 weight rows split over the pool.
static void igemv(bool q4, const void* w, const void* scales, const IntRow* xr, long m, float* y, long n,
                  long k, float alpha, bool accumulate) {
  if (m == 1 && !q4) {  // q4_0 keeps its groups: a row alone reloads x's bytes, scales and offsets every step
    const signed char* w8 = static_cast<const signed char*>(w);
    const float* row_scales = static_cast<const float*>(scales);
    gemv_one(y, 1, n, k, alpha, accumulate,
             [&](long j) { return irow_int8(w8 + j * k, xr[0], k) * row_scales[j]; });
    return;
  }
  long groups = n / 4;
  stream_shares(groups, (double)n * k * m, [&](long g0, long g1) {
    for (long g = g0; g < g1; g++) igemv_group(q4, w, scales, xr, m, y, n, k, g * 4, false, alpha, accumulate);
  });
  for (long j = groups * 4; j < n; j++)
    igemv_group(q4, w, scales, xr, m, y, n, k, j, true, alpha, accumulate);
}

#endif
