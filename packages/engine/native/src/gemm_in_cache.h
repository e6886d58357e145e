// Attention's per-block GEMMs, included by each ISA translation unit after
// gemm.h (View, pack_a, pack_b_panel, micro_kernel) and before attention.h,
// their only caller: a causal band of work (Band) over operands that sit in
// cache (gemm_in_cache).

// The part of a product that a causal mask leaves: row i of C belongs to query
// q(i) = i / row_div (a GQA group's heads stacked: row_div rows a query), the k
// index p to query p / k_mul. Row i needs only the columns j < q(i) + col_end
// and only the k of queries in [q(i) + k_begin, q(i) + k_end). Tiles outside it
// are skipped (their columns of C are left unwritten, so the caller must not
// read them); inside it, the masked products are exact zeros.
constexpr long BAND_OPEN = 1L << 30;  // beyond any sequence (long is 32 bits in wasm)
struct Band {
  long col_end = BAND_OPEN, k_begin = -BAND_OPEN, k_end = BAND_OPEN;
  long row_div = 1, k_mul = 1;
  long k_from(long query) const { return k_begin == -BAND_OPEN ? -BAND_OPEN : (query + k_begin) * k_mul; }
  long k_until(long query) const { return k_end == BAND_OPEN ? BAND_OPEN : (query + k_end) * k_mul; }
};

// x[0..n) rounded to bf16 values in place (bf16_bits), on the packed operands
// of a bf16 product.
static void round_to_bf16(float* x, long n) {
  for (long i = 0; i < n; i++) {
    unsigned int r = bf16_bits(x[i]) << 16;
    __builtin_memcpy(x + i, &r, 4);
  }
}

// vdpbf16ps for attention's bf16 products on the AVX-512 units; not on the
// amx unit, whose CPUs (Sapphire Rapids) ran vdpbf16ps at half their fp32 FMA
// rate (214-236 against 430-475 GFLOP/s, peak.h), so the rounding packs
// below with fp32 FMAs are the faster way to the same products there.
#define SVC_BF16_IN_CACHE (SVC_BF16_DOT && !SVC_AMX)
#if SVC_BF16_IN_CACHE
#include "bf16_in_cache.h"
#endif

// Attention's per-block GEMMs (tens to hundreds of rows, operands already in
// cache): C[m, n] (=|+=) alpha · op(A) · B with B row-major, B(p, j) =
// b[p * ldb + j]. Each NR-wide panel of B is copied once per row block into a
// contiguous k x NR panel that every MR-row tile then re-reads from L1: read
// in place, its rows sit ldb apart (keys and values of one head among the
// others, or a transposed head), and a stride of 2^n bytes maps them all into
// a few L1 sets, so the tiles re-read it from L2. Serial: the callers split
// heads and blocks over the pool.
// bf16: both operands rounded to bf16 as they are packed (attention under a
// bf16 run), fp32 sums; with vdpbf16ps where the unit and CPU have it
// (bf16_in_cache.h).
static void gemm_in_cache(const View& A, const float* b, long ldb, float* c, long ldc, long m, long n,
                          long k, float alpha, bool accumulate, const Band& band = Band{}, bool bf16 = false) {
#if SVC_BF16_IN_CACHE
  if (bf16 && svc_cpu_has_bf16_dot()) {
    gemm_in_cache_bf16(A, b, ldb, c, ldc, m, n, k, alpha, accumulate, band);
    return;
  }
#endif
  float* apack = svc_scratch(SVC_SLOT_GEMM_A, (size_t)MC_MAX * KC);
  float* panel = svc_scratch(SVC_SLOT_GEMM_B, (size_t)KC * NR);
  long kstep = ceil_div(k, ceil_div(k, KC));
  for (long pc = 0; pc < k; pc += kstep) {
    long kc = min_l(kstep, k - pc);
    bool load_c = accumulate || pc > 0;
    for (long ic = 0; ic < m; ic += MC_MAX) {
      long mcb = min_l(MC_MAX, m - ic);
      pack_a(A, ic, mcb, pc, kc, apack);
      if (bf16) round_to_bf16(apack, ceil_div(mcb, MR) * MR * kc);
      for (long jr = 0; jr < n; jr += NR) {
        long nr = min_l(NR, n - jr);
        if (jr >= (ic + mcb - 1) / band.row_div + band.col_end) break;  // no row of the block sees it
        pack_b_panel(View{b, ldb, 1}, pc, kc, jr, nr, panel);
        if (bf16) round_to_bf16(panel, kc * NR);
        for (long ir = 0; ir < mcb; ir += MR) {
          long mr = min_l(MR, mcb - ir);
          long first = (ic + ir) / band.row_div, last = (ic + ir + mr - 1) / band.row_div;  // the tile's queries
          if (jr >= last + band.col_end) continue;
          long p0 = band.k_from(first) - pc, p1 = min_l(kc, band.k_until(last) - pc);
          if (p0 < 0) p0 = 0;
          if (p1 <= p0 && load_c) continue;
          if (p1 < p0) p1 = p0;
          micro_kernel(p1 - p0, apack + ir * kc + p0 * MR, panel + p0 * NR, c + (ic + ir) * ldc + jr, ldc, 1,
                       alpha, load_c, mr, nr);
        }
      }
    }
  }
}
