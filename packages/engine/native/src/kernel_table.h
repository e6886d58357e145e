// The function table each ISA translation unit fills. Shapes are element
// counts; the addon has validated every length before calling in.
#pragma once
#include <stdint.h>

// The kinds of arithmetic peak_flops measures (peak.h).
enum { SVC_PEAK_FP32 = 0, SVC_PEAK_BF16 = 1 };

struct SvcKernelTable {
  const char* isa;
  // bPacked (may be null): op(b) packed ahead by pack_b, read by the blocked path.
  void (*matmul)(const float* a, const float* b, float* c, long m, long n, long k, bool transA,
                 bool transB, bool accumulate, float alpha, const float* bPacked);
  // c[m,n] (=|+=) a[m,k]·op(b) + alpha2·a2[m,k2]·op(b2), C written once (gemm.h).
  void (*matmul_low_rank)(const float* a, const float* b, float* c, long m, long n, long k, bool transB,
                          const float* a2, const float* b2, long k2, bool transB2, float alpha2,
                          bool accumulate, const float* bPacked);
  // op(b) [k,n] packed once for matmul's bPacked: packed_b_floats(k, n) floats.
  long (*packed_b_floats)(long k, long n);
  void (*pack_b)(const float* b, long k, long n, bool transB, float* out);
  // A LoRA branch's factor gradients in one pass over dy (low_rank.h):
  // dB[out,r] += alpha·dyᵀ·xa, dxa[n,r] (rows ldx apart) = alpha·dy·b.
  void (*low_rank_backward)(const float* dy, const float* xa, const float* b, float* dB, float* dxa, long n,
                            long out, long r, float alpha, long ldx);
  void (*rmsnorm_forward)(const float* x, const float* w, float* y, float* rstd, long rows, long dim,
                          float eps);
  void (*rmsnorm_backward)(const float* dy, const float* x, const float* w, const float* rstd,
                           float* dx, float* dw, long rows, long dim);
  // Rotates the first rotaryDim (even, <= headDim) dims of each head.
  void (*rope)(float* x, const float* cos, const float* sin, const int32_t* pos, long T, long nHeads,
               long headDim, bool inverse, long rotaryDim);
  void (*swiglu_forward)(const float* gate, const float* up, float* out, long n);
  void (*swiglu_backward)(const float* dOut, const float* gate, const float* up, float* dGate,
                          float* dUp, long n);
  void (*geglu_forward)(const float* gate, const float* up, float* out, long n);
  void (*geglu_backward)(const float* dOut, const float* gate, const float* up, float* dGate,
                         float* dUp, long n);
  void (*add_bias)(float* y, const float* bias, long rows, long dim, float alpha);
  // window: a sliding window of that many keys; 0 = full causal attention.
  // bf16: the products' operands rounded to bf16 with fp32 sums (T > 1; attention.h).
  void (*attention_forward)(const float* q, const float* k, const float* v, float* out, float* lse,
                            long T, long S, long nHeads, long nKv, long headDim, float scale,
                            long kvStride, long window, bool bf16);
  void (*attention_backward)(const float* dOut, const float* q, const float* k, const float* v,
                             const float* out, const float* lse, float* dq, float* dk, float* dv,
                             long T, long nHeads, long nKv, long headDim, float scale, long window,
                             bool bf16);
  double (*cross_entropy)(const float* logits, const int32_t* targets, long rows, long vocab,
                          float* dLogits, float gradScale);
  void (*adamw)(float* p, const float* g, float* m, float* v, long n, float lr, float beta1,
                float beta2, float eps, float weightDecay, float bc1, float bc2);
  // y[m,n] (=|+=) alpha * x[m,k] · Wᵀ, W [n,k] in a serving format (quant.h: SVC_QUANT_*).
  void (*matmul_quant)(int format, const float* x, const void* w, const void* scales, float* y, long m,
                       long n, long k, bool accumulate, float alpha);
  // The most rows of x at which matmul_quant rounds x to 8 bits per 32-block
  // for int8 and q4_0 (quant_int.h, quant_igemm.h); 0: it keeps x in fp32 (quant.h).
  long quant_int8_max_rows;
  // The training products with a frozen weight W [n,k] in a serving format (quant_train.h):
  // transW false y[m,n] (=|+=) alpha * x[m,k]·Wᵀ, true y[m,k] (=|+=) alpha * x[m,n]·W.
  // a2 (nullable) adds alpha2 · a2[m, k2] · op(b2), a LoRA branch's second product, in the same pass.
  // bf16: a bf16 run's product (int8 weights may then take bf16 dot products too).
  void (*matmul_quant_train)(int format, const float* x, const void* w, const void* scales, float* y, long m,
                             long n, long k, bool transW, bool accumulate, float alpha, const float* a2,
                             const float* b2, long k2, bool transB2, float alpha2, bool bf16);
  // Whether matmul_quant_train multiplies bf16 weights (and a bf16 run's int8 weights) with native
  // bf16 dot products (x rounded to bf16).
  bool (*bf16_dot)();
  // Runs the peak loop (peak.h) for kind (SVC_PEAK_*) on every pool thread; returns the FLOPs done,
  // or -1 where this unit or CPU lacks that kind. The caller times it.
  double (*peak_flops)(int kind, long iters);
};
