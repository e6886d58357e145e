// The instruction sets the native kernels are compiled for, best first, with
// what each needs of the CPU: one list for the addon (addon.cc), which picks
// from it at load time, and the native stress test (test/pool_stress.cc).
#pragma once
#include "kernel_table.h"
#if defined(SVC_X86)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

const SvcKernelTable* svc_table_baseline();
#if defined(SVC_X86)
const SvcKernelTable* svc_table_avx2();
const SvcKernelTable* svc_table_avx512();
const SvcKernelTable* svc_table_avx512vnni();
const SvcKernelTable* svc_table_amx();
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
// AMX-BF16 tiles, with AVX512_BF16 for the packing (every CPU with AMX has it), and the
// kernel's permission to use them: Linux enables the tile data state per process only on
// request (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA), once; a refusal (an older
// kernel, a too-small signal stack) leaves the unit unsupported.
inline bool svc_cpu_has_amx() {
  static const bool has = [] {
    unsigned int a, b, c, d;
    if (!svc_cpu_has_avx512vnni() || !__builtin_cpu_supports("avx512bf16")) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    bool amxBf16 = d & (1u << 22), amxTile = d & (1u << 24);
    if (!amxBf16 || !amxTile) return false;
#if defined(__linux__)
    const long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return has;
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
    {"amx", svc_table_amx, svc_cpu_has_amx},
    {"avx512vnni", svc_table_avx512vnni, svc_cpu_has_avx512vnni},
    {"avx512", svc_table_avx512, svc_cpu_has_avx512},
    {"avx2", svc_table_avx2, svc_cpu_has_avx2},
#endif
    {"baseline", svc_table_baseline, svc_cpu_always},
};
