// The kernels compiled for the avx512 instruction set (flags in binding.gyp).
#include <immintrin.h>

#include "kernel_table.h"
#include "runtime.h"

namespace svc_avx512 {
#define SVC_VEC_BYTES 64
#define SVC_ISA_NAME "avx512"
#include "isa_unit.h"
}  // namespace svc_avx512

const SvcKernelTable* svc_table_avx512() { return &svc_avx512::kTable; }
