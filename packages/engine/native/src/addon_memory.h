// Memory the addon hands to JavaScript (addon.cc exports it as zeroedFloats).
#pragma once
#include <math.h>
#include <node_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

namespace {

// zeroedFloats(n): n zeroed floats on a 64-byte boundary, a Float32Array
// over memory the addon owns (freed when the array is collected). V8's own
// large buffers start 16 bytes past a line, so a matrix in one never takes the
// streaming stores (gemm.h), which need whole aligned vectors.
void FreeZeroedFloats(napi_env env, void* data, void* hint) {
  free(data);
  int64_t total;
  napi_adjust_external_memory(env, -(int64_t)(size_t)hint, &total);
}

napi_value ZeroedFloats(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg;
  double n = -1;
  napi_get_cb_info(env, info, &argc, &arg, nullptr, nullptr);
  if (argc < 1 || napi_get_value_double(env, arg, &n) != napi_ok || !(n >= 0) || n != floor(n) ||
      n > 4294967295.0) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE",
                           "zeroedFloats: argument 'n' must be an integer from 0 to 2^32 - 1");
    return nullptr;
  }
  size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
  if (bytes == 0) bytes = 64;
  void* p = aligned_alloc(64, bytes);
  if (!p) {
    napi_throw_error(env, "ERR_MEMORY_ALLOCATION_FAILED", "zeroedFloats: out of memory");
    return nullptr;
  }
  memset(p, 0, bytes);
  napi_value buffer, array;
  int64_t total;
  if (napi_create_external_arraybuffer(env, p, (size_t)n * sizeof(float), FreeZeroedFloats, (void*)bytes,
                                       &buffer) != napi_ok) {
    free(p);
    return nullptr;
  }
  napi_adjust_external_memory(env, (int64_t)bytes, &total);
  napi_create_typedarray(env, napi_float32_array, (size_t)n, buffer, 0, &array);
  return array;
}

}  // namespace
