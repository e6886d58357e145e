// The N-API wrappers of the products (addon.cc binds them in create(isa)):
// matmul, matmulLowRank and their weights packed ahead, LoRA's lowRankBackward,
// and matmulQuant over the serving formats.
#pragma once
#include <node_api.h>

#include "addon_args.h"

namespace {

napi_value Matmul(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "matmul")) return nullptr;
  long m, n, k;
  bool ta, tb, acc;
  double alpha = 1;
  float *a, *b, *out;
  if (!dim(c, 3, "m", &m) || !dim(c, 4, "n", &n) || !dim(c, 5, "k", &k)) return nullptr;
  if (!flag(c, 6, "transA", &ta) || !flag(c, 7, "transB", &tb) || !flag(c, 8, "accumulate", &acc))
    return nullptr;
  if (!is_nullish(c, 9) && !num(c, 9, "alpha", &alpha)) return nullptr;
  float* packed = nullptr;
  if (!f32(c, 0, "a", (double)m * k, &a) || !f32(c, 1, "b", (double)k * n, &b) ||
      !f32(c, 2, "c", (double)m * n, &out) ||
      !f32(c, 10, "bPacked", (double)c.t->packed_b_floats(k, n), &packed, true))
    return nullptr;
  c.t->matmul(a, b, out, m, n, k, ta, tb, acc, (float)alpha, packed);
  return undefined(env);
}

napi_value MatmulLowRank(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "matmulLowRank")) return nullptr;
  long m, n, k, k2;
  bool tb, tb2, acc;
  double alpha2;
  float *a, *b, *out, *a2, *b2;
  if (!dim(c, 3, "m", &m) || !dim(c, 4, "n", &n) || !dim(c, 5, "k", &k) || !flag(c, 6, "transB", &tb) ||
      !dim(c, 9, "k2", &k2) || !flag(c, 10, "transB2", &tb2) || !num(c, 11, "alpha2", &alpha2) ||
      !flag(c, 12, "accumulate", &acc))
    return nullptr;
  float* packed = nullptr;
  if (!f32(c, 0, "a", (double)m * k, &a) || !f32(c, 1, "b", (double)k * n, &b) ||
      !f32(c, 2, "c", (double)m * n, &out) || !f32(c, 7, "a2", (double)m * k2, &a2) ||
      !f32(c, 8, "b2", (double)k2 * n, &b2) ||
      !f32(c, 13, "bPacked", (double)c.t->packed_b_floats(k, n), &packed, true))
    return nullptr;
  c.t->matmul_low_rank(a, b, out, m, n, k, tb, a2, b2, k2, tb2, (float)alpha2, acc, packed);
  return undefined(env);
}

// packedBFloats(k, n): the floats packB writes for op(b) [k, n].
napi_value PackedBFloats(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "packedBFloats")) return nullptr;
  long k, n;
  if (!dim(c, 0, "k", &k) || !dim(c, 1, "n", &n)) return nullptr;
  napi_value v;
  napi_create_double(env, (double)c.t->packed_b_floats(k, n), &v);
  return v;
}

// packB(b, k, n, transB, out): op(b) packed once for matmul's bPacked.
napi_value PackB(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "packB")) return nullptr;
  long k, n;
  bool tb;
  float *b, *out;
  if (!dim(c, 1, "k", &k) || !dim(c, 2, "n", &n) || !flag(c, 3, "transB", &tb)) return nullptr;
  if (!f32(c, 0, "b", (double)k * n, &b) || !f32(c, 4, "out", (double)c.t->packed_b_floats(k, n), &out))
    return nullptr;
  c.t->pack_b(b, k, n, tb, out);
  return undefined(env);
}

napi_value LowRankBackward(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "lowRankBackward")) return nullptr;
  long n, out, r, ldx;
  double alpha;
  float *dy, *xa, *b, *dB, *dxa;
  if (!dim(c, 5, "n", &n) || !dim(c, 6, "out", &out) || !dim(c, 7, "r", &r) || !num(c, 8, "alpha", &alpha) ||
      !dim(c, 9, "ldDxa", &ldx))
    return nullptr;
  if (ldx < r) return fail(c, true, "ldDxa", "must be at least r (%.0f), got %.0f", (double)r, (double)ldx), nullptr;
  if (!f32(c, 0, "dy", (double)n * out, &dy) || !f32(c, 1, "xa", (double)n * r, &xa) ||
      !f32(c, 2, "b", (double)out * r, &b) || !f32(c, 3, "dB", (double)out * r, &dB) ||
      !f32(c, 4, "dxa", n > 0 ? (double)(n - 1) * ldx + r : 0, &dxa))
    return nullptr;
  c.t->low_rank_backward(dy, xa, b, dB, dxa, n, out, r, (float)alpha, ldx);
  return undefined(env);
}

// The weight arguments of matmulQuant and matmulQuantTrain: data at index i, scales at i + 1.
bool quant_weights(Call& c, int i, long format, long n, long k, void** w, void** scales) {
  if (format < 1 || format > 3)
    return fail(c, true, "format", "must be 1 (bf16), 2 (int8) or 3 (q4_0), got %.0f", format), false;
  if (format == 3 && k % 32) return fail(c, true, "k", "must be a multiple of 32 for q4_0, got %.0f", k), false;
  double nk = (double)n * k;
  return format == 1   ? typed(c, i, "data", napi_uint16_array, "a Uint16Array", nk, w)
         : format == 2 ? typed(c, i, "data", napi_int8_array, "an Int8Array", nk, w) &&
                             typed(c, i + 1, "scales", napi_float32_array, "a Float32Array", n, scales)
                       : typed(c, i, "data", napi_uint8_array, "a Uint8Array", nk / 2, w) &&
                             typed(c, i + 1, "scales", napi_uint16_array, "a Uint16Array", nk / 32, scales);
}

// matmulQuantTrain(format, x, data, scales, y, m, n, k, transW, accumulate, alpha?, a2?, b2?, k2?, transB2?,
// alpha2?, bf16?): quant_train.h; a2 (Float32Array [m, k2]) adds alpha2 · a2 · op(b2), b2 [k2, cols] or
// (transB2) [cols, k2]; bf16 (boolean, default false): a bf16 run's product.
napi_value MatmulQuantTrain(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "matmulQuantTrain")) return nullptr;
  long format, m, n, k;
  bool tw, acc;
  double alpha = 1;
  float *x, *y;
  void *w = nullptr, *scales = nullptr;
  if (!dim(c, 0, "format", &format) || !dim(c, 5, "m", &m) || !dim(c, 6, "n", &n) ||
      !dim(c, 7, "k", &k) || !flag(c, 8, "transW", &tw) || !flag(c, 9, "accumulate", &acc))
    return nullptr;
  if (!is_nullish(c, 10) && !num(c, 10, "alpha", &alpha)) return nullptr;
  if (!quant_weights(c, 2, format, n, k, &w, &scales)) return nullptr;
  double inner = tw ? n : k, cols = tw ? k : n;
  if (!f32(c, 1, "x", (double)m * inner, &x) || !f32(c, 4, "y", (double)m * cols, &y)) return nullptr;
  float *a2 = nullptr, *b2 = nullptr;
  long k2 = 0;
  bool tb2 = false;
  double alpha2 = 1;
  if (!is_nullish(c, 11)) {
    if (!dim(c, 13, "k2", &k2) || !flag(c, 14, "transB2", &tb2) || !num(c, 15, "alpha2", &alpha2) ||
        !f32(c, 11, "a2", (double)m * k2, &a2) || !f32(c, 12, "b2", cols * k2, &b2))
      return nullptr;
  }
  bool bf16;
  if (!opt_flag(c, 16, "bf16", false, &bf16)) return nullptr;
  c.t->matmul_quant_train((int)format, x, w, scales, y, m, n, k, tw, acc, (float)alpha, a2, b2, k2, tb2,
                          (float)alpha2, bf16);
  return undefined(env);
}

// matmulQuant(format, x, data, scales, y, m, n, k, accumulate, alpha?): quant.h's formats 1-3.
napi_value MatmulQuant(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "matmulQuant")) return nullptr;
  long format, m, n, k;
  bool acc;
  double alpha = 1;
  float *x, *y;
  void *w = nullptr, *scales = nullptr;
  if (!dim(c, 0, "format", &format) || !dim(c, 5, "m", &m) || !dim(c, 6, "n", &n) ||
      !dim(c, 7, "k", &k) || !flag(c, 8, "accumulate", &acc))
    return nullptr;
  if (!is_nullish(c, 9) && !num(c, 9, "alpha", &alpha)) return nullptr;
  if (format < 1 || format > 3)
    return fail(c, true, "format", "must be 1 (bf16), 2 (int8) or 3 (q4_0), got %.0f", format), nullptr;
  if (format == 3 && k % 32)
    return fail(c, true, "k", "must be a multiple of 32 for q4_0, got %.0f", k), nullptr;
  if (!f32(c, 1, "x", (double)m * k, &x) || !f32(c, 4, "y", (double)m * n, &y)) return nullptr;
  double nk = (double)n * k;
  bool ok = format == 1   ? typed(c, 2, "data", napi_uint16_array, "a Uint16Array", nk, &w)
            : format == 2 ? typed(c, 2, "data", napi_int8_array, "an Int8Array", nk, &w) &&
                                typed(c, 3, "scales", napi_float32_array, "a Float32Array", n, &scales)
                          : typed(c, 2, "data", napi_uint8_array, "a Uint8Array", nk / 2, &w) &&
                                typed(c, 3, "scales", napi_uint16_array, "a Uint16Array", nk / 32, &scales);
  if (!ok) return nullptr;
  c.t->matmul_quant((int)format, x, w, scales, y, m, n, k, acc, (float)alpha);
  return undefined(env);
}

}  // namespace
