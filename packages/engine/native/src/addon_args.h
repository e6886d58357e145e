// Argument checks for the addon's N-API functions (addon.cc): each reads one
// argument, checks its type and, for arrays, its length against the shapes, and
// on a bad one throws a TypeError or RangeError naming it and returns false.
#pragma once
#include <math.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>

#include "kernel_table.h"

namespace {

constexpr size_t kMaxArgs = 17;
constexpr double kMaxSafe = 9007199254740991.0;

struct Call {
  napi_env env;
  const char* fn;
  const SvcKernelTable* t;
  napi_value argv[kMaxArgs];
  size_t argc;
};

bool fail(Call& c, bool range, const char* arg, const char* fmt, double a = 0, double b = 0) {
  char detail[160], msg[256];
  snprintf(detail, sizeof detail, fmt, a, b);
  snprintf(msg, sizeof msg, "%s: argument '%s' %s", c.fn, arg, detail);
  if (range) napi_throw_range_error(c.env, "ERR_OUT_OF_RANGE", msg);
  else napi_throw_type_error(c.env, "ERR_INVALID_ARG_TYPE", msg);
  return false;
}

bool start(napi_env env, napi_callback_info info, Call& c, const char* fn) {
  c.env = env;
  c.fn = fn;
  c.argc = kMaxArgs;
  void* data = nullptr;
  if (napi_get_cb_info(env, info, &c.argc, c.argv, nullptr, &data) != napi_ok) return false;
  c.t = static_cast<const SvcKernelTable*>(data);
  napi_value undef;
  napi_get_undefined(env, &undef);
  for (size_t i = c.argc; i < kMaxArgs; i++) c.argv[i] = undef;
  return true;
}

bool is_nullish(Call& c, int i) {
  napi_valuetype t;
  napi_typeof(c.env, c.argv[i], &t);
  return t == napi_null || t == napi_undefined;
}

bool num(Call& c, int i, const char* name, double* out) {
  napi_valuetype t;
  napi_typeof(c.env, c.argv[i], &t);
  if (t != napi_number) return fail(c, false, name, "must be a number");
  napi_get_value_double(c.env, c.argv[i], out);
  return true;
}

bool dim(Call& c, int i, const char* name, long* out) {
  double d;
  if (!num(c, i, name, &d)) return false;
  if (!(d >= 0 && d <= kMaxSafe && d == floor(d)))
    return fail(c, true, name, "must be a non-negative integer, got %g", d);
  *out = (long)d;
  return true;
}

bool flag(Call& c, int i, const char* name, bool* out) {
  napi_valuetype t;
  napi_typeof(c.env, c.argv[i], &t);
  if (t != napi_boolean) return fail(c, false, name, "must be a boolean");
  napi_get_value_bool(c.env, c.argv[i], out);
  return true;
}

// A typed array of the given type holding at least `need` elements; nullptr for
// null/undefined when `nullable`.
bool array(Call& c, int i, const char* name, napi_typedarray_type want, double need, void** out,
           bool nullable = false) {
  *out = nullptr;
  if (nullable && is_nullish(c, i)) return true;
  const char* tname = want == napi_float32_array ? "a Float32Array" : "an Int32Array";
  bool is_ta = false;
  napi_is_typedarray(c.env, c.argv[i], &is_ta);
  napi_typedarray_type type = napi_int8_array;
  size_t length = 0;
  void* data = nullptr;
  if (is_ta) napi_get_typedarray_info(c.env, c.argv[i], &type, &length, &data, nullptr, nullptr);
  if (!is_ta || type != want) {
    char m[64];  // no '%' in it: it is passed on as a format
    snprintf(m, sizeof m, nullable ? "must be %s or null" : "must be %s", tname);
    return fail(c, false, name, m);
  }
  if ((double)length < need)
    return fail(c, true, name, "has %.0f elements but the shapes need %.0f", (double)length, need);
  *out = data;
  return true;
}

bool f32(Call& c, int i, const char* name, double need, float** out, bool nullable = false) {
  void* p;
  if (!array(c, i, name, napi_float32_array, need, &p, nullable)) return false;
  *out = static_cast<float*>(p);
  return true;
}

bool i32(Call& c, int i, const char* name, double need, int32_t** out) {
  void* p;
  if (!array(c, i, name, napi_int32_array, need, &p)) return false;
  *out = static_cast<int32_t*>(p);
  return true;
}

napi_value undefined(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

// An optional dimension: `dflt` when null or undefined.
bool opt_dim(Call& c, int i, const char* name, long dflt, long* out) {
  *out = dflt;
  return is_nullish(c, i) || dim(c, i, name, out);
}

// An optional boolean: `dflt` when null or undefined.
bool opt_flag(Call& c, int i, const char* name, bool dflt, bool* out) {
  *out = dflt;
  return is_nullish(c, i) || flag(c, i, name, out);
}

bool heads(Call& c, long nh, long nkv) {
  if (nkv == 0 || nh % nkv != 0)
    return fail(c, true, "nKv", "must divide nHeads (%.0f), got %.0f", nh, nkv);
  return true;
}

// A typed array of one given type (named `tname` in the error) with at least `need` elements.
bool typed(Call& c, int i, const char* name, napi_typedarray_type want, const char* tname, double need,
           void** out) {
  bool is_ta = false;
  napi_is_typedarray(c.env, c.argv[i], &is_ta);
  napi_typedarray_type type = napi_float64_array;
  size_t length = 0;
  if (is_ta) napi_get_typedarray_info(c.env, c.argv[i], &type, &length, out, nullptr, nullptr);
  if (!is_ta || type != want) {
    char m[64];
    snprintf(m, sizeof m, "must be %s", tname);
    return fail(c, false, name, m);
  }
  if ((double)length < need)
    return fail(c, true, name, "has %.0f elements but the shapes need %.0f", (double)length, need);
  return true;
}

}  // namespace
