// bf16 GEMM with AVX512_BF16's vdpbf16ps, for the training products with
// frozen bf16 weights, or a bf16 run's int8 weights (quant_train.h). Included by the AVX-512 units only; its
// functions carry target("avx512bf16") and run only where the CPU has it
// (svc_cpu_has_bf16_dot), so the unit itself still runs on any AVX-512 CPU.
//
// vdpbf16ps sums, per 32-bit lane, two bf16 products into an fp32
// accumulator: both operands come as pairs of consecutive elements along the
// contraction. So x is rounded to bf16 (nearest even, vcvtne2ps2bf16) and
// packed as [row panels of BF_MR][pairs][BF_MR], a broadcast of one pair per
// row; W as [column panels of BF_NR][pairs][BF_NR], two vector loads a step.
// The micro-kernel holds BF_MR x 2 zmm accumulators (24 of 32). Sums are fp32
// throughout; alpha (and an int8 W's row scales, forward) is applied once at the store.

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// `__m512i __Y = __Y` idiom once inlined here (a false positive: 118 of the
// build's 140 warnings); silenced for this file only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

constexpr int BF_MR = 12, BF_NR = 32;
constexpr long BF_KC = 256;  // pairs per pass (a B micro-panel of 32 KB); bf16_gemm_weights takes up to 1.5x in one
constexpr long BF_NC = 512;  // columns of W packed per block
constexpr long BF_XC = 4096; // the most pairs of the contraction per chunk (x packed 16 KB a row)
// Bytes of packed x a chunk may take: each W micro-panel's task reads all of it once a chunk, so it
// should stay in L2 (down's forward, 1024 rows over 1536, packed 3.2 MB whole, ran at ~75% of up's).
constexpr long BF_X_BYTES = 1L << 20;

// Pairs of the contraction per chunk, so that x's packed chunk (rows padded to whole
// panels, 4 bytes a pair) stays within maxBytes: a multiple of `multiple`, at least
// minPairs, at most BF_XC.
static long bf16_chunk_pairs(long paddedRows, long maxBytes, long minPairs, long multiple) {
  long fit = maxBytes / (paddedRows * 4) / multiple * multiple;
  return min_l(BF_XC, fit < minPairs ? minPairs : fit);
}

static bool svc_cpu_has_bf16_dot() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return has;
}

// r[i] (16 words each) transposed in registers: afterwards r[c] holds word c of
// every input row, in row order.
static inline void transpose_words16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {  // 2 x 2 blocks of words
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // 4 x 4
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; i++) {  // 128-bit lanes: rows i, i+4, i+8, i+12 -> 8 x 8, then 16 x 16
    t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
    r[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xdd);
  }
}

// One panel: rows < BF_MR of x (ldx apart; rows past `rows` zero) as pairs into
// o[p * BF_MR + i], p < kp. 16 pairs of every row at a time are rounded, then
// transposed in registers and stored 12 words a pair. Against storing each
// row's words one by one: attention's bf16 blocks 1.06-1.07x (SmolLM2's heads,
// 120 calls: forward 31.2 -> 29.0 ms, backward 64.6 -> 60.6 ms), the weight
// GEMMs level (0.99-1.04x). colScale (nullable): x's columns multiplied by
// colScale[0..kk) before the rounding (an int8 W's row scales, in dy·W).
__attribute__((target("avx512bf16"))) static void bf16_pack_panel(const float* x, long ldx, int rows, long kk,
                                                                   unsigned int* o, long kp,
                                                                   const float* colScale = nullptr) {
  long p = 0;
  const __mmask16 panel = (__mmask16)((1u << BF_MR) - 1);
  for (; 2 * p + 32 <= kk; p += 16) {
    __m512i r[16];
    for (int i = 0; i < 16; i++) {
      if (i >= rows) {
        r[i] = _mm512_setzero_si512();
        continue;
      }
      const float* xr = x + i * ldx + 2 * p;
      __m512 lo = _mm512_loadu_ps(xr), hi = _mm512_loadu_ps(xr + 16);
      if (colScale) {
        lo = _mm512_mul_ps(lo, _mm512_loadu_ps(colScale + 2 * p));
        hi = _mm512_mul_ps(hi, _mm512_loadu_ps(colScale + 2 * p + 16));
      }
      r[i] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
    }
    transpose_words16(r);
    for (int c = 0; c < 16; c++) _mm512_mask_storeu_epi32(o + (p + c) * BF_MR, panel, r[c]);
  }
  for (int i = 0; i < BF_MR; i++) {  // the ragged end, pair by pair
    const float* xr = x + i * ldx;
    auto at = [&](long j) { return colScale ? xr[j] * colScale[j] : xr[j]; };
    for (long q = p; q < kp; q++) {
      unsigned int a = i < rows ? bf16_bits(at(2 * q)) : 0u;
      unsigned int b = i < rows && 2 * q + 1 < kk ? bf16_bits(at(2 * q + 1)) : 0u;
      o[q * BF_MR + i] = a | (b << 16);
    }
  }
}

// x [m, kk] (rows ldx apart; its columns times colScale where given) as bf16 pairs into
// out [ceil(m/BF_MR)][kp][BF_MR], zero-padded.
static void bf16_pack_x(const float* x, long ldx, long m, long kk, unsigned int* out, long kp,
                        const float* colScale = nullptr) {
  long panels = ceil_div(m, BF_MR);
  long tasks = min_l(panels, svc_num_threads() * 4L);
  par(tasks, [&](long t) {
    for (long pn = panels * t / tasks; pn < panels * (t + 1) / tasks; pn++)
      bf16_pack_panel(x + pn * BF_MR * ldx, ldx, (int)min_l(BF_MR, m - pn * BF_MR), kk, out + pn * kp * BF_MR, kp,
                      colScale);
  });
}

// A frozen W's elements as bf16 words: bf16 weights as they are stored; int8
// codes converted, exactly (|code| <= 127 has at most 7 significant bits), so
// the int8 layout's per-row scale is applied outside the dot products.
static inline unsigned int bf16_word(unsigned short w) { return w; }
static inline unsigned int bf16_word(signed char c) { return bf16_bits((float)c); }
// Elements e[0], e[1] as one pair (the first in the low half), as vdpbf16ps reads them.
template <class W>
static inline unsigned int bf16_pair(const W* e) {
  return bf16_word(e[0]) | (bf16_word(e[1]) << 16);
}
static inline __m512i bf16_words32(const unsigned short* w) { return _mm512_loadu_si512(w); }
static inline __m512i bf16_words32(const signed char* c) {
  __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c));
  auto words16 = [](__m128i b16) {  // int8 -> fp32 (exact) -> its top 16 bits
    __m512i f = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b16)));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(f, 16));
  };
  __m512i lo = _mm512_zextsi256_si512(words16(_mm256_castsi256_si128(b)));
  return _mm512_inserti64x4(lo, words16(_mm256_extracti128_si256(b, 1)), 1);
}

// 16 rows of W (row0 the first's element 2·p0, rows k apart) as pairs into o[p * BF_NR + r]
// for r < 16 and the kk elements' pairs: 16 x 16 blocks of pairs (32-bit words) transposed
// in registers, the ragged end word by word. The scalar walk ran at ~9 GB/s, a third of the
// forward's time on Qwen2.5-1.5B's 256-row products.
template <class W>
static void bf16_pack_w_rows16(const W* row0, long k, long kk, unsigned int* o) {
  long p = 0;
  for (; 2 * (p + 16) <= kk; p += 16) {
    __m512i r[16];
    for (int i = 0; i < 16; i++) r[i] = bf16_words32(row0 + i * k + 2 * p);
    transpose_words16(r);
    for (int c = 0; c < 16; c++)  // r[c]: word c of the 16 rows, in row order
      _mm512_storeu_si512(o + (p + c) * BF_NR, r[c]);
  }
  long kp = (kk + 1) / 2;
  for (int i = 0; i < 16; i++) {
    const W* row = row0 + i * k;
    for (long q = p; q < kk / 2; q++) o[q * BF_NR + i] = bf16_pair(row + 2 * q);
    if (kk % 2) o[(kp - 1) * BF_NR + i] = bf16_word(row[kk - 1]);
  }
}

// Columns j0..j0+nc of op(W) as pairs along the contraction into panels [nc/BF_NR][kp][BF_NR]:
// forward (y = x·Wᵀ) column j is W's row j, pairs along it; backward (dx = dy·W) column j
// is W's column j, pairs across two rows. Each loop reads W front to back (a strided
// walk across rows left the backward's packing latency-bound: 4x the forward's).
// Only pairs p0.. of the contraction, kk of its elements (kp = ceil(kk/2) pairs): a chunk of it.
// kpad (>= kp; 0: kp): pairs a panel holds, those past kp zero (the AMX tiles' whole blocks).
// W: bf16 words (unsigned short) or int8 codes (signed char), bf16_word's types.
template <class W>
static void bf16_pack_w(const W* w, long n, long k, bool transW, long j0, long nc, long p0, long kk,
                        unsigned int* out, long kpad = 0) {
  long panels = ceil_div(nc, BF_NR), kp = (kk + 1) / 2;
  if (kpad < kp) kpad = kp;
  for (long pn = 0; pn < panels && kpad > kp; pn++)
    for (long p = kp; p < kpad; p++)
      for (int jj = 0; jj < BF_NR; jj++) out[(pn * kpad + p) * BF_NR + jj] = 0;
  if (!transW) {  // W [n, k]: column j of Wᵀ is row j, read along; a panel (kp x 128 B) stays cached
    long tasks = min_l(panels, svc_num_threads() * 2L);
    par(tasks, [&](long t) {
      for (long pn = panels * t / tasks; pn < panels * (t + 1) / tasks; pn++) {
        unsigned int* o = out + pn * kpad * BF_NR;
        int jj = 0;
        for (; jj < BF_NR && pn * BF_NR + jj + 16 <= nc; jj += 16)
          bf16_pack_w_rows16(w + (j0 + pn * BF_NR + jj) * k + 2 * p0, k, kk, o + jj);
        for (; jj < BF_NR; jj++) {
          long j = j0 + pn * BF_NR + jj;
          if (j >= j0 + nc) {
            for (long p = 0; p < kp; p++) o[p * BF_NR + jj] = 0;
            continue;
          }
          const W* row = w + j * k + 2 * p0;
          for (long p = 0; p < kk / 2; p++) o[p * BF_NR + jj] = bf16_pair(row + 2 * p);
          if (kk % 2) o[(kp - 1) * BF_NR + jj] = bf16_word(row[kk - 1]);
        }
      }
    });
    return;
  }
  // W [n, k], contraction over n: pair p is rows 2p and 2p+1, each read along its columns j0..j0+nc
  long tasks = min_l(kp, svc_num_threads() * 4L);
  par(tasks, [&](long t) {
    for (long p = kp * t / tasks; p < kp * (t + 1) / tasks; p++) {
      const W* r0 = w + 2 * (p0 + p) * k + j0;
      const W* r1 = 2 * (p0 + p) + 1 < n ? r0 + k : nullptr;
      for (long pn = 0; pn < panels; pn++) {
        unsigned int* __restrict o = out + (pn * kpad + p) * BF_NR;
        long c0 = pn * BF_NR, cols = min_l(BF_NR, nc - c0);
        if (cols == BF_NR && r1) {
          for (int jj = 0; jj < BF_NR; jj++)
            o[jj] = bf16_word(r0[c0 + jj]) | (bf16_word(r1[c0 + jj]) << 16);
          continue;
        }
        for (int jj = 0; jj < BF_NR; jj++) {
          unsigned int lo = jj < cols ? bf16_word(r0[c0 + jj]) : 0u;
          unsigned int hi = jj < cols && r1 ? bf16_word(r1[c0 + jj]) : 0u;
          o[jj] = lo | (hi << 16);
        }
      }
    }
  });
}

// c[rows, cols] of one BF_MR x BF_NR tile (=|+=) alpha · a-panel · b-panel over kc pairs
// (+ alpha2 · a2 · b2: a LoRA branch's second product in fp32, the tile's rows of a2 [rows, k2]
// against one panel of op(b2) packed [k2][BF_NR]; none where k2 is 0). colScale (nullable): the
// tile's columns also times colScale[0..cols) (an int8 W's row scales, in x·Wᵀ), before the term.
__attribute__((target("avx512bf16"))) static void bf16_micro(const unsigned int* a, const unsigned int* b,
                                                              long kc, float* c, long ldc, int rows, int cols,
                                                              float alpha, bool load_c, const float* a2 = nullptr,
                                                              const float* b2 = nullptr, long k2 = 0,
                                                              float alpha2 = 0.f, const float* colScale = nullptr) {
  __m512 acc[BF_MR][2];
  for (int i = 0; i < BF_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (long p = 0; p < kc; p++) {
    __m512i b0 = _mm512_loadu_si512(b + p * BF_NR), b1 = _mm512_loadu_si512(b + p * BF_NR + 16);
#pragma GCC unroll 12
    for (int i = 0; i < BF_MR; i++) {
      __m512i av = _mm512_set1_epi32((int)a[p * BF_MR + i]);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], (__m512bh)av, (__m512bh)b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], (__m512bh)av, (__m512bh)b1);
    }
  }
  __mmask16 m0 = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1);
  __mmask16 m1 = cols >= 32 ? (__mmask16)0xffff : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1) : 0;
  __m512 va0 = _mm512_set1_ps(alpha), va1 = va0;
  if (colScale) {
    va0 = _mm512_mul_ps(va0, _mm512_maskz_loadu_ps(m0, colScale));
    va1 = _mm512_mul_ps(va1, _mm512_maskz_loadu_ps(m1, colScale + 16));
  }
  for (int i = 0; i < BF_MR; i++) {
    acc[i][0] = _mm512_mul_ps(acc[i][0], va0);
    acc[i][1] = _mm512_mul_ps(acc[i][1], va1);
  }
  for (long p = 0; p < k2; p++) {  // fp32 FMAs; rows past `rows` stay unread and unstored
    __m512 b0 = _mm512_loadu_ps(b2 + p * BF_NR), b1 = _mm512_loadu_ps(b2 + p * BF_NR + 16);
#pragma GCC unroll 12
    for (int i = 0; i < BF_MR; i++) {
      if (i >= rows) break;
      __m512 av = _mm512_set1_ps(alpha2 * a2[i * k2 + p]);
      acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < rows; i++) {
    float* cr = c + i * ldc;
    __m512 v0 = acc[i][0], v1 = acc[i][1];
    if (load_c) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    _mm512_mask_storeu_ps(cr, m0, v0);
    _mm512_mask_storeu_ps(cr + 16, m1, v1);
  }
}

// op(b2) [k2, cols] (transB2: b2 is [cols, k2]) as [column panels of BF_NR][k2][BF_NR], zero-padded.
static float* bf16_pack_low_rank(const float* b2, long k2, long cols, bool transB2) {
  long panels = ceil_div(cols, BF_NR);
  float* out = svc_scratch(SVC_SLOT_CALLER, (size_t)panels * k2 * BF_NR);
  for (long q = 0; q < panels; q++)
    for (long p = 0; p < k2; p++)
      for (int jj = 0; jj < BF_NR; jj++) {
        long j = q * BF_NR + jj;
        out[(q * k2 + p) * BF_NR + jj] = j >= cols ? 0.f : transB2 ? b2[j * k2 + p] : b2[p * cols + j];
      }
  return out;
}

// y (=|+=) alpha · x · op(W) (+ alpha2 · a2[m, k2] · op(b2)), W bf16 [n, k]:
// transW false y[m, n] = x[m, k]·Wᵀ, true y[m, k] = x[m, n]·W. The low-rank
// term (a LoRA branch's second product) joins the last pass over each tile,
// so y is written once. W may be int8 codes with rowScales [n] (the int8 layout,
// W = diag(rowScales)·codes): the codes are exact bf16 values, and the scales
// are applied in fp32: to y's columns at the store in x·Wᵀ, to dy's columns
// before its rounding in dy·W.
template <class W>
static void bf16_gemm_weights(const W* w, const float* x, float* y, long m, long n, long k, bool transW,
                              float alpha, bool accumulate, const float* a2 = nullptr, const float* b2 = nullptr,
                              long k2 = 0, bool transB2 = false, float alpha2 = 0.f,
                              const float* rowScales = nullptr) {
  long inner = transW ? n : k, cols = transW ? k : n;
  long mpanels = ceil_div(m, BF_MR);
  const float* b2p = a2 && k2 > 0 ? bf16_pack_low_rank(b2, k2, cols, transB2) : nullptr;
  // The contraction a chunk at a time, as many pairs as keep x's packed chunk within
  // BF_X_BYTES (at least half a pass, at most BF_XC): each task reads the whole chunk,
  // so it is read from L2, not L3, and y takes a pass per chunk (1024 rows: 256 pairs;
  // the LM head's input gradient, 512 rows over the vocabulary: 508).
  long kpChunk = bf16_chunk_pairs(mpanels * BF_MR, BF_X_BYTES, BF_KC / 2, 1);
  long kpAll = (inner + 1) / 2, kpMax = min_l(kpAll, kpChunk);
  unsigned int* xp = reinterpret_cast<unsigned int*>(svc_scratch(SVC_SLOT_QUANT_X, (size_t)mpanels * BF_MR * kpMax));
  unsigned int* wp = reinterpret_cast<unsigned int*>(svc_scratch(SVC_SLOT_QUANT, (size_t)BF_NC * kpMax));
  for (long p0 = 0; p0 < kpAll; p0 += kpChunk) {
    long kk = min_l(inner - 2 * p0, 2 * kpChunk), kp = (kk + 1) / 2;
    bool load = accumulate || p0 > 0, lastChunk = p0 + kpChunk >= kpAll;
    bf16_pack_x(x + 2 * p0, inner, m, kk, xp, kp, transW && rowScales ? rowScales + 2 * p0 : nullptr);
    for (long jc = 0; jc < cols; jc += BF_NC) {
      long nc = min_l(BF_NC, cols - jc), npanels = ceil_div(nc, BF_NR);
      bf16_pack_w(w, n, k, transW, jc, nc, p0, kk, wp);
      // A task: one W micro-panel against a share of the row panels; two shares
      // per panel when there are fewer panels than threads.
      long splits = npanels >= 2L * svc_num_threads() ? 1 : 2;
      // Pairs per pass: BF_KC, or the whole chunk when it is at most 1.5 BF_KC (a B
      // micro-panel of up to 48 KB). A short second pass cost more than its share:
      // SmolLM2's and Gemma-3's LM-head forwards (288 and 320 pairs at 512 rows) ran
      // 1.10-1.14x faster in one pass on a Zen 4 VM (32 KB L1), the other shapes level.
      long kstep = kp <= BF_KC * 3 / 2 ? kp : BF_KC;
      par(npanels * splits, [&](long t) {
        long q = t / splits, s = t % splits;
        long r0 = mpanels * s / splits, r1 = mpanels * (s + 1) / splits;
        int ncols = (int)min_l(BF_NR, nc - q * BF_NR);
        for (long pc = 0; pc < kp; pc += kstep) {
          long kc = min_l(kstep, kp - pc);
          for (long r = r0; r < r1; r++) {
            int rows = (int)min_l(BF_MR, m - r * BF_MR);
            bool lowRank = b2p && lastChunk && pc + kc == kp;
            bf16_micro(xp + r * kp * BF_MR + pc * BF_MR, wp + q * kp * BF_NR + pc * BF_NR, kc,
                       y + r * BF_MR * cols + jc + q * BF_NR, cols, rows, ncols, alpha, load || pc > 0,
                       lowRank ? a2 + r * BF_MR * k2 : nullptr,
                       lowRank ? b2p + (jc / BF_NR + q) * k2 * BF_NR : nullptr, lowRank ? k2 : 0, alpha2,
                       !transW && rowScales ? rowScales + jc + q * BF_NR : nullptr);
          }
        }
      });
    }
  }
}

#pragma GCC diagnostic pop
