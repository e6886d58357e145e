// The training products with a frozen weight W [n, k] held in a serving
// format (quant.h's formats), for LoRA training on bf16 or int8 base weights:
//   transW false: y[m, n] (=|+=) alpha * x[m, k] · Wᵀ   (the forward GEMM)
//   transW true:  y[m, k] (=|+=) alpha * x[m, n] · W    (the input gradient dx = dy·W)
// Included by each ISA translation unit after quant.h.
//
// Where the unit is AVX-512 and the CPU has AVX512_BF16, bf16 weights at more
// rows than a GEMV takes go through vdpbf16ps (bf16_gemm.h): x rounded to bf16
// (nearest even), products summed in fp32, as PyTorch's bf16 autocast does.
// The amx unit (SVC_AMX) multiplies them on AMX tiles instead (amx_gemm.h).
// A bf16 run's int8 weights (bf16 set) go through the same vdpbf16ps GEMM:
// their codes are exact bf16 values and the per-row scales are applied in
// fp32 around the dot products. The amx unit widens them: its CPUs ran
// vdpbf16ps at half the fp32 FMA rate.
// Everywhere else the weights are widened to fp32 on the fly: a panel of W's
// rows at a time into fp32 scratch, then the blocked SGEMM, so the fp32 copy
// of W never exists whole and the memory saving holds on every unit.

#if SVC_BF16_DOT && SVC_AMX
#include "amx_gemm.h"
#define svc_bf16_weights_gemm amx_gemm_weights
#else
#define svc_bf16_weights_gemm bf16_gemm_weights
#endif

// y[m, k] (=|+=) alpha * x[m, n] · W with W [n, k] widened a panel of rows at a time.
template <class Q>
static void qmatmul_t(const Q& q, const float* x, float* y, long m, long n, long k, float alpha,
                      bool accumulate) {
  long nb = (1L << 20) / (k > 0 ? k : 1);  // about 4 MB of fp32 per panel
  nb = nb < 64 ? 64 : nb / 64 * 64;
  if (nb > n) nb = n;
  float* panel = svc_scratch(SVC_SLOT_QUANT, (size_t)nb * k);
  for (long r0 = 0; r0 < n; r0 += nb) {
    long rows = min_l(nb, n - r0);
    long tasks = min_l(rows, svc_num_threads() * 4L);
    par(tasks, [&](long t) {
      for (long r = rows * t / tasks; r < rows * (t + 1) / tasks; r++) dequant_row(q, r0 + r, k, panel + r * k);
    });
    // the panel's rows are this pass's share of the contraction: x's columns r0..r0+rows
    gemm_blocked(View{x + r0, n, 1}, View{panel, k, 1}, y, k, 1, m, k, rows, alpha, accumulate || r0 > 0);
  }
}

// Whether this unit multiplies bf16 weights with native bf16 dot products.
static bool quant_train_bf16_dot() {
#if SVC_BF16_DOT
  return svc_cpu_has_bf16_dot();
#else
  return false;
#endif
}

// Every product but the bf16 GEMM: W widened (or dequantized) on the fly.
static void matmul_quant_train_widened(int format, const float* x, const void* w, const void* scales, float* y,
                                       long m, long n, long k, bool transW, bool accumulate, float alpha) {
  if (!transW) {
    matmul_quant(format, x, w, scales, y, m, n, k, accumulate, alpha);
  } else if (format == SVC_QUANT_BF16) {
    qmatmul_t(QBf16{static_cast<const unsigned short*>(w), k}, x, y, m, n, k, alpha, accumulate);
  } else if (format == SVC_QUANT_INT8) {
    qmatmul_t(QInt8{static_cast<const signed char*>(w), static_cast<const float*>(scales), k}, x, y, m, n, k,
              alpha, accumulate);
  } else {
    qmatmul_t(QQ4{static_cast<const unsigned char*>(w), static_cast<const unsigned short*>(scales), k}, x, y,
              m, n, k, alpha, accumulate);
  }
}

// The table's entry. The caller has checked the format and lengths (k % 32 == 0 for q4_0).
// a2 (nullable): y += alpha2 · a2[m, k2] · op(b2) as well (op(b2) [k2, cols]; transB2: b2 is
// [cols, k2]), a LoRA branch's second product: inside the bf16 GEMM's last pass, else after.
// bf16: a bf16 run's product, so int8 weights too may take bf16 dot products.
static void matmul_quant_train(int format, const float* x, const void* w, const void* scales, float* y,
                               long m, long n, long k, bool transW, bool accumulate, float alpha,
                               const float* a2, const float* b2, long k2, bool transB2, float alpha2,
                               bool bf16) {
  long cols = transW ? k : n, inner = transW ? n : k;
  if (m == 0 || cols == 0) return;
  bool lowRank = a2 && k2 > 0;
  if (inner == 0) {
    if (!accumulate)
      for (long i = 0; i < m * cols; i++) y[i] = 0.f;
  }
#if SVC_BF16_DOT
  else if (format == SVC_QUANT_BF16 && m > STREAM_MAX_ROWS && svc_cpu_has_bf16_dot()) {
    svc_bf16_weights_gemm(static_cast<const unsigned short*>(w), x, y, m, n, k, transW, alpha, accumulate, a2, b2,
                          lowRank ? k2 : 0, transB2, alpha2);
    return;
  }
#endif
#if SVC_BF16_DOT && !SVC_AMX
  else if (format == SVC_QUANT_INT8 && bf16 && m > STREAM_MAX_ROWS && svc_cpu_has_bf16_dot()) {
    bf16_gemm_weights(static_cast<const signed char*>(w), x, y, m, n, k, transW, alpha, accumulate, a2, b2,
                      lowRank ? k2 : 0, transB2, alpha2, static_cast<const float*>(scales));
    return;
  }
#endif
  else matmul_quant_train_widened(format, x, w, scales, y, m, n, k, transW, accumulate, alpha);
  if (lowRank) matmul(a2, b2, y, m, cols, k2, false, transB2, true, alpha2);
}
