// The kernels compiled for AVX-512 with VNNI and AMX (flags in binding.gyp):
// the avx512vnni unit's kernels, with the bf16-weight training GEMM on AMX
// tiles (amx_gemm.h) and the bf16 peak measured on them (peak.h).
#include <immintrin.h>

#include "kernel_table.h"
#include "runtime.h"

namespace svc_amx {
#define SVC_VEC_BYTES 64
#define SVC_ISA_NAME "amx"
#define SVC_AMX 1
#include "isa_unit.h"
}  // namespace svc_amx

const SvcKernelTable* svc_table_amx() { return &svc_amx::kTable; }
