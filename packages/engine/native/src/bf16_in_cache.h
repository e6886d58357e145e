// Attention's per-block GEMMs on bf16 operands with vdpbf16ps (bf16_gemm.h's
// micro-kernel), included by gemm_in_cache.h on the AVX-512 units and run
// where the CPU has AVX512_BF16. Each element is rounded to bf16 (nearest
// even) as it is packed: A as BF_MR-row panels of pairs along the
// contraction, B as one BF_NR-wide panel of pairs at a time. The products of
// two bf16 values are exact in fp32 and the sums are fp32, so this computes
// what gemm_in_cache's rounding packs compute on the other units, in another
// order of summation.

// out[j] = bf16(r0[j]) | bf16(r1[j]) << 16 for j < n (r1 null: the high halves 0), zeros up to
// `padded`: the pairs of two consecutive rows along the contraction, 16 words a step.
__attribute__((target("avx512bf16"))) static inline void bf16_pair_words(const float* r0, const float* r1, long n,
                                                                         unsigned int* out, long padded) {
  for (long j = 0; j < padded; j += 16) {
    __mmask16 in = j + 16 <= n ? (__mmask16)0xffff : j < n ? (__mmask16)((1u << (n - j)) - 1) : 0;
    __mmask16 to = j + 16 <= padded ? (__mmask16)0xffff : (__mmask16)((1u << (padded - j)) - 1);
    __m512i w = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(in, r0 + j)));
    if (r1) {
      __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(in, r1 + j)));
      w = _mm512_or_si512(w, _mm512_slli_epi32(hi, 16));
    }
    _mm512_mask_storeu_epi32(out + j, to, w);
  }
}

// A's rows i0..i0+mc, pairs p0..p0+kp of a contraction of k elements, as panels
// [pair][BF_MR] kp·BF_MR words apart (rows past mc and a pair's element past k: 0).
__attribute__((target("avx512bf16"))) static void bf16_pack_a_cache(const View& A, long i0, long mc, long p0, long kp, long k, unsigned int* out) {
  long kk = min_l(2 * kp, k - 2 * p0);
  for (long ir = 0; ir < mc; ir += BF_MR, out += kp * BF_MR) {
    long mr = min_l(BF_MR, mc - ir);
    if (A.cs == 1) {  // rows along the contraction (Q, dO, P, dS)
      bf16_pack_panel(A.p + (i0 + ir) * A.rs + 2 * p0, A.rs, (int)mr, kk, out, kp);
    } else if (A.rs == 1) {  // transposed (Pᵀ, dSᵀ): a pair is two rows of the stored matrix
      for (long p = 0; p < kp; p++) {
        long e = 2 * (p0 + p);
        const float* r0 = A.p + e * A.cs + i0 + ir;
        bf16_pair_words(r0, e + 1 < k ? r0 + A.cs : nullptr, mr, out + p * BF_MR, BF_MR);
      }
    } else {
      for (long p = 0; p < kp; p++)
        for (long i = 0; i < BF_MR; i++) {
          long e = 2 * (p0 + p), row = i0 + ir + i;
          unsigned int lo = i < mr ? bf16_bits(A.p[row * A.rs + e * A.cs]) : 0u;
          unsigned int hi = i < mr && e + 1 < k ? bf16_bits(A.p[row * A.rs + (e + 1) * A.cs]) : 0u;
          out[p * BF_MR + i] = lo | (hi << 16);
        }
    }
  }
}

// C[m, n] (=|+=) alpha · op(A) · B on bf16 operands, B(p, j) = b[p * ldb + j]:
// gemm_in_cache's blocking and causal band, in pairs of the contraction. A
// tile's band of k widens to whole pairs; the products it adds are masked ones,
// exact zeros in A, as inside the band.
__attribute__((target("avx512bf16"))) static void gemm_in_cache_bf16(const View& A, const float* b, long ldb, float* c,
                                                                     long ldc, long m, long n, long k, float alpha,
                                                                     bool accumulate, const Band& band) {
  constexpr long MC = BF_MR * 16;
  long kpAll = (k + 1) / 2, kstep = ceil_div(kpAll, ceil_div(kpAll, BF_KC));  // balanced passes
  auto* apack = reinterpret_cast<unsigned int*>(svc_scratch(SVC_SLOT_GEMM_A, (size_t)MC * kstep));
  auto* panel = reinterpret_cast<unsigned int*>(svc_scratch(SVC_SLOT_GEMM_B, (size_t)kstep * BF_NR));
  for (long pc = 0; pc < kpAll; pc += kstep) {
    long kp = min_l(kstep, kpAll - pc);
    bool load_c = accumulate || pc > 0;
    for (long ic = 0; ic < m; ic += MC) {
      long mcb = min_l(MC, m - ic);
      bf16_pack_a_cache(A, ic, mcb, pc, kp, k, apack);
      for (long jr = 0; jr < n; jr += BF_NR) {
        long nr = min_l(BF_NR, n - jr);
        if (jr >= (ic + mcb - 1) / band.row_div + band.col_end) break;  // no row of the block sees it
        for (long p = 0; p < kp; p++) {
          long e = 2 * (pc + p);
          const float* r0 = b + e * ldb + jr;
          bf16_pair_words(r0, e + 1 < k ? r0 + ldb : nullptr, nr, panel + p * BF_NR, BF_NR);
        }
        for (long ir = 0; ir < mcb; ir += BF_MR) {
          long mr = min_l(BF_MR, mcb - ir);
          long first = (ic + ir) / band.row_div, last = (ic + ir + mr - 1) / band.row_div;
          if (jr >= last + band.col_end) continue;
          long e0 = band.k_from(first) - 2 * pc, e1 = band.k_until(last) - 2 * pc;  // elements of this pass
          long q0 = e0 <= 0 ? 0 : min_l(kp, e0 / 2), q1 = e1 <= 0 ? 0 : min_l(kp, ceil_div(e1, 2));
          if (q1 <= q0 && load_c) continue;
          if (q1 < q0) q1 = q0;
          bf16_micro(apack + ir * kp + q0 * BF_MR, panel + q0 * BF_NR, q1 - q0, c + (ic + ir) * ldc + jr, ldc,
                     (int)mr, (int)nr, alpha, load_c);
        }
      }
    }
  }
}
