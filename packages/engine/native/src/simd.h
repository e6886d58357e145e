// Width-generic SIMD vocabulary built on GCC/Clang vector extensions. Each ISA
// translation unit defines SVC_VEC_BYTES (64 = AVX-512, 32 = AVX2, 16 = SSE2 /
// NEON / wasm simd128) and includes this header inside its own namespace, so
// the same kernel source compiles to zmm, ymm or xmm code without intrinsics.
// No libc: the wasm build links nothing but this code.
#ifndef SVC_VEC_BYTES
#error "SVC_VEC_BYTES must be defined by the including translation unit"
#endif

constexpr int W = SVC_VEC_BYTES / 4;  // floats per vector
typedef float vf __attribute__((vector_size(SVC_VEC_BYTES)));
typedef int vi __attribute__((vector_size(SVC_VEC_BYTES)));
// Unaligned, aliasing-safe views for loads and stores through plain float*.
typedef float vf_u __attribute__((vector_size(SVC_VEC_BYTES), aligned(4), may_alias));
typedef int vi_u __attribute__((vector_size(SVC_VEC_BYTES), aligned(4), may_alias));

static inline vf vload(const float* p) { return *reinterpret_cast<const vf_u*>(p); }
static inline void vstore(float* p, vf v) { *reinterpret_cast<vf_u*>(p) = v; }

// v as a register. A vector read once and used by two instructions is
// otherwise folded into both as a memory operand, two loads of the same
// line; where that line is still arriving from memory (the decode GEMVs'
// weights) the second load cost bf16 decode a tenth of its speed on Zen 5,
// and on Zen 3 (AVX2, which cannot shift a memory operand: it loaded the
// vector for the shift and again for the mask) about 8% of small bf16's.
template <class V>
static inline V in_register(V v) {
#if defined(__x86_64__) && defined(__AVX2__)
  __asm__("" : "+v"(v));
#endif
  return v;
}

// Streaming (non-temporal) stores of whole vectors at vector-aligned addresses,
// where the unit has them (its translation unit includes <immintrin.h>): the
// line is written to memory without being read first or kept in the caches.
// For outputs too large to stay cached until they are read. They are weakly
// ordered: a thread fences (vstream_fence) before others may read what it wrote.
#if SVC_VEC_BYTES == 64 && defined(__AVX512F__) && (defined(_IMMINTRIN_H_INCLUDED) || defined(__IMMINTRIN_H))
#define SVC_HAS_STREAM 1
static inline void vstream(float* p, vf v) { _mm512_stream_ps(p, (__m512)v); }
#elif SVC_VEC_BYTES == 32 && defined(__AVX__) && (defined(_IMMINTRIN_H_INCLUDED) || defined(__IMMINTRIN_H))
#define SVC_HAS_STREAM 1
static inline void vstream(float* p, vf v) { _mm256_stream_ps(p, (__m256)v); }
#else
#define SVC_HAS_STREAM 0
static inline void vstream(float* p, vf v) { vstore(p, v); }
#endif
static inline bool vector_aligned(const float* p) { return ((__SIZE_TYPE__)p & (SVC_VEC_BYTES - 1)) == 0; }
static inline void vstream_fence() {
#if SVC_HAS_STREAM
  _mm_sfence();
#endif
}
// Broadcast as a shuffle of lane 0: compilers turn it into one vbroadcastss
// (or an embedded {1toN} operand), where a lane-by-lane fill is not recognised.
#if SVC_VEC_BYTES == 64
#define SVC_LANES0 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#elif SVC_VEC_BYTES == 32
#define SVC_LANES0 0, 0, 0, 0, 0, 0, 0, 0
#else
#define SVC_LANES0 0, 0, 0, 0
#endif
// The even and odd lanes of two vectors (a __builtin_shufflevector over both).
#if SVC_VEC_BYTES == 64
#define SVC_EVEN_LANES 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define SVC_ODD_LANES 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31
#elif SVC_VEC_BYTES == 32
#define SVC_EVEN_LANES 0, 2, 4, 6, 8, 10, 12, 14
#define SVC_ODD_LANES 1, 3, 5, 7, 9, 11, 13, 15
#else
#define SVC_EVEN_LANES 0, 2, 4, 6
#define SVC_ODD_LANES 1, 3, 5, 7
#endif
static inline vf vset1(float x) {
  vf r = {x};
  return __builtin_shufflevector(r, r, SVC_LANES0);
}
static inline vf vmax(vf a, vf b) { return a > b ? a : b; }
static inline vf vmin(vf a, vf b) { return a < b ? a : b; }

// Horizontal reductions as a shuffle tree (log2(W) steps), not a serial lane loop.
#if SVC_VEC_BYTES == 64
#define SVC_TREE(op)                                                                            \
  v = op(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7)); \
  v = op(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11)); \
  v = op(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13)); \
  v = op(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
#elif SVC_VEC_BYTES == 32
#define SVC_TREE(op)                                                      \
  v = op(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3));       \
  v = op(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5));       \
  v = op(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6));
#else
#define SVC_TREE(op)                                         \
  v = op(v, __builtin_shufflevector(v, v, 2, 3, 0, 1));      \
  v = op(v, __builtin_shufflevector(v, v, 1, 0, 3, 2));
#endif
static inline vf vadd(vf a, vf b) { return a + b; }
static inline vi vadd(vi a, vi b) { return a + b; }
static inline vi vmax(vi a, vi b) { return a > b ? a : b; }
static inline float hsum(vf v) {
  SVC_TREE(vadd)
  return v[0];
}
static inline float hmax(vf v) {
  SVC_TREE(vmax)
  return v[0];
}
static inline int hsum(vi v) {
  SVC_TREE(vadd)
  return v[0];
}
static inline int hmax(vi v) {
  SVC_TREE(vmax)
  return v[0];
}

// The four horizontal sums of a0..a3 into out[0..3], sharing the shuffle tree
// (half the shuffles and adds of four hsum calls).
static inline void hsum4(vf a0, vf a1, vf a2, vf a3, float* out) {
#if SVC_VEC_BYTES == 64
  vf x = __builtin_shufflevector(a0, a1, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
         __builtin_shufflevector(a0, a1, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  vf y = __builtin_shufflevector(a2, a3, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
         __builtin_shufflevector(a2, a3, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  vf z = __builtin_shufflevector(x, y, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
         __builtin_shufflevector(x, y, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  z += __builtin_shufflevector(z, z, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  z += __builtin_shufflevector(z, z, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  out[0] = z[0], out[1] = z[4], out[2] = z[8], out[3] = z[12];
#elif SVC_VEC_BYTES == 32
  vf x = __builtin_shufflevector(a0, a1, 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(a0, a1, 4, 5, 6, 7, 12, 13, 14, 15);
  vf y = __builtin_shufflevector(a2, a3, 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(a2, a3, 4, 5, 6, 7, 12, 13, 14, 15);
  vf z = __builtin_shufflevector(x, y, 0, 1, 4, 5, 8, 9, 12, 13) +
         __builtin_shufflevector(x, y, 2, 3, 6, 7, 10, 11, 14, 15);
  z += __builtin_shufflevector(z, z, 1, 0, 3, 2, 5, 4, 7, 6);
  out[0] = z[0], out[1] = z[2], out[2] = z[4], out[3] = z[6];
#else
  vf x = __builtin_shufflevector(a0, a1, 0, 1, 4, 5) + __builtin_shufflevector(a0, a1, 2, 3, 6, 7);
  vf y = __builtin_shufflevector(a2, a3, 0, 1, 4, 5) + __builtin_shufflevector(a2, a3, 2, 3, 6, 7);
  vf z = __builtin_shufflevector(x, y, 0, 2, 4, 6) + __builtin_shufflevector(x, y, 1, 3, 5, 7);
  out[0] = z[0], out[1] = z[1], out[2] = z[2], out[3] = z[3];
#endif
}

// exp(x) for float lanes: x = n*ln2 + r, |r| <= ln2/2, 2^n built in the exponent
// bits, e^r by a degree-6 polynomial (max rel. error ~2e-7 on the clamped range).
static inline vf vexp(vf x) {
  x = vmin(vmax(x, vset1(-87.3f)), vset1(88.7f));
  const vf magic = vset1(12582912.0f);  // 1.5 * 2^23: adding it rounds to integer
  vf n = (x * 1.44269504088896341f + magic) - magic;
  vf r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  vf p = vset1(1.0f / 720.0f);
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
  vf scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

static inline float sexp(float x) { return vexp(vset1(x))[0]; }

// Natural log in double for the few scalar uses (log-sum-exp): x = m * 2^e with
// m in [sqrt(.5), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)) by its odd series.
static inline double slog(double x) {
  if (!(x > 0)) return x == 0 ? -__builtin_inf() : __builtin_nan("");
  if (x == __builtin_inf()) return x;
  unsigned long long bits;
  __builtin_memcpy(&bits, &x, 8);
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;  // m in [1,2)
  double m;
  __builtin_memcpy(&m, &bits, 8);
  if (e == -1023) return slog(x * 4503599627370496.0) - 52 * 0.69314718055994530942;  // subnormal
  if (m > 1.41421356237309505) {
    m *= 0.5;
    e += 1;
  }
  // |s| <= 0.1716, so the series' terms past s^23/23 are below 1e-19: Horner's
  // rule over the first twelve odd reciprocals (folded to constants).
  double s = (m - 1) / (m + 1), s2 = s * s, sum = 0;
#pragma GCC unroll 12
  for (int i = 23; i >= 1; i -= 2) sum = sum * s2 + 1.0 / i;
  return 2 * s * sum + e * 0.69314718055994530942;
}
