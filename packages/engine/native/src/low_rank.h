// A LoRA branch's factor gradients (lora-apply.ts's backward), included by each
// ISA translation unit after ops.h:
//   dB[out, r] += alpha · dyᵀ·xa        dxa[n, r] = alpha · dy·B (rows ldx apart)
// with dy [n, out] the projection's output gradient, xa = x·Aᵀ [n, r] and
// B [out, r]. Two GEMMs would each stream dy and pack it for a product only r
// wide; here one pass reads each dy[i, o] once and uses it twice, broadcast
// into row i's dxa accumulators (· B[o]) and into dB[o]'s (· xa[i]).
//
// r runs in chunks of up to LR_VC vectors over zero-padded copies of xa and B
// (so any rank is legal), rows in blocks whose dxa accumulators and xa rows
// stay in registers. Each task sums dB over its rows privately; the partials
// are added in task order, so the result does not depend on scheduling.

constexpr int LR_VC = 2;      // vectors of r per pass over dy
constexpr long LR_SPLIT = 8;  // tasks split the rows at multiples of this (every block size divides it)
// Rows per block: its accumulators and xa rows stay in registers (32 on AVX-512, else 16).
constexpr int lr_rows(int vc) { return (SVC_VEC_BYTES == 64 ? 8 : 4) / vc; }

// One block of RB rows against one chunk of VC vectors of r: dy and dxa point
// at the block's first row, xa, b and dBp at the chunk's first column (row
// strides rp); `lanes` of the chunk are real (the rest is padding).
template <int RB, int VC>
static void low_rank_block(const float* dy, long out, const float* xa, const float* b, float* dBp,
                           long rp, float* dxa, long ldx, long lanes, float alpha) {
  vf acc[RB][VC] = {}, x[RB][VC];
  for (int i = 0; i < RB; i++)
    for (int v = 0; v < VC; v++) x[i][v] = vload(xa + i * rp + v * W);
  for (long o = 0; o < out; o++) {
    vf bo[VC], dbo[VC];
#pragma GCC unroll 2
    for (int v = 0; v < VC; v++) {
      bo[v] = vload(b + o * rp + v * W);
      dbo[v] = vload(dBp + o * rp + v * W);
    }
#pragma GCC unroll 8
    for (int i = 0; i < RB; i++) {
      vf d = vset1(dy[i * out + o]);
#pragma GCC unroll 2
      for (int v = 0; v < VC; v++) {
        acc[i][v] += d * bo[v];
        dbo[v] += d * x[i][v];
      }
    }
#pragma GCC unroll 2
    for (int v = 0; v < VC; v++) vstore(dBp + o * rp + v * W, dbo[v]);
  }
  for (int i = 0; i < RB; i++)
    for (int v = 0; v < VC; v++) {
      vf s = acc[i][v] * alpha;
      float* to = dxa + i * ldx + v * W;
      long n = lanes - v * W;
      if (n >= W) vstore(to, s);
      else
        for (long c = 0; c < n; c++) to[c] = s[c];
    }
}

// Rows [i0, i1) against every chunk of r.
template <int VC>
static void low_rank_chunk(const float* dy, long out, const float* xa, const float* b, float* dBp, long rp,
                           float* dxa, long ldx, long lanes, long i0, long i1, float alpha) {
  constexpr int RB = lr_rows(VC);
  long i = i0;
  for (; i + RB <= i1; i += RB)
    low_rank_block<RB, VC>(dy + i * out, out, xa + i * rp, b, dBp, rp, dxa + i * ldx, ldx, lanes, alpha);
  for (; i < i1; i++)
    low_rank_block<1, VC>(dy + i * out, out, xa + i * rp, b, dBp, rp, dxa + i * ldx, ldx, lanes, alpha);
}

static void low_rank_rows(const float* dy, long out, const float* xa, const float* b, float* dBp, long rp,
                          float* dxa, long ldx, long r, long i0, long i1, float alpha) {
  for (long c0 = 0; c0 < r; c0 += LR_VC * W) {
    long lanes = min_l(LR_VC * W, r - c0);
    (lanes > W ? low_rank_chunk<2> : low_rank_chunk<1>)(dy, out, xa + c0, b + c0, dBp + c0, rp, dxa + c0, ldx,
                                                       lanes, i0, i1, alpha);
  }
}

// [n, r] -> [n, rp], zero-padded.
static void pad_columns(const float* src, long n, long r, long rp, float* out) {
  for (long i = 0; i < n; i++) {
    for (long c = 0; c < r; c++) out[i * rp + c] = src[i * r + c];
    for (long c = r; c < rp; c++) out[i * rp + c] = 0.f;
  }
}

static void low_rank_backward(const float* dy, const float* xa, const float* b, float* dB, float* dxa, long n,
                              long out, long r, float alpha, long ldx) {
  if (n <= 0 || r <= 0) return;
  long rp = ceil_div(r, W) * W;
  long blocks = ceil_div(n, LR_SPLIT);
  long tasks = min_l(svc_num_threads(), ceil_div(blocks, 4));  // n > 0: at least one
  bool padded = rp != r;
  float* part = svc_scratch(SVC_SLOT_CALLER, (size_t)(tasks * out * rp + (padded ? (n + out) * rp : 0)));
  if (padded) {
    float* xp = part + tasks * out * rp;
    float* bp = xp + n * rp;
    pad_columns(xa, n, r, rp, xp);
    pad_columns(b, out, r, rp, bp);
    xa = xp;
    b = bp;
  }
  par(tasks, [&](long t) {
    float* dBp = part + t * out * rp;
    for (long i = 0; i < out * rp; i++) dBp[i] = 0.f;
    long i0 = min_l(n, blocks * t / tasks * LR_SPLIT), i1 = min_l(n, blocks * (t + 1) / tasks * LR_SPLIT);
    low_rank_rows(dy, out, xa, b, dBp, rp, dxa, ldx, r, i0, i1, alpha);
  });
  par_range(out, ceil_div(16384, rp), [&](long o0, long o1) {
    for (long o = o0; o < o1; o++)
      for (long c = 0; c < r; c++) {
        float s = 0.f;
        for (long t = 0; t < tasks; t++) s += part[(t * out + o) * rp + c];
        dB[o * r + c] += alpha * s;
      }
  });
}
