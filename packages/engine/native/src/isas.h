// The instruction sets the native kernels are compiled for, best first, with
// what each needs of the CPU: one list for the addon (addon.cc), which picks
// from it at load time, and the native stress test (test/pool_stress.cc).
#pragma once
#include "kernel_table.h"

const SvcKernelTable* svc_table_baseline();
#if defined(SVC_X86)
const SvcKernelTable* svc_table_avx2();
const SvcKernelTable* svc_table_avx512();
const SvcKernelTable* svc_table_avx512vnni();
#endif

struct SvcIsa {
  const char* name;
  const SvcKernelTable* (*table)();
  bool (*supported)();
};

#if defined(SVC_X86)
inline bool svc_cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
inline bool svc_cpu_has_avx512vnni() {
  return svc_cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
}
inline bool svc_cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
#endif
inline bool svc_cpu_always() { return true; }

// Best first.
static const SvcIsa kSvcIsas[] = {
#if defined(SVC_X86)
    {"avx512vnni", svc_table_avx512vnni, svc_cpu_has_avx512vnni},
    {"avx512", svc_table_avx512, svc_cpu_has_avx512},
    {"avx2", svc_table_avx2, svc_cpu_has_avx2},
#endif
    {"baseline", svc_table_baseline, svc_cpu_always},
};
