// bf16 GEMM on AMX tiles (TDPBF16PS), the amx unit's path for the training
// products with frozen bf16 weights (quant_train.h). Included after
// bf16_gemm.h, whose W packing it shares: op(W) as [column panels of BF_NR]
// [pairs][BF_NR] is exactly two B tiles per 16 pairs (16 rows of 16 columns x
// a bf16 pair, rows 128 bytes apart).
//
// Where vdpbf16ps (bf16_gemm.h) does 64 bf16 FLOPs an instruction, one
// TDPBF16PS multiplies a 16 x 32 A tile by a 32 x 16 B tile into a 16 x 16
// fp32 C tile: 16,384 FLOPs. On the Xeon this was written on, vdpbf16ps runs
// at half the fp32 FMA rate (236 against 475 GFLOP/s on two cores), so
// without tiles bf16 training would be slower than fp32 there.
//
// x is rounded to bf16 (nearest even) and packed as A tiles: [row panels of
// 16][blocks of 16 pairs][16 rows][16 pairs], each tile 1 KB contiguous. The
// contraction of a chunk is zero-padded to whole 16-pair blocks on both
// operands. A task keeps a 32 x 32 block of C in four tiles over the chunk
// (tiles 0-3; A in 4-5, B in 6-7): whole tiles at alpha 1 start from y's
// previous value, the others add it in fp32 on the way out, after alpha and
// the low-rank term. Tiles need the process's
// permission (isas.h asks the kernel once) and each thread's configuration,
// loaded at the start of every task and released at its end, so no thread
// holds tile state between calls.

#include <immintrin.h>

constexpr int AMX_MR = 16;   // rows of a tile
constexpr long AMX_KB = 16;  // pairs of the contraction a tile step takes (32 bf16)
// Packed x a chunk may take. Larger than BF_X_BYTES: a task holds its two row panels
// in L1 and streams the W block, so x need not stay in L2; 1 MB split SmolLM2's
// 576-wide contraction into 256 + 32 pairs and a second pass over y (up's forward ran
// at 544 GFLOP/s then, 777 with 3 MB).
constexpr long AMX_X_BYTES = 3L << 20;

struct alignas(64) AmxTileConfig {
  unsigned char palette, startRow, reserved[14];
  unsigned short colsBytes[16];
  unsigned char rows[16];
};

// Palette 1, tiles 0-7 all 16 rows of 64 bytes.
__attribute__((target("amx-tile"))) static void amx_configure() {
  AmxTileConfig cfg = {};
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) {
    cfg.colsBytes[t] = 64;
    cfg.rows[t] = AMX_MR;
  }
  _tile_loadconfig(&cfg);
}

// Row panel pn of x [m, kk] (rows ldx apart) as bf16 pairs into its A tiles o [kb][16][16], zero-padded.
__attribute__((target("avx512bf16"))) static void amx_pack_panel(const float* x, long ldx, long m, long kk,
                                                                 unsigned int* o, long kb, long pn) {
  long kp = (kk + 1) / 2;
  for (int i = 0; i < AMX_MR; i++) {
    long row = pn * AMX_MR + i;
    const float* xr = x + row * ldx;
    for (long b = 0; b < kb; b++) {
      unsigned int* ob = o + (b * AMX_MR + i) * AMX_KB;
      long e0 = 2 * b * AMX_KB;  // the block's first element
      if (row < m && e0 + 32 <= kk) {
        __m512 lo = _mm512_loadu_ps(xr + e0), hi = _mm512_loadu_ps(xr + e0 + 16);
        _mm512_storeu_si512(ob, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
        continue;
      }
      for (long q = 0; q < AMX_KB; q++) {
        long p = b * AMX_KB + q;
        unsigned int lo = row < m && p < kp ? bf16_bits(xr[2 * p]) : 0u;
        unsigned int hi = row < m && 2 * p + 1 < kk ? bf16_bits(xr[2 * p + 1]) : 0u;
        ob[q] = lo | (hi << 16);
      }
    }
  }
}

// x [m, kk] as A tiles [ceil(m/16)][kb][16][16].
static void amx_pack_x(const float* x, long ldx, long m, long kk, unsigned int* out, long kb) {
  long panels = ceil_div(m, AMX_MR);
  long tasks = min_l(panels, svc_num_threads() * 4L);
  par(tasks, [&](long t) {
    for (long pn = panels * t / tasks; pn < panels * (t + 1) / tasks; pn++)
      amx_pack_panel(x, ldx, m, kk, out + pn * kb * AMX_MR * AMX_KB, kb, pn);
  });
}

// One C tile's way out: buf [16][16] fp32 sums -> y's rows x cols (rows ldc apart),
// times alpha, plus alpha2 · a2 [rows, k2] · b2 ([k2] rows BF_NR apart) where k2 > 0,
// plus y's previous value where load_c. The low-rank term goes 16 of its k2 at a time,
// with those rows of b2 (scaled by alpha2) held in registers across the tile's rows.
__attribute__((target("avx512f"))) static void amx_store_tile(float* buf, float* y, long ldc, int rows, int cols,
                                                              float alpha, bool load_c, const float* a2,
                                                              const float* b2, long k2, float alpha2) {
  if (alpha != 1.f)
    for (int i = 0; i < rows; i++)
      _mm512_store_ps(buf + i * 16, _mm512_mul_ps(_mm512_load_ps(buf + i * 16), _mm512_set1_ps(alpha)));
  for (long p0 = 0; p0 < k2; p0 += 16) {
    __m512 bv[16];
    if (k2 - p0 >= 16) {
#pragma GCC unroll 16
      for (int p = 0; p < 16; p++) bv[p] = _mm512_mul_ps(_mm512_set1_ps(alpha2), _mm512_loadu_ps(b2 + (p0 + p) * BF_NR));
      for (int i = 0; i < rows; i++) {
        const float* ar = a2 + i * k2 + p0;
        __m512 t = _mm512_load_ps(buf + i * 16);
#pragma GCC unroll 16
        for (int p = 0; p < 16; p++) t = _mm512_fmadd_ps(_mm512_set1_ps(ar[p]), bv[p], t);
        _mm512_store_ps(buf + i * 16, t);
      }
      continue;
    }
    for (int i = 0; i < rows; i++) {  // the last k2 % 16 of the term
      __m512 t = _mm512_load_ps(buf + i * 16);
      for (long p = p0; p < k2; p++)
        t = _mm512_fmadd_ps(_mm512_set1_ps(alpha2 * a2[i * k2 + p]), _mm512_loadu_ps(b2 + p * BF_NR), t);
      _mm512_store_ps(buf + i * 16, t);
    }
  }
  __mmask16 mask = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1);
  for (int i = 0; i < rows; i++) {
    __m512 v = _mm512_load_ps(buf + i * 16);
    float* yr = y + i * ldc;
    if (load_c) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, yr));
    _mm512_mask_storeu_ps(yr, mask, v);
  }
}

// A task: row panels r, r + 1 (where there is one) of xp against W panels q0..q1 of the block
// at bp (each kb blocks of 16 pairs x BF_NR columns; the block nc columns wide), four C tiles
// over the chunk. Walking the columns (y's rows written along) with A held in L1 ran at 1.2x
// walking the rows of one W panel, whose writes went down y's columns.
__attribute__((target("amx-tile,amx-bf16,avx512f"))) static void amx_task(
    const unsigned int* xp, const unsigned int* bp, long kb, long m, long r, long q0, long q1, long nc, float* y,
    long ldc, float alpha, bool load_c, const float* a2, const float* b2, long k2, float alpha2) {
  amx_configure();
  alignas(64) float buf[4][AMX_MR * 16];
  const long panelU32 = kb * AMX_MR * AMX_KB;  // one row panel of packed x
  const long mpanels = ceil_div(m, AMX_MR);
  bool two = r + 1 < mpanels;
  const unsigned int* a0 = xp + r * panelU32;
  const unsigned int* a1 = two ? a0 + panelU32 : a0;
  int rows0 = (int)min_l(AMX_MR, m - r * AMX_MR), rows1 = two ? (int)min_l(AMX_MR, m - (r + 1) * AMX_MR) : 0;
  for (long q = q0; q < q1; q++) {
    const unsigned int* bq = bp + q * kb * AMX_KB * BF_NR;
    int ncols = (int)min_l(BF_NR, nc - q * BF_NR);
    float* yq = y + r * AMX_MR * ldc + q * BF_NR;
    // Whole tiles at alpha 1 start from y's previous value and, with no low-rank term to
    // add, go back to y directly. Whether they start from y never depends on the term, so
    // a zero term (a fresh LoRA B) gives exactly the sums of no term (DPO's step 1
    // compares the policy with the reference bit for bit).
    bool whole = alpha == 1.f && ncols == BF_NR && rows0 == AMX_MR && (!two || rows1 == AMX_MR);
    bool preload = whole && load_c, direct = whole && !b2;
    if (preload) {
      _tile_loadd(0, yq, ldc * 4);
      _tile_loadd(1, yq + 16, ldc * 4);
      if (two) {
        _tile_loadd(2, yq + AMX_MR * ldc, ldc * 4);
        _tile_loadd(3, yq + AMX_MR * ldc + 16, ldc * 4);
      }
    } else {
      _tile_zero(0);
      _tile_zero(1);
      if (two) {
        _tile_zero(2);
        _tile_zero(3);
      }
    }
    for (long b = 0; b < kb; b++) {
      const unsigned int* bb = bq + b * AMX_KB * BF_NR;
      _tile_loadd(6, bb, BF_NR * 4);
      _tile_loadd(7, bb + 16, BF_NR * 4);
      _tile_loadd(4, a0 + b * AMX_MR * AMX_KB, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      if (two) {
        _tile_loadd(5, a1 + b * AMX_MR * AMX_KB, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
    }
    if (direct) {
      _tile_stored(0, yq, ldc * 4);
      _tile_stored(1, yq + 16, ldc * 4);
      if (two) {
        _tile_stored(2, yq + AMX_MR * ldc, ldc * 4);
        _tile_stored(3, yq + AMX_MR * ldc + 16, ldc * 4);
      }
      continue;
    }
    _tile_stored(0, buf[0], 64);
    _tile_stored(1, buf[1], 64);
    if (two) {
      _tile_stored(2, buf[2], 64);
      _tile_stored(3, buf[3], 64);
    }
    for (int h = 0; h < (two ? 2 : 1); h++) {
      long row0 = (r + h) * AMX_MR;
      for (int c = 0; c < 2; c++) {
        int cols = ncols - 16 * c;
        if (cols <= 0) continue;
        amx_store_tile(buf[2 * h + c], yq + h * AMX_MR * ldc + 16 * c, ldc, h ? rows1 : rows0, cols > 16 ? 16 : cols,
                       alpha, load_c && !preload, a2 ? a2 + row0 * k2 : nullptr, b2 ? b2 + q * k2 * BF_NR + 16 * c : nullptr, k2,
                       alpha2);
      }
    }
  }
  _tile_release();
}

// y (=|+=) alpha · x · op(W) (+ alpha2 · a2[m, k2] · op(b2)): bf16_gemm_weights's contract, on tiles.
static void amx_gemm_weights(const unsigned short* w, const float* x, float* y, long m, long n, long k,
                             bool transW, float alpha, bool accumulate, const float* a2 = nullptr,
                             const float* b2 = nullptr, long k2 = 0, bool transB2 = false, float alpha2 = 0.f) {
  long inner = transW ? n : k, cols = transW ? k : n;
  long mpanels = ceil_div(m, AMX_MR);
  const float* b2p = a2 && k2 > 0 ? bf16_pack_low_rank(b2, k2, cols, transB2) : nullptr;
  // Chunks of the contraction as in bf16_gemm_weights, whole tile blocks.
  long kpChunk = bf16_chunk_pairs(mpanels * AMX_MR, AMX_X_BYTES, AMX_KB * 8, AMX_KB);
  long kpAll = (inner + 1) / 2, kpMax = min_l(ceil_div(kpAll, AMX_KB) * AMX_KB, kpChunk);
  unsigned int* xp = reinterpret_cast<unsigned int*>(svc_scratch(SVC_SLOT_QUANT_X, (size_t)mpanels * AMX_MR * kpMax));
  unsigned int* wp = reinterpret_cast<unsigned int*>(svc_scratch(SVC_SLOT_QUANT, (size_t)BF_NC * kpMax));
  for (long p0 = 0; p0 < kpAll; p0 += kpChunk) {
    long kk = min_l(inner - 2 * p0, 2 * kpChunk), kb = ceil_div((kk + 1) / 2, AMX_KB);
    bool load = accumulate || p0 > 0, lastChunk = p0 + kpChunk >= kpAll;
    amx_pack_x(x + 2 * p0, inner, m, kk, xp, kb);
    for (long jc = 0; jc < cols; jc += BF_NC) {
      long nc = min_l(BF_NC, cols - jc), npanels = ceil_div(nc, BF_NR);
      bf16_pack_w(w, n, k, transW, jc, nc, p0, kk, wp, kb * AMX_KB);
      // A task: a pair of row panels across the block's W panels, or half of them
      // when there are fewer pairs than two per thread.
      long pairs = ceil_div(mpanels, 2), splits = pairs >= 2L * svc_num_threads() ? 1 : 2;
      par(pairs * splits, [&](long t) {
        long pr = t / splits, s = t % splits;
        long q0 = npanels * s / splits, q1 = npanels * (s + 1) / splits;
        if (q0 >= q1) return;
        amx_task(xp, wp, kb, m, 2 * pr, q0, q1, nc, y + jc, cols, alpha, load, lastChunk ? a2 : nullptr,
                 lastChunk && b2p ? b2p + jc / BF_NR * k2 * BF_NR : nullptr, lastChunk && b2p ? k2 : 0, alpha2);
      });
    }
  }
}
