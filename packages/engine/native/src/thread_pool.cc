// A persistent worker pool behind svc_parallel_for, plus per-thread scratch.
// Workers are created once (threads - 1 of them; the calling thread works too),
// watch for the next job for a bounded time after each one so back-to-back
// kernel calls pay no wake-up, yielding their CPU while they watch, then sleep
// on a condition variable. One job runs at a time; a call that finds the pool
// busy (another JS thread) runs its tasks serially instead of waiting. The
// guarantees, the race this protocol closes and the measurements behind the
// spin constants are in docs/kernels.md.
#include <stdlib.h>
#if defined(__linux__)
#include <sched.h>
#endif
#include <string.h>

#include <atomic>
#include <chrono>
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
#if defined(__linux__)
  cpu_set_t set;  // the CPUs this process may run on (containers, taskset)
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
#endif
  if (cores < 1) cores = 1;
  const char* env = getenv("SVC_THREADS");
  if (env && *env) {
    int want = atoi(env);
    if (want >= 1 && want < cores) cores = want;
  }
  return cores > 64 ? 64 : cores;
}

// Tasks are claimed through one atomic ticket, (job generation << 32) | next
// task index, with a compare-and-swap; a claim only succeeds while its job is
// current, so a worker that wakes late (the machine is busy) finds the job gone
// instead of holding up the caller: the caller waits for finished tasks, never
// for workers to check in, and does every task nobody else claimed.
//
// A finished job is closed (its index set to kClosed, past any count) before the
// next job's fields are written, and the count is published with release. A
// late worker holding the old ticket that reads the next job's count therefore
// also sees the closed ticket, and its claim fails. Without the close, that
// worker could claim an index of the old generation against the new count, run
// a task of the new job that another thread also runs, and push `done` past
// the count, so the caller returned while a task still ran on its stack frame.
constexpr unsigned long long kClosed = 0xffffffffULL;

thread_local bool inside_job = false;  // this thread is running a pool task

// Waiting, in wall time (a pause instruction takes 10 to 140 cycles depending
// on the CPU, so a count of them is no bound). A worker watches the ticket for
// kWorkerWatchNs after its last job: a decode step's kernel calls come a few
// microseconds apart and find it awake, and an idle process stops using CPU
// within that time. While watching it yields every kWorkerYieldNs: when the
// machine has more runnable threads than CPUs (or the process gets a CPU share,
// as with autogroup scheduling) a worker that only spun would take the CPU
// from the thread that is about to call again, or from other processes; with
// nothing else runnable the yield returns at once. The caller, once its own
// share is done, spins kCallerSpinNs for tasks that workers have claimed (they
// take microseconds), then yields, so a worker preempted on its CPU can finish.
constexpr long long kWorkerWatchNs = 100000;
constexpr long long kWorkerYieldNs = 5000;
constexpr long long kCallerSpinNs = 20000;
constexpr int kPausesPerClockRead = 32;  // a clock read costs about as much as 2 to 30 pauses

long long now_ns() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

struct Pool {
  int threads;
  std::mutex run_mu;
  std::atomic<unsigned long long> ticket{0};
  std::atomic<long> done{0};
  std::atomic<long> n{0};
  std::atomic<svc_task_fn> fn{nullptr};
  std::atomic<const void*> ctx{nullptr};
  std::atomic<int> sleepers{0};
  std::mutex sleep_mu;
  std::condition_variable sleep_cv;

  explicit Pool(int t) : threads(t) {
    for (int i = 1; i < threads; i++) std::thread([this] { worker(); }).detach();
  }

  static unsigned gen_of(unsigned long long t) { return (unsigned)(t >> 32); }

  // Claims and runs tasks of job `gen` until none are left or the job is over.
  void run_tasks(unsigned gen) {
    inside_job = true;
    run_claims(gen);
    inside_job = false;
  }

  void run_claims(unsigned gen) {
    unsigned long long t = ticket.load(std::memory_order_acquire);
    while (gen_of(t) == gen) {
      long i = (long)(t & kClosed);
      // acquire: a count newer than `gen` comes with the close of `gen`, so the CAS fails.
      if (i >= n.load(std::memory_order_acquire)) return;
      if (!ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) continue;
      // Task i of job `gen` is ours and unfinished, so the job stays open: fn/ctx are stable.
      fn.load(std::memory_order_relaxed)(ctx.load(std::memory_order_relaxed), i);
      done.fetch_add(1, std::memory_order_release);
      t = ticket.load(std::memory_order_acquire);
    }
  }

  void worker() {
    unsigned seen = 0;
    for (;;) {
      wait_for_job(seen);
      seen = gen_of(ticket.load(std::memory_order_acquire));
      run_tasks(seen);
    }
  }

  // Returns once a job newer than generation `seen` is published.
  void wait_for_job(unsigned seen) {
    long long start = now_ns(), yielded = start;
    for (int spin = 1; gen_of(ticket.load(std::memory_order_acquire)) == seen; spin++) {
      cpu_relax();
      if (spin % kPausesPerClockRead) continue;
      long long t = now_ns();
      if (t - start < kWorkerWatchNs) {
        if (t - yielded >= kWorkerYieldNs) {
          std::this_thread::yield();
          yielded = t;
        }
        continue;
      }
      std::unique_lock<std::mutex> lock(sleep_mu);
      sleepers.fetch_add(1);
      sleep_cv.wait(lock, [&] { return gen_of(ticket.load()) != seen; });
      sleepers.fetch_sub(1);
      return;
    }
  }

  void parallel_for(long count, svc_task_fn f, const void* c) {
    // A kernel nested inside a task (attention's GEMMs) runs serially on its thread.
    if (inside_job || threads == 1 || count > 0x7fffffffL) {
      for (long i = 0; i < count; i++) f(c, i);
      return;
    }
    std::unique_lock<std::mutex> lock(run_mu, std::try_to_lock);
    if (!lock.owns_lock()) {
      for (long i = 0; i < count; i++) f(c, i);
      return;
    }
    unsigned gen = gen_of(ticket.load(std::memory_order_relaxed)) + 1;
    fn.store(f, std::memory_order_relaxed);
    ctx.store(c, std::memory_order_relaxed);
    done.store(0, std::memory_order_relaxed);
    n.store(count, std::memory_order_release);  // after the previous job's close
    ticket.store((unsigned long long)gen << 32);  // seq_cst: publishes the job, pairs with sleepers
    if (sleepers.load() > 0) {
      std::lock_guard<std::mutex> g(sleep_mu);
      sleep_cv.notify_all();
    }
    run_tasks(gen);
    long long waiting_since = 0;
    for (int spin = 1; done.load(std::memory_order_acquire) < count; spin++) {
      cpu_relax();
      if (spin % kPausesPerClockRead) continue;
      long long t = now_ns();
      if (!waiting_since) waiting_since = t;
      else if (t - waiting_since >= kCallerSpinNs) std::this_thread::yield();
    }
    ticket.store(((unsigned long long)gen << 32) | kClosed);  // no claim of `gen` succeeds from here on
  }
};

Pool* pool() {
  static Pool* p = new Pool(default_threads());  // never destroyed: workers outlive main
  return p;
}

struct Scratch {
  void* p[SVC_SCRATCH_SLOTS] = {};
  size_t cap[SVC_SCRATCH_SLOTS] = {};
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
