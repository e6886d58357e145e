// A persistent worker pool behind svc_parallel_for, plus per-thread scratch.
// Workers are created once (threads - 1 of them; the calling thread works too),
// spin briefly after each job so back-to-back kernel calls pay no wake-up, then
// sleep on a condition variable. One job runs at a time; a call that finds the
// pool busy (another JS thread) runs its tasks serially instead of waiting.
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax() { _mm_pause(); }
#else
static inline void cpu_relax() { std::this_thread::yield(); }
#endif

namespace {

int default_threads() {
  int cores = (int)std::thread::hardware_concurrency();
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
  if (cores < 1) cores = 1;
  const char* env = getenv("SVC_THREADS");
  if (env && *env) {
    int want = atoi(env);
    if (want >= 1 && want < cores) cores = want;
  }
  return cores > 64 ? 64 : cores;
}

struct Pool {
  int threads;
  std::mutex run_mu;
  std::atomic<unsigned long> generation{0};
  std::atomic<long> next{0};
  std::atomic<int> pending{0};
  std::atomic<int> sleepers{0};
  long n = 0;
  svc_task_fn fn = nullptr;
  const void* ctx = nullptr;
  std::mutex sleep_mu;
  std::condition_variable sleep_cv;

  explicit Pool(int t) : threads(t) {
    for (int i = 1; i < threads; i++) std::thread([this] { worker(); }).detach();
  }

  void run_tasks() {
    for (long i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) fn(ctx, i);
  }

  void worker() {
    unsigned long seen = 0;
    for (;;) {
      for (int spin = 0; generation.load(std::memory_order_acquire) == seen; spin++) {
        if (spin < 20000) {
          cpu_relax();
          continue;
        }
        std::unique_lock<std::mutex> lock(sleep_mu);
        sleepers.fetch_add(1);
        sleep_cv.wait(lock, [&] { return generation.load() != seen; });
        sleepers.fetch_sub(1);
        break;
      }
      seen = generation.load(std::memory_order_acquire);
      run_tasks();
      pending.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  void parallel_for(long count, svc_task_fn f, const void* c) {
    std::unique_lock<std::mutex> lock(run_mu, std::try_to_lock);
    if (!lock.owns_lock() || threads == 1) {
      for (long i = 0; i < count; i++) f(c, i);
      return;
    }
    n = count;
    fn = f;
    ctx = c;
    next.store(0, std::memory_order_relaxed);
    pending.store(threads - 1, std::memory_order_relaxed);
    generation.fetch_add(1);  // seq_cst: pairs with the sleepers check below
    if (sleepers.load() > 0) {
      std::lock_guard<std::mutex> g(sleep_mu);
      sleep_cv.notify_all();
    }
    run_tasks();
    for (int spin = 0; pending.load(std::memory_order_acquire) > 0; spin++) {
      if (spin < 100000) cpu_relax();
      else std::this_thread::yield();
    }
  }
};

Pool* pool() {
  static Pool* p = new Pool(default_threads());  // never destroyed: workers outlive main
  return p;
}

struct Scratch {
  void* p[4] = {};
  size_t cap[4] = {};
  ~Scratch() {
    for (void* q : p) free(q);
  }
};
thread_local Scratch scratch;

}  // namespace

void svc_parallel_for(long n, svc_task_fn fn, const void* ctx) { pool()->parallel_for(n, fn, ctx); }

int svc_num_threads() { return pool()->threads; }

float* svc_scratch(int slot, size_t n) {
  size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
  if (bytes == 0) bytes = 64;
  if (scratch.cap[slot] < bytes) {
    free(scratch.p[slot]);
    scratch.p[slot] = aligned_alloc(64, bytes);
    if (!scratch.p[slot]) abort();
    scratch.cap[slot] = bytes;
  }
  return static_cast<float*>(scratch.p[slot]);
}
