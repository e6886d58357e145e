// The kernels compiled for AVX-512 with VNNI (flags in binding.gyp): the
// avx512 unit's kernels plus quant_int.h's vpdpbusd decode path.
#include <immintrin.h>

#include "kernel_table.h"
#include "runtime.h"

namespace svc_avx512vnni {
#define SVC_VEC_BYTES 64
#define SVC_ISA_NAME "avx512vnni"
#include "isa_unit.h"
}  // namespace svc_avx512vnni

const SvcKernelTable* svc_table_avx512vnni() { return &svc_avx512vnni::kTable; }
