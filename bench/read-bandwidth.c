// Memory read bandwidth: T threads each stream their share of a buffer far
// larger than the caches, summing it with wide loads (8 independent vector
// accumulators), best of R passes. bench/decode.mjs compiles it with
// -O2 -march=native and divides each decode's weight bytes per second by it.
//
//   read-bandwidth <MiB> <threads> <passes>   -> prints GB/s (1e9 bytes/s)
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef float v8 __attribute__((vector_size(32)));

struct Share {
  const float* p;
  size_t n;
  float sum;
};

static void* reader(void* arg) {
  struct Share* s = (struct Share*)arg;
  v8 acc[8] = {{0}};
  size_t i = 0;
  for (; i + 64 <= s->n; i += 64)
    for (int a = 0; a < 8; a++) {
      v8 v;
      memcpy(&v, s->p + i + 8 * a, sizeof v);
      acc[a] += v;
    }
  float total = 0;
  for (int a = 0; a < 8; a++)
    for (int l = 0; l < 8; l++) total += acc[a][l];
  s->sum = total;
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], 0, 10) : 1024;
  int threads = argc > 2 ? atoi(argv[2]) : 2;
  int passes = argc > 3 ? atoi(argv[3]) : 5;
  size_t n = mib * 1024 * 1024 / sizeof(float);
  float* buf = aligned_alloc(64, n * sizeof(float));
  if (!buf) return 1;
  for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 1023);  // touch every page
  double best = 0;
  float sink = 0;
  for (int r = 0; r < passes; r++) {
    pthread_t tid[64];
    struct Share share[64];
    double t0 = now();
    for (int t = 0; t < threads; t++) {
      size_t a = n / threads * t, b = t == threads - 1 ? n : n / threads * (t + 1);
      share[t] = (struct Share){buf + a, b - a, 0};
      pthread_create(&tid[t], NULL, reader, &share[t]);
    }
    for (int t = 0; t < threads; t++) {
      pthread_join(tid[t], NULL);
      sink += share[t].sum;
    }
    double gbs = n * sizeof(float) / (now() - t0) / 1e9;
    if (gbs > best) best = gbs;
  }
  printf("%.2f\n", best);
  return sink == -1.0f;  // keeps the sums alive
}
