// The kernels compiled for the avx2 instruction set (flags in binding.gyp),
// quant_int.h's vpmaddubsw decode path included.
#include <immintrin.h>

#include "kernel_table.h"
#include "runtime.h"

namespace svc_avx2 {
#define SVC_VEC_BYTES 32
#define SVC_ISA_NAME "avx2"
#include "isa_unit.h"
}  // namespace svc_avx2

const SvcKernelTable* svc_table_avx2() { return &svc_avx2::kTable; }
