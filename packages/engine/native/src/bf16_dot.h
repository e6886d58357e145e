// bf16 rounding for every unit, and whether this unit can multiply with native
// bf16 dot products: the AVX-512
// units carry bf16_gemm.h (vdpbf16ps), whose functions run only where the CPU
// has AVX512_BF16 (svc_cpu_has_bf16_dot). Included by each ISA translation
// unit after gemm.h, before the products that use it (attention's per-block
// GEMMs, the training products with bf16 weights).

// fp32 -> bf16 bits, nearest even (NaN stays NaN): the scalar tail of
// vcvtne2ps2bf16, and every unit's rounding of a bf16 product's operands.
static inline unsigned int bf16_bits(float f) {
  unsigned int u;
  __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

#if SVC_VEC_BYTES == 64 && defined(SVC_X86)
#include "bf16_gemm.h"
#define SVC_BF16_DOT 1
#else
#define SVC_BF16_DOT 0
#endif
