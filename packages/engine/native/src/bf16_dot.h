// Whether this unit can multiply with native bf16 dot products: the AVX-512
// units carry bf16_gemm.h (vdpbf16ps), whose functions run only where the CPU
// has AVX512_BF16 (svc_cpu_has_bf16_dot). Included by each ISA translation
// unit after gemm.h, before the products that use it (attention's per-block
// GEMMs, the training products with bf16 weights).
#if SVC_VEC_BYTES == 64 && defined(SVC_X86)
#include "bf16_gemm.h"
#define SVC_BF16_DOT 1
#else
#define SVC_BF16_DOT 0
#endif
