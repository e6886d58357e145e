// The kernels compiled for the baseline instruction set (flags in binding.gyp).
#include "kernel_table.h"
#include "runtime.h"

namespace svc_baseline {
#define SVC_VEC_BYTES 16
#define SVC_ISA_NAME "baseline"
#include "isa_unit.h"
}  // namespace svc_baseline

const SvcKernelTable* svc_table_baseline() { return &svc_baseline::kTable; }
