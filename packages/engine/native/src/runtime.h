// What the ISA-specific kernel code needs from its host: a parallel-for over a
// persistent thread pool and per-thread scratch memory. The native addon
// implements these with real threads (thread_pool.cc); the wasm build with a
// serial loop and a bump arena (wasm_main.cc).
#pragma once
#include <stddef.h>

typedef void (*svc_task_fn)(const void* ctx, long task);

/** Runs fn(ctx, i) for i in [0, n) on the pool (caller included); returns when all are done. */
void svc_parallel_for(long n, svc_task_fn fn, const void* ctx);
/** Threads that svc_parallel_for may use, the calling thread included. */
int svc_num_threads();
/** 64-byte aligned scratch of at least n floats, private to the calling thread. */
float* svc_scratch(int slot, size_t n);

// Scratch slots, so that kernels nested in one another never share a buffer.
enum {
  SVC_SLOT_GEMM_A = 0,  // packed A blocks (every thread)
  SVC_SLOT_GEMM_B = 1,  // packed B panels (the thread that called gemm)
  SVC_SLOT_GEMV_X = 2,  // gathered rows of a transposed A (decode GEMV)
  SVC_SLOT_TASK = 3,    // a task's own temporaries (attention scores, ...)
  SVC_SLOT_CALLER = 4,  // buffers the calling thread shares with its tasks
  SVC_SLOT_QUANT = 5,   // a panel of dequantized weight rows (quant.h, many rows)
  SVC_SLOT_QUANT_X = 6, // x rounded to 8 bits (quant_int.h) or split into even/odd columns (quant.h), shared with the tasks
  SVC_SCRATCH_SLOTS = 7
};
