// The body of one ISA translation unit: included inside a namespace after
// SVC_VEC_BYTES and SVC_ISA_NAME are defined.
#include "simd.h"
#include "gemm.h"
#include "bf16_dot.h"
#include "gemm_in_cache.h"
#include "ops.h"
#include "low_rank.h"
#include "attention.h"
#include "quant.h"
#include "quant_int.h"
#include "quant_igemm.h"
#include "quant_train.h"
#include "peak.h"

static const SvcKernelTable kTable = {
    SVC_ISA_NAME,      matmul,          matmul_low_rank, packed_b_floats,   pack_b_ahead,
    low_rank_backward, rmsnorm_forward, rmsnorm_backward,
    rope,              swiglu_forward,  swiglu_backward, geglu_forward,
    geglu_backward,    add_bias,        attention_forward, attention_backward,
    cross_entropy,     adamw,
#if SVC_INT_DECODE
    matmul_quant_int,  INT_ROWS_LIMIT,
#else
    matmul_quant,      0,
#endif
    matmul_quant_train, quant_train_bf16_dot,
    peak_flops,
};
