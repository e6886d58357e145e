// The N-API face of the native kernels. `create(isa)` returns an object with one
// function per Kernels method, each bound to that ISA's function table. Every
// argument is checked (type, length against the shapes) before any memory is
// touched; a bad one throws a TypeError or RangeError that names it.
#include <math.h>
#include <node_api.h>
#include <stdio.h>
#include <string.h>

#include <chrono>

#include "addon_args.h"
#include "addon_matmul.h"
#include "addon_memory.h"
#include "isas.h"
#include "kernel_table.h"
#include "runtime.h"

namespace {

napi_value RmsnormForward(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "rmsnormForward")) return nullptr;
  long rows, d;
  double eps;
  float *x, *w, *y, *rstd;
  if (!dim(c, 4, "rows", &rows) || !dim(c, 5, "dim", &d) || !num(c, 6, "eps", &eps)) return nullptr;
  double rd = (double)rows * d;
  if (!f32(c, 0, "x", rd, &x) || !f32(c, 1, "weight", d, &w) || !f32(c, 2, "y", rd, &y) ||
      !f32(c, 3, "rstd", rows, &rstd))
    return nullptr;
  c.t->rmsnorm_forward(x, w, y, rstd, rows, d, (float)eps);
  return undefined(env);
}

napi_value RmsnormBackward(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "rmsnormBackward")) return nullptr;
  long rows, d;
  float *dy, *x, *w, *rstd, *dx, *dw;
  if (!dim(c, 6, "rows", &rows) || !dim(c, 7, "dim", &d)) return nullptr;
  double rd = (double)rows * d;
  if (!f32(c, 0, "dy", rd, &dy) || !f32(c, 1, "x", rd, &x) || !f32(c, 2, "weight", d, &w) ||
      !f32(c, 3, "rstd", rows, &rstd) || !f32(c, 4, "dx", rd, &dx) ||
      !f32(c, 5, "dWeight", d, &dw, true))
    return nullptr;
  c.t->rmsnorm_backward(dy, x, w, rstd, dx, dw, rows, d);
  return undefined(env);
}

napi_value Rope(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "rope")) return nullptr;
  long T, nh, hd, rot;
  bool inverse;
  float *x, *cs, *sn;
  int32_t* pos;
  if (!dim(c, 4, "T", &T) || !dim(c, 5, "nHeads", &nh) || !dim(c, 6, "headDim", &hd) ||
      !flag(c, 7, "inverse", &inverse))
    return nullptr;
  if (hd % 2) return fail(c, true, "headDim", "must be even, got %.0f", hd), nullptr;
  if (!opt_dim(c, 8, "rotaryDim", hd, &rot)) return nullptr;
  if (rot != hd && (rot % 2 || rot < 2 || rot > hd))
    return fail(c, true, "rotaryDim", "must be even and in [2, headDim (%.0f)], got %.0f", hd, rot),
           nullptr;
  long half = rot / 2;
  if (!f32(c, 0, "x", (double)T * nh * hd, &x) || !f32(c, 1, "cos", half, &cs) ||
      !f32(c, 2, "sin", half, &sn) || !i32(c, 3, "positions", T, &pos))
    return nullptr;
  if (half > 0) {
    size_t clen, slen;
    napi_typedarray_type ty;
    napi_get_typedarray_info(env, c.argv[1], &ty, &clen, nullptr, nullptr, nullptr);
    napi_get_typedarray_info(env, c.argv[2], &ty, &slen, nullptr, nullptr, nullptr);
    long rowsAvail = (long)((clen < slen ? clen : slen) / half);
    for (long t = 0; t < T; t++)
      if (pos[t] < 0 || pos[t] >= rowsAvail)
        return fail(c, true, "positions", "holds %.0f, outside the cos/sin table of %.0f rows",
                    pos[t], rowsAvail),
               nullptr;
  }
  c.t->rope(x, cs, sn, pos, T, nh, hd, inverse, rot);
  return undefined(env);
}

// A gated activation (SwiGLU, GeGLU): out = act(gate) * up, and its backward.
// Both share these argument checks; the template argument picks the table entry.
using GatedForwardFn = decltype(SvcKernelTable::swiglu_forward);
using GatedBackwardFn = decltype(SvcKernelTable::swiglu_backward);

template <GatedForwardFn SvcKernelTable::*Op>
napi_value GatedForward(napi_env env, napi_callback_info info, const char* name) {
  Call c;
  if (!start(env, info, c, name)) return nullptr;
  long n;
  float *g, *u, *o;
  if (!dim(c, 3, "n", &n)) return nullptr;
  if (!f32(c, 0, "gate", n, &g) || !f32(c, 1, "up", n, &u) || !f32(c, 2, "out", n, &o)) return nullptr;
  (c.t->*Op)(g, u, o, n);
  return undefined(env);
}

template <GatedBackwardFn SvcKernelTable::*Op>
napi_value GatedBackward(napi_env env, napi_callback_info info, const char* name) {
  Call c;
  if (!start(env, info, c, name)) return nullptr;
  long n;
  float *d, *g, *u, *dg, *du;
  if (!dim(c, 5, "n", &n)) return nullptr;
  if (!f32(c, 0, "dOut", n, &d) || !f32(c, 1, "gate", n, &g) || !f32(c, 2, "up", n, &u) ||
      !f32(c, 3, "dGate", n, &dg) || !f32(c, 4, "dUp", n, &du))
    return nullptr;
  (c.t->*Op)(d, g, u, dg, du, n);
  return undefined(env);
}

napi_value SwigluForward(napi_env env, napi_callback_info info) {
  return GatedForward<&SvcKernelTable::swiglu_forward>(env, info, "swigluForward");
}
napi_value SwigluBackward(napi_env env, napi_callback_info info) {
  return GatedBackward<&SvcKernelTable::swiglu_backward>(env, info, "swigluBackward");
}
napi_value GegluForward(napi_env env, napi_callback_info info) {
  return GatedForward<&SvcKernelTable::geglu_forward>(env, info, "gegluForward");
}
napi_value GegluBackward(napi_env env, napi_callback_info info) {
  return GatedBackward<&SvcKernelTable::geglu_backward>(env, info, "gegluBackward");
}

napi_value AddBias(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "addBias")) return nullptr;
  long rows, d;
  double alpha = 1;
  float *y, *b;
  if (!dim(c, 2, "rows", &rows) || !dim(c, 3, "dim", &d)) return nullptr;
  if (!is_nullish(c, 4) && !num(c, 4, "alpha", &alpha)) return nullptr;
  if (!f32(c, 0, "y", (double)rows * d, &y) || !f32(c, 1, "bias", d, &b)) return nullptr;
  c.t->add_bias(y, b, rows, d, (float)alpha);
  return undefined(env);
}

napi_value AttentionForward(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "attentionForward")) return nullptr;
  long T, S, nh, nkv, hd, stride, window;
  double scale;
  bool bf16;
  float *q, *k, *v, *out, *lse;
  if (!dim(c, 5, "T", &T) || !dim(c, 6, "S", &S) || !dim(c, 7, "nHeads", &nh) ||
      !dim(c, 8, "nKv", &nkv) || !dim(c, 9, "headDim", &hd) || !num(c, 10, "scale", &scale) ||
      !dim(c, 11, "kvStride", &stride) || !opt_dim(c, 12, "window", 0, &window) ||
      !opt_flag(c, 13, "bf16", false, &bf16) || !heads(c, nh, nkv))
    return nullptr;
  if (T > S) return fail(c, true, "T", "(%.0f) must not exceed S (%.0f)", T, S), nullptr;
  if (stride < nkv * hd)
    return fail(c, true, "kvStride", "(%.0f) must be at least nKv*headDim (%.0f)", stride, nkv * hd),
           nullptr;
  double qn = (double)T * nh * hd, kvn = S == 0 ? 0 : (double)(S - 1) * stride + nkv * hd;
  if (!f32(c, 0, "q", qn, &q) || !f32(c, 1, "k", kvn, &k) || !f32(c, 2, "v", kvn, &v) ||
      !f32(c, 3, "out", qn, &out) || !f32(c, 4, "lse", (double)nh * T, &lse, true))
    return nullptr;
  c.t->attention_forward(q, k, v, out, lse, T, S, nh, nkv, hd, (float)scale, stride, window, bf16);
  return undefined(env);
}

napi_value AttentionBackward(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "attentionBackward")) return nullptr;
  long T, nh, nkv, hd, window;
  double scale;
  bool bf16;
  float *dout, *q, *k, *v, *out, *lse, *dq, *dk, *dv;
  if (!dim(c, 9, "T", &T) || !dim(c, 10, "nHeads", &nh) || !dim(c, 11, "nKv", &nkv) ||
      !dim(c, 12, "headDim", &hd) || !num(c, 13, "scale", &scale) ||
      !opt_dim(c, 14, "window", 0, &window) || !opt_flag(c, 15, "bf16", false, &bf16) ||
      !heads(c, nh, nkv))
    return nullptr;
  double qn = (double)T * nh * hd, kvn = (double)T * nkv * hd;
  if (!f32(c, 0, "dOut", qn, &dout) || !f32(c, 1, "q", qn, &q) || !f32(c, 2, "k", kvn, &k) ||
      !f32(c, 3, "v", kvn, &v) || !f32(c, 4, "out", qn, &out) ||
      !f32(c, 5, "lse", (double)nh * T, &lse) || !f32(c, 6, "dq", qn, &dq) ||
      !f32(c, 7, "dk", kvn, &dk) || !f32(c, 8, "dv", kvn, &dv))
    return nullptr;
  c.t->attention_backward(dout, q, k, v, out, lse, dq, dk, dv, T, nh, nkv, hd, (float)scale, window, bf16);
  return undefined(env);
}

napi_value CrossEntropy(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "crossEntropy")) return nullptr;
  long rows, vocab;
  double scale;
  float *logits, *dl;
  int32_t* targets;
  if (!dim(c, 2, "rows", &rows) || !dim(c, 3, "vocab", &vocab) || !num(c, 5, "gradScale", &scale))
    return nullptr;
  double n = (double)rows * vocab;
  if (!f32(c, 0, "logits", n, &logits) || !i32(c, 1, "targets", rows, &targets) ||
      !f32(c, 4, "dLogits", n, &dl, true))
    return nullptr;
  for (long r = 0; r < rows; r++)
    if (targets[r] >= vocab)
      return fail(c, true, "targets", "holds %.0f, not below vocab (%.0f)", targets[r], vocab),
             nullptr;
  double loss = c.t->cross_entropy(logits, targets, rows, vocab, dl, (float)scale);
  napi_value r;
  napi_create_double(env, loss, &r);
  return r;
}

napi_value Adamw(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "adamw")) return nullptr;
  long n, step;
  double lr, b1, b2, eps, wd;
  float *p, *g, *m, *v;
  if (!dim(c, 4, "n", &n) || !num(c, 5, "lr", &lr) || !num(c, 6, "beta1", &b1) ||
      !num(c, 7, "beta2", &b2) || !num(c, 8, "eps", &eps) || !num(c, 9, "weightDecay", &wd) ||
      !dim(c, 10, "step", &step))
    return nullptr;
  if (step < 1) return fail(c, true, "step", "must be at least 1, got %.0f", step), nullptr;
  if (!f32(c, 0, "param", n, &p) || !f32(c, 1, "grad", n, &g) || !f32(c, 2, "m", n, &m) ||
      !f32(c, 3, "v", n, &v))
    return nullptr;
  double bc1 = 1 - pow(b1, (double)step), bc2 = 1 - pow(b2, (double)step);
  c.t->adamw(p, g, m, v, n, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd, (float)bc1,
             (float)bc2);
  return undefined(env);
}

void set(napi_env env, napi_value obj, const char* name, napi_value v) {
  napi_set_named_property(env, obj, name, v);
}

napi_value str(napi_env env, const char* s) {
  napi_value v;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

// peakGflops(kind: "bf16" | "fp32", seconds) -> the best GFLOP/s of peak.h's loop
// over about `seconds` (calls of at least 20 ms each), or null where this
// table or CPU lacks that kind. Timed here: the ISA units hold no clock.
napi_value PeakGflops(napi_env env, napi_callback_info info) {
  Call c;
  if (!start(env, info, c, "peakGflops")) return nullptr;
  napi_valuetype t;
  napi_typeof(env, c.argv[0], &t);
  if (t != napi_string) return fail(c, false, "kind", "must be \"bf16\" or \"fp32\""), nullptr;
  char name[8] = "";
  size_t len = 0;
  napi_get_value_string_utf8(env, c.argv[0], name, sizeof name, &len);
  int kind = strcmp(name, "fp32") == 0 ? SVC_PEAK_FP32 : strcmp(name, "bf16") == 0 ? SVC_PEAK_BF16 : -1;
  if (kind < 0) return fail(c, true, "kind", "must be \"bf16\" or \"fp32\""), nullptr;
  double seconds;
  if (!num(c, 1, "seconds", &seconds)) return nullptr;
  if (!(seconds > 0 && seconds <= 60)) return fail(c, true, "seconds", "must be in (0, 60], got %g", seconds), nullptr;
  napi_value out;
  if (c.t->peak_flops(kind, 0) < 0) return napi_get_null(env, &out), out;
  using clock = std::chrono::steady_clock;
  auto timed = [&](long iters, double* flops) {
    auto t0 = clock::now();
    *flops = c.t->peak_flops(kind, iters);
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  long iters = 256;
  double flops, s = timed(iters, &flops);
  while (s < 0.02 && iters < (1L << 30)) s = timed(iters *= 2, &flops);
  double best = flops / s;
  auto start_at = clock::now();
  for (int calls = 0; calls < 3 || std::chrono::duration<double>(clock::now() - start_at).count() < seconds;
       calls++) {
    s = timed(iters, &flops);
    if (flops / s > best) best = flops / s;
  }
  napi_create_double(env, best / 1e9, &out);
  return out;
}

// create(isa: string) -> kernel functions bound to that ISA's table.
napi_value Create(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg;
  napi_get_cb_info(env, info, &argc, &arg, nullptr, nullptr);
  char name[32] = "";
  size_t len = 0;
  napi_valuetype t = napi_undefined;
  if (argc >= 1) napi_typeof(env, arg, &t);
  if (t != napi_string) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "create: argument 'isa' must be a string");
    return nullptr;
  }
  napi_get_value_string_utf8(env, arg, name, sizeof name, &len);
  const SvcIsa* entry = nullptr;
  for (const SvcIsa& e : kSvcIsas)
    if (strcmp(e.name, name) == 0) entry = &e;
  if (!entry || !entry->supported()) {
    char msg[128];
    snprintf(msg, sizeof msg, "create: ISA '%s' is %s", name,
             entry ? "not supported by this CPU" : "not compiled into this addon");
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
    return nullptr;
  }
  const SvcKernelTable* table = entry->table();
  struct Fn {
    const char* name;
    napi_callback cb;
  } fns[] = {
      {"matmul", Matmul},
      {"matmulLowRank", MatmulLowRank},
      {"lowRankBackward", LowRankBackward},
      {"packedBFloats", PackedBFloats},
      {"packB", PackB},
      {"rmsnormForward", RmsnormForward},
      {"rmsnormBackward", RmsnormBackward},
      {"rope", Rope},
      {"swigluForward", SwigluForward},
      {"swigluBackward", SwigluBackward},
      {"gegluForward", GegluForward},
      {"gegluBackward", GegluBackward},
      {"addBias", AddBias},
      {"attentionForward", AttentionForward},
      {"attentionBackward", AttentionBackward},
      {"crossEntropy", CrossEntropy},
      {"adamw", Adamw},
      {"matmulQuant", MatmulQuant},
      {"matmulQuantTrain", MatmulQuantTrain},
      {"peakGflops", PeakGflops},
  };
  napi_value obj;
  napi_create_object(env, &obj);
  for (const Fn& f : fns) {
    napi_value fn;
    napi_create_function(env, f.name, NAPI_AUTO_LENGTH, f.cb, const_cast<SvcKernelTable*>(table), &fn);
    set(env, obj, f.name, fn);
  }
  set(env, obj, "isa", str(env, table->isa));
  napi_value int8x;  // a limit of 2^31 - 1 rows stands for none: Infinity
  long rows = table->quant_int8_max_rows;
  napi_create_double(env, rows >= 0x7fffffffL ? __builtin_inf() : (double)rows, &int8x);
  set(env, obj, "quantInt8MaxRows", int8x);
  napi_value bf16;
  napi_get_boolean(env, table->bf16_dot(), &bf16);
  set(env, obj, "bf16Dot", bf16);
  return obj;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_value list, fn, threads;
  napi_create_array(env, &list);
  uint32_t i = 0;
  for (const SvcIsa& e : kSvcIsas)
    if (e.supported()) napi_set_element(env, list, i++, str(env, e.name));
  set(env, exports, "supportedIsas", list);  // best first
  napi_create_int32(env, svc_num_threads(), &threads);
  set(env, exports, "threads", threads);
  napi_create_function(env, "create", NAPI_AUTO_LENGTH, Create, nullptr, &fn);
  set(env, exports, "create", fn);
  napi_create_function(env, "zeroedFloats", NAPI_AUTO_LENGTH, ZeroedFloats, nullptr, &fn);
  set(env, exports, "zeroedFloats", fn);
  return exports;
}

}  // namespace

NAPI_MODULE_INIT() { return Init(env, exports); }
