// The portable kernels' WebAssembly build: the same kernel sources as the
// addon at 128-bit width (wasm simd128), single-threaded, no libc. The JS side
// (src/kernels/portable-wasm.ts) copies arguments into linear memory obtained
// from svc_io, calls a kernel, and copies the outputs back.
#include "kernel_table.h"
#include "runtime.h"

extern unsigned char __heap_base;

namespace {

unsigned long heap_top = 0;

// Bump allocation from the end of linear memory, growing it as needed. Blocks
// are never freed: scratch and I/O regions only grow (by doubling), so what is
// left behind stays within twice the largest request.
void* grab(unsigned long bytes) {
  if (heap_top == 0) heap_top = (unsigned long)&__heap_base;
  heap_top = (heap_top + 63) & ~63ul;
  unsigned long end = heap_top + bytes;
  unsigned long have = __builtin_wasm_memory_size(0) * 65536ul;
  if (end > have) {
    unsigned long pages = (end - have + 65535) / 65536;
    if (__builtin_wasm_memory_grow(0, pages) == (unsigned long)-1) __builtin_trap();
  }
  void* p = (void*)heap_top;
  heap_top = end;
  return p;
}

struct Block {
  void* p = nullptr;
  unsigned long cap = 0;
  void* reserve(unsigned long bytes) {
    if (bytes > cap) {
      cap = bytes > cap * 2 ? bytes : cap * 2;
      p = grab(cap);
    }
    return p;
  }
};

Block scratch_blocks[SVC_SCRATCH_SLOTS];
Block io_block;

}  // namespace

void svc_parallel_for(long n, svc_task_fn fn, const void* ctx) {
  for (long i = 0; i < n; i++) fn(ctx, i);
}
int svc_num_threads() { return 1; }
float* svc_scratch(int slot, size_t n) {
  return static_cast<float*>(scratch_blocks[slot].reserve((unsigned long)n * 4 + 64));
}

namespace svc_wasm {
#define SVC_VEC_BYTES 16
#define SVC_ISA_NAME "wasm-simd"
#include "isa_unit.h"
}  // namespace svc_wasm

#define EXPORT(name) extern "C" __attribute__((export_name(#name)))
using svc_wasm::kTable;

/** A 64-byte aligned region of at least `bytes` for one call's arguments (reused). */
EXPORT(svc_io) void* svc_io(unsigned long bytes) { return io_block.reserve(bytes); }

EXPORT(matmul)
void matmul(const float* a, const float* b, float* c, long m, long n, long k, int ta, int tb,
            int acc, float alpha) {
  kTable.matmul(a, b, c, m, n, k, ta, tb, acc, alpha, nullptr);
}
EXPORT(matmul_low_rank)
void matmul_low_rank(const float* a, const float* b, float* c, long m, long n, long k, int tb,
                     const float* a2, const float* b2, long k2, int tb2, float alpha2, int acc) {
  kTable.matmul_low_rank(a, b, c, m, n, k, tb, a2, b2, k2, tb2, alpha2, acc, nullptr);
}
EXPORT(low_rank_backward)
void low_rank_backward(const float* dy, const float* xa, const float* b, float* dB, float* dxa, long n, long out,
                       long r, float alpha, long ldx) {
  kTable.low_rank_backward(dy, xa, b, dB, dxa, n, out, r, alpha, ldx);
}
EXPORT(rmsnorm_forward)
void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, long rows, long dim,
                     float eps) {
  kTable.rmsnorm_forward(x, w, y, rstd, rows, dim, eps);
}
EXPORT(rmsnorm_backward)
void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd, float* dx,
                      float* dw, long rows, long dim) {
  kTable.rmsnorm_backward(dy, x, w, rstd, dx, dw, rows, dim);
}
EXPORT(rope)
void rope(float* x, const float* cos, const float* sin, const int* pos, long T, long nHeads,
          long headDim, int inverse, long rotaryDim) {
  kTable.rope(x, cos, sin, pos, T, nHeads, headDim, inverse, rotaryDim);
}
EXPORT(swiglu_forward)
void swiglu_forward(const float* gate, const float* up, float* out, long n) {
  kTable.swiglu_forward(gate, up, out, n);
}
EXPORT(swiglu_backward)
void swiglu_backward(const float* dOut, const float* gate, const float* up, float* dGate, float* dUp,
                     long n) {
  kTable.swiglu_backward(dOut, gate, up, dGate, dUp, n);
}
EXPORT(geglu_forward)
void geglu_forward(const float* gate, const float* up, float* out, long n) {
  kTable.geglu_forward(gate, up, out, n);
}
EXPORT(geglu_backward)
void geglu_backward(const float* dOut, const float* gate, const float* up, float* dGate, float* dUp,
                    long n) {
  kTable.geglu_backward(dOut, gate, up, dGate, dUp, n);
}
EXPORT(add_bias)
void add_bias(float* y, const float* bias, long rows, long dim, float alpha) {
  kTable.add_bias(y, bias, rows, dim, alpha);
}
EXPORT(attention_forward)
void attention_forward(const float* q, const float* k, const float* v, float* out, float* lse, long T,
                       long S, long nHeads, long nKv, long headDim, float scale, long kvStride,
                       long window, int bf16) {
  kTable.attention_forward(q, k, v, out, lse, T, S, nHeads, nKv, headDim, scale, kvStride, window, bf16 != 0);
}
EXPORT(attention_backward)
void attention_backward(const float* dOut, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, float* dq, float* dk, float* dv, long T,
                        long nHeads, long nKv, long headDim, float scale, long window, int bf16) {
  kTable.attention_backward(dOut, q, k, v, out, lse, dq, dk, dv, T, nHeads, nKv, headDim, scale,
                            window, bf16 != 0);
}
EXPORT(cross_entropy)
double cross_entropy(const float* logits, const int* targets, long rows, long vocab, float* dLogits,
                     float gradScale) {
  return kTable.cross_entropy(logits, targets, rows, vocab, dLogits, gradScale);
}
EXPORT(matmul_quant)
void matmul_quant(int format, const float* x, const void* w, const void* scales, float* y, long m, long n,
                  long k, int acc, float alpha) {
  kTable.matmul_quant(format, x, w, scales, y, m, n, k, acc, alpha);
}
EXPORT(matmul_quant_train)
void matmul_quant_train(int format, const float* x, const void* w, const void* scales, float* y, long m, long n,
                        long k, int transW, int acc, float alpha) {
  kTable.matmul_quant_train(format, x, w, scales, y, m, n, k, transW, acc, alpha, nullptr, nullptr, 0, false, 0.f,
                            false);
}
EXPORT(adamw)
void adamw(float* p, const float* g, float* m, float* v, long n, float lr, float beta1, float beta2,
           float eps, float weightDecay, float bc1, float bc2) {
  kTable.adamw(p, g, m, v, n, lr, beta1, beta2, eps, weightDecay, bc1, bc2);
}
