// The machine's arithmetic peak as this unit can reach it, for bench/kernels.mjs's
// percent-of-peak: every pool thread runs independent multiply-add chains
// over registers only (no memory traffic), so nothing but the FMA (or
// vdpbf16ps) ports limits it. Included by each ISA translation unit after
// quant_train.h (whose bf16_gemm.h provides svc_cpu_has_bf16_dot on the
// AVX-512 units). The addon times the calls (addon.cc PeakGflops): this file
// holds no clock, so the wasm build compiles it as the stub it is there.
//
// peak_flops(kind, iters): runs the loop and returns the FLOPs it did, or -1
// where this unit or CPU lacks the kind (SVC_PEAK_*, kernel_table.h). Work is split into 8
// tasks a thread, claimed dynamically by the pool, so a thread that starts
// late only takes fewer tasks and the wall time stays the machine's rate.

#if defined(SVC_X86) && SVC_VEC_BYTES == 64
// 16 accumulators: vfmadd/vdpbf16ps latency (4-6 cycles) × 2 ports needs at
// least 12 chains in flight; 16 + 2 operands fit in the 32 zmm registers.
constexpr long PEAK_CHAINS = 16;
constexpr double PEAK_FP32_FLOPS = PEAK_CHAINS * 32.0;  // 16 lanes × (mul + add)

static float peak_fp32_block(long iters) {
  __m512 acc[PEAK_CHAINS];
  for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  // tiny steps: 1e9 iterations add 1e-3, no overflow and no denormals
  const __m512 a = _mm512_set1_ps(1e-6f), b = _mm512_set1_ps(1e-6f);
  for (long i = 0; i < iters; i++)
    for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_fmadd_ps(a, b, acc[c]);
  __m512 s = acc[0];
  for (int c = 1; c < PEAK_CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
  return _mm512_reduce_add_ps(s);
}

#if SVC_AMX
// The amx unit's bf16 peak is the tiles': four independent C tiles, each a TDPBF16PS
// of a 16 x 32 by 32 x 16 product (16,384 FLOPs), A and B in the other four.
constexpr double PEAK_BF16_FLOPS = 4 * 16384.0;

__attribute__((target("amx-tile,amx-bf16"))) static float peak_bf16_block(long iters) {
  alignas(64) unsigned short ones[AMX_MR * 32];
  for (unsigned short& v : ones) v = 0x3a83;  // bf16 1e-3: 32 products a step add 3.2e-5
  alignas(64) float out[AMX_MR * 16];
  amx_configure();
  _tile_zero(0);  // tile numbers are immediates: no loop over them
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  for (long i = 0; i < iters; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 5, 7);
    _tile_dpbf16ps(2, 4, 7);
    _tile_dpbf16ps(3, 5, 6);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}
#else
constexpr double PEAK_BF16_FLOPS = PEAK_CHAINS * 64.0;  // 16 lanes × 2 bf16 pairs × (mul + add)

__attribute__((target("avx512bf16"))) static float peak_bf16_block(long iters) {
  __m512 acc[PEAK_CHAINS];
  for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = a;
  for (long i = 0; i < iters; i++)
    for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  __m512 s = acc[0];
  for (int c = 1; c < PEAK_CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
  return _mm512_reduce_add_ps(s);
}
#endif
#define SVC_PEAK_BF16_OK svc_cpu_has_bf16_dot()
#define SVC_PEAK_UNIT 1

#elif defined(SVC_X86) && SVC_VEC_BYTES == 32
// 16 ymm registers: 12 chains + 2 operands.
constexpr long PEAK_CHAINS = 12;
constexpr double PEAK_FP32_FLOPS = PEAK_CHAINS * 16.0;  // 8 lanes × (mul + add)
constexpr double PEAK_BF16_FLOPS = 0;

static float peak_fp32_block(long iters) {
  __m256 acc[PEAK_CHAINS];
  for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm256_set1_ps((float)c);
  const __m256 a = _mm256_set1_ps(1e-6f), b = _mm256_set1_ps(1e-6f);
  for (long i = 0; i < iters; i++)
    for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm256_fmadd_ps(a, b, acc[c]);
  __m256 s = acc[0];
  for (int c = 1; c < PEAK_CHAINS; c++) s = _mm256_add_ps(s, acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}
static float peak_bf16_block(long) { return 0.f; }  // never called: no bf16 dot product on AVX2
#define SVC_PEAK_BF16_OK false
#define SVC_PEAK_UNIT 1

#else
#define SVC_PEAK_UNIT 0  // baseline (SSE2 has no FMA) and wasm: no peak to report
#endif

#if SVC_PEAK_UNIT
static volatile float peak_sink;  // the loops' sums land here, so the compiler keeps them

static double peak_flops(int kind, long iters) {
  if (kind != SVC_PEAK_FP32 && !(kind == SVC_PEAK_BF16 && SVC_PEAK_BF16_OK)) return -1;
  if (iters <= 0) return 0;
  long tasks = svc_num_threads() * 8L;
  if (tasks > 1024) tasks = 1024;
  float sums[1024];
  par(tasks, [&](long t) { sums[t] = kind == SVC_PEAK_BF16 ? peak_bf16_block(iters) : peak_fp32_block(iters); });
  float s = 0;
  for (long t = 0; t < tasks; t++) s += sums[t];
  peak_sink = s;
  return (double)tasks * iters * (kind == SVC_PEAK_BF16 ? PEAK_BF16_FLOPS : PEAK_FP32_FLOPS);
}
#else
static double peak_flops(int, long) { return -1; }
#endif
#undef SVC_PEAK_UNIT
#undef SVC_PEAK_BF16_OK
