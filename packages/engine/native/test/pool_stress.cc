// Stress and race test of the worker pool (src/thread_pool.cc) and of SGEMM on
// it, without Node: linked directly against thread_pool.cc and the ISA units.
// Built plain (-O2) and with -fsanitize=thread by scripts/build-sanitized.mjs;
// the engine's sanitizer test (test/sanitizers.test.ts) runs both.
//
//   pool_stress [--jobs=N] [--nested=N] [--gemms=N] [--seed=N]
//
// Phases, each from one calling thread, then from two at once (the way the
// API thread and a training thread both call in); N counts per calling thread:
//   jobs    N tiny jobs of 1..64 tasks: every task runs exactly once, and none
//           runs (or is still running) after svc_parallel_for returned;
//   nested  jobs whose tasks call svc_parallel_for: the inner tasks run once
//           each, before the inner call returns, and serially, in order, on
//           the task's own thread when the pool ran the task (see below);
//   gemms   N SGEMMs per ISA this CPU runs, shapes that take the blocked path
//           with several tasks, against a double-precision reference, with
//           guard regions around C that must stay untouched.
// Then idle: after a burst of jobs the workers must go back to sleep, so the
// process's CPU time stops growing within 100 ms of the last call.
// The first failure prints "pool_stress: FAIL ..." and exits 1.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../src/isas.h"
#include "../src/kernel_table.h"
#include "../src/runtime.h"

namespace {

[[noreturn]] void fail(const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "pool_stress: FAIL: %s\n", msg);
  fflush(stderr);
  _Exit(1);  // other threads may still be inside the pool
}

// xorshift64*: each calling thread has its own, so runs are reproducible per seed.
struct Rng {
  unsigned long long s;
  explicit Rng(unsigned long long seed) : s(seed * 0x9E3779B97F4A7C15ULL + 1) {}
  unsigned long long next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  long below(long n) { return (long)(next() % (unsigned long long)n); }
  float uniform() { return (float)((double)(next() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }
};

std::atomic<int> next_thread_id{0};
thread_local int thread_id = next_thread_id.fetch_add(1);

// ---- jobs: exactly once, nothing after return --------------------------------

constexpr long kMaxTasks = 64;
constexpr int kRing = 256;  // a job record is reused this many jobs later (late tasks find it intact)

struct Job {
  const char* caller = "";  // which phase and calling thread, for the failure message
  long id = 0;              // the job's index in its caller's sequence
  long count = 0;
  int work = 0;  // busy-wait per task, so some tasks are still running when others finish
  std::atomic<bool> open{false};
  std::atomic<int> runs[kMaxTasks];
};

void spin(int n) {
  for (volatile int i = 0; i < n; i++) {
  }
}

void job_task(const void* ctx, long i) {
  Job* j = const_cast<Job*>(static_cast<const Job*>(ctx));
  if (!j->open.load(std::memory_order_acquire))
    fail("%s, job %ld: task %ld started after svc_parallel_for returned", j->caller, j->id, i);
  if (i < 0 || i >= j->count)
    fail("%s, job %ld: task index %ld outside [0, %ld)", j->caller, j->id, i, j->count);
  if (j->runs[i].fetch_add(1, std::memory_order_relaxed) != 0)
    fail("%s, job %ld (%ld tasks): task %ld ran twice", j->caller, j->id, j->count, i);
  spin(j->work);
  if (!j->open.load(std::memory_order_acquire))
    fail("%s, job %ld: task %ld still ran after svc_parallel_for returned", j->caller, j->id, i);
}

struct Caller {
  std::vector<Job> ring = std::vector<Job>(kRing);
  const char* name;
  Rng rng;
  long jobs = 0;
  Caller(const char* name, unsigned long long seed) : name(name), rng(seed) {}

  // Back to back, checked after each return: every task ran exactly once. A
  // task that runs twice, late or out of range fails on its own.
  void run(long n) {
    for (long r = 0; r < n; r++) {
      Job& j = ring[r % kRing];
      j.caller = name;
      j.id = r;
      j.count = 1 + rng.below(kMaxTasks);
      j.work = rng.below(10) == 0 ? (int)rng.below(400) : 0;  // mostly empty tasks: the tightest loop
      for (long i = 0; i < j.count; i++) j.runs[i].store(0, std::memory_order_relaxed);
      j.open.store(true, std::memory_order_release);
      svc_parallel_for(j.count, job_task, &j);
      j.open.store(false, std::memory_order_seq_cst);
      for (long i = 0; i < j.count; i++) {
        int runs = j.runs[i].load(std::memory_order_relaxed);
        if (runs != 1)
          fail("%s, job %ld (%ld tasks): task %ld ran %d times by the time svc_parallel_for returned",
               name, j.id, j.count, i, runs);
      }
      jobs++;
    }
  }
};

// ---- nested: inner calls run serially on the task's thread -------------------
//
// A task the pool runs (on a worker, or on the caller inside the job) is marked,
// so a call it makes runs serially, in order, on its own thread. A call that
// found the pool busy runs its tasks serially on the caller unmarked: a call
// such a task makes may take the pool once it is free. There only "each inner
// task once, all done before the inner call returns" is checked, and counted.

std::atomic<long> inner_calls_on_pool{0};

struct Inner {
  int owner;
  bool strict;  // must run serially on `owner`
  long count;
  std::atomic<long> next{0};  // strict: the index due next; else the tasks finished
  std::atomic<bool> elsewhere{false};
  std::atomic<int> runs[32];
};

void inner_task(const void* ctx, long i) {
  Inner* in = const_cast<Inner*>(static_cast<const Inner*>(ctx));
  if (in->runs[i].fetch_add(1, std::memory_order_relaxed) != 0)
    fail("nested: inner task %ld ran twice", i);
  if (thread_id != in->owner) {
    if (in->strict)
      fail("nested: inner task %ld ran on thread %d, its outer task (run by the pool) on thread %d", i,
           thread_id, in->owner);
    in->elsewhere.store(true, std::memory_order_relaxed);
  }
  long due = in->next.fetch_add(1, std::memory_order_relaxed);
  if (in->strict && i != due) fail("nested: inner task %ld ran where %ld was due (not serial)", i, due);
}

struct Outer {
  long id;
  int caller;  // thread_id of the thread that called svc_parallel_for
  bool alone;  // the only caller: the pool is never busy
  long count;
  long inner[kMaxTasks];
  std::atomic<bool> open{false};
  std::atomic<int> runs[kMaxTasks];
};

void outer_task(const void* ctx, long i) {
  Outer* o = const_cast<Outer*>(static_cast<const Outer*>(ctx));
  if (!o->open.load(std::memory_order_acquire))
    fail("nested job %ld: task %ld ran after return", o->id, i);
  if (o->runs[i].fetch_add(1, std::memory_order_relaxed) != 0)
    fail("nested job %ld: task %ld ran twice", o->id, i);
  // On a worker the task was surely run by the pool; on the caller, only when it was alone.
  Inner in;
  in.owner = thread_id;
  in.strict = o->alone || thread_id != o->caller;
  in.count = o->inner[i];
  for (long j = 0; j < in.count; j++) in.runs[j].store(0, std::memory_order_relaxed);
  svc_parallel_for(in.count, inner_task, &in);
  long finished = in.next.load(std::memory_order_relaxed);
  if (finished != in.count)
    fail("nested job %ld: inner call of task %ld returned after %ld of %ld tasks", o->id, i, finished,
         in.count);
  for (long j = 0; j < in.count; j++)
    if (in.runs[j].load(std::memory_order_relaxed) != 1)
      fail("nested job %ld: inner task %ld lost", o->id, j);
  if (in.elsewhere.load(std::memory_order_relaxed)) inner_calls_on_pool.fetch_add(1);
}

long run_nested(long n, unsigned long long seed, bool alone) {
  Rng rng(seed);
  Outer o;
  o.caller = thread_id;
  o.alone = alone;
  for (long r = 0; r < n; r++) {
    o.id = r;
    o.count = 1 + rng.below(16);
    for (long i = 0; i < o.count; i++) {
      o.inner[i] = rng.below(32);
      o.runs[i].store(0, std::memory_order_relaxed);
    }
    o.open.store(true, std::memory_order_release);
    svc_parallel_for(o.count, outer_task, &o);
    o.open.store(false, std::memory_order_seq_cst);
    for (long i = 0; i < o.count; i++)
      if (o.runs[i].load(std::memory_order_relaxed) != 1)
        fail("nested job %ld: task %ld ran %d times", r, i, o.runs[i].load());
  }
  return n;
}

// ---- gemms: real SGEMMs from two threads against a double reference ----------

constexpr long kGuard = 64;
constexpr float kSentinel = -12345.5f;

void check_gemm(const SvcKernelTable* t, Rng& rng, long call) {
  // Blocked path: more than GEMV_MAX_ROWS (16) rows and columns; m*n*k >= 2e5
  // (most shapes) makes it split across threads.
  long m = 17 + rng.below(180), n = 17 + rng.below(220), k = 1 + rng.below(600);
  if (rng.below(8) == 0) n = 3000 + rng.below(200);  // past NC on every ISA
  bool ta = rng.below(2), tb = rng.below(2), acc = rng.below(2);
  float alpha = rng.below(3) == 0 ? -0.75f : 1.0f;
  std::vector<float> a(m * k), b(k * n), c(m * n + 2 * kGuard);
  for (float& x : a) x = rng.uniform();
  for (float& x : b) x = rng.uniform();
  float* cv = c.data() + kGuard;
  for (long i = 0; i < kGuard; i++) c[i] = c[kGuard + m * n + i] = kSentinel;
  for (long i = 0; i < m * n; i++) cv[i] = rng.uniform();
  std::vector<float> c0(cv, cv + m * n);
  std::vector<float> packed;  // every other product reads B packed ahead, as a frozen weight is
  if (rng.below(2)) {
    packed.resize(t->packed_b_floats(k, n));
    t->pack_b(b.data(), k, n, tb, packed.data());
  }
  t->matmul(a.data(), b.data(), cv, m, n, k, ta, tb, acc, alpha, packed.empty() ? nullptr : packed.data());
  for (long i = 0; i < kGuard; i++)
    if (c[i] != kSentinel || c[kGuard + m * n + i] != kSentinel)
      fail("%s matmul %ldx%ldx%ld: wrote outside C (guard element %ld)", t->isa, m, n, k,
           c[i] != kSentinel ? i - kGuard : m * n + i);
  double worst = 0, mag = 1;
  std::vector<double> want(m * n);
  for (long i = 0; i < m; i++)
    for (long j = 0; j < n; j++) {
      double s = 0;
      for (long p = 0; p < k; p++)
        s += (double)a[ta ? p * m + i : i * k + p] * b[tb ? j * k + p : p * n + j];
      want[i * n + j] = alpha * s + (acc ? c0[i * n + j] : 0.0);
      mag = fmax(mag, fabs(want[i * n + j]));
    }
  long at = 0;
  for (long i = 0; i < m * n; i++) {
    double err = fabs(cv[i] - want[i]);
    if (!(err <= worst)) worst = isnan(err) ? INFINITY : err, at = i;
  }
  if (worst / mag > 5e-5)
    fail("%s matmul call %ld, %ldx%ldx%ld%s%s%s alpha=%g: C[%ld,%ld] = %g, want %g (error %.3g of %.3g)",
         t->isa, call, m, n, k, ta ? " transA" : "", tb ? " transB" : "", acc ? " accumulate" : "",
         alpha, at / n, at % n, cv[at], want[at], worst, mag);
}

long run_gemms(const SvcKernelTable* t, long n, unsigned long long seed) {
  Rng rng(seed);
  for (long r = 0; r < n; r++) check_gemm(t, rng, r);
  return n;
}

// ---- driver -----------------------------------------------------------------

long arg(int argc, char** argv, const char* name, long dflt) {
  size_t len = strlen(name);
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], name, len) == 0 && argv[i][len] == '=') return atol(argv[i] + len + 1);
  return dflt;
}

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// ---- idle: workers stop using CPU soon after the last call ------------------

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void check_idle() {
  Caller burst("idle burst", 99);
  burst.run(20000);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  double cpu0 = process_cpu_seconds(), t0 = now();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double used = process_cpu_seconds() - cpu0;
  double wall = now() - t0;
  // A worker still spinning would use about all of `wall`; asleep, the process uses next to nothing.
  if (used > 0.05 * wall)
    fail("idle: %.1f ms of CPU time in %.0f ms without calls, 100 ms after a burst (workers still spin)",
         used * 1e3, wall * 1e3);
  printf("pool_stress: idle                   %.2f ms of CPU in %.0f ms after a burst: ok\n", used * 1e3,
         wall * 1e3);
}

// Runs f(seed) on one thread, then on two at once.
template <class F>
void one_then_two(const char* what, F f) {
  double t0 = now();
  long one = f(1);
  long two[2] = {0, 0};
  std::thread other([&] { two[1] = f(3); });
  two[0] = f(2);
  other.join();
  printf("pool_stress: %-22s %ld from one thread, %ld + %ld from two threads: ok (%.1f s)\n", what, one,
         two[0], two[1], now() - t0);
  fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--jobs=", 7) && strncmp(argv[i], "--nested=", 9) &&
        strncmp(argv[i], "--gemms=", 8) && strncmp(argv[i], "--seed=", 7)) {
      fprintf(stderr, "usage: pool_stress [--jobs=N] [--nested=N] [--gemms=N] [--seed=N]\n");
      return 2;
    }
  long jobs = arg(argc, argv, "--jobs", 2000000);
  long nested = arg(argc, argv, "--nested", 20000);
  long gemms = arg(argc, argv, "--gemms", 24);
  unsigned long long seed = (unsigned long long)arg(argc, argv, "--seed", 1);
  printf("pool_stress: %d pool threads, seed %llu\n", svc_num_threads(), seed);
  if (svc_num_threads() < 2)
    printf("pool_stress: one thread only, so the pool never runs a job in parallel\n");

  one_then_two("jobs", [&](unsigned long long s) {
    const char* name = s == 1 ? "one caller" : s == 2 ? "first of two callers" : "second of two callers";
    Caller c(name, seed * 16 + s);
    c.run(jobs);
    return c.jobs;
  });
  one_then_two("nested jobs",
               [&](unsigned long long s) { return run_nested(nested, seed * 16 + s, s == 1); });
  printf("pool_stress: %ld inner calls, made by tasks run serially (pool busy), took the pool once free\n",
         inner_calls_on_pool.load());

  for (const SvcIsa& isa : kSvcIsas) {
    if (!isa.supported()) {
      printf("pool_stress: %s not supported by this CPU, skipped\n", isa.name);
      continue;
    }
    char what[64];
    snprintf(what, sizeof what, "%s SGEMMs", isa.name);
    const SvcKernelTable* t = isa.table();
    one_then_two(what, [&](unsigned long long s) { return run_gemms(t, gemms, seed * 16 + s); });
  }
  check_idle();
  printf("pool_stress: ok\n");
  return 0;
}
