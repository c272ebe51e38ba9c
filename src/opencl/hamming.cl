/* hamming.cl — all-pairs and top-k Hamming search on an OpenCL device
 * (OpenCL C 1.2; host side: hamming_cl.c). Built with -DFY_WORDS=1 (64-bit
 * codes) or 4 (256-bit), -DFY_LOCAL=<work-group size> and -DFY_ROWS=<query
 * rows per work-item>; -DFY_FILTER=1 tests a cheap lower bound first. Codes
 * are FY_WORDS ulongs each, one after the other. */

#ifndef FY_WORDS
#error "build with -DFY_WORDS=1 or 4"
#endif
#ifndef FY_LOCAL
#define FY_LOCAL 256
#endif

#ifndef FY_ROWS
#define FY_ROWS 4
#endif
#ifndef FY_FILTER
#define FY_FILTER 0
#endif

/* Query rows qi[] (codes q[][]) against target j (code c): each pair
 * within t is counted and written. With FY_FILTER (small thresholds), a
 * lower bound with half the popcounts is tested first: popcount(lo | hi)
 * of each word of q ^ c is never more than the distance, and for most
 * pairs it is already over t. */
inline void fy_pair_test(const ulong q[FY_ROWS][FY_WORDS], const uint qi[FY_ROWS],
                         __local const ulong *c, uint j, uint i1, uint t, __global uint *out,
                         uint cap, __global uint *count) {
  ulong cw[FY_WORDS];
  for (int w = 0; w < FY_WORDS; w++)
    cw[w] = c[w];
  for (int r = 0; r < FY_ROWS; r++) {
#if FY_FILTER
    uint lb = 0;
    for (int w = 0; w < FY_WORDS; w++) {
      ulong x = q[r][w] ^ cw[w];
      lb += popcount((uint)x | (uint)(x >> 32));
    }
    if (lb > t)
      continue;
#endif
    uint d = 0;
    for (int w = 0; w < FY_WORDS; w++)
      d += (uint)popcount(q[r][w] ^ cw[w]);
    if (d <= t && j > qi[r] && qi[r] < i1 && atomic_or(count, 0u) <= cap) {
      uint at = atomic_inc(count);
      if (at < cap) {
        out[3 * (size_t)at] = qi[r];
        out[3 * (size_t)at + 1] = j;
        out[3 * (size_t)at + 2] = d;
      }
    }
  }
}

/* Pairs (i, j), i in [i0, i1), j in [j0, j1), i < j, distance <= t.
 * Dimension 0: each work-item keeps FY_ROWS query rows in registers (rows
 * lid, lid + FY_LOCAL, ... of its group's FY_LOCAL * FY_ROWS); dimension 1
 * cuts the columns into blocks of `cols`. A work-group stages FY_LOCAL
 * target codes at a time in local memory and every item compares its
 * queries with each of them (one local load per FY_ROWS pairs). Each pair
 * found takes a slot from *count and is written as (i, j, distance) when
 * the slot is inside the buffer. The counter goes past `cap` only when the
 * buffer overflowed (the host then re-runs the chunk in halves); once it
 * has, no more slots are taken, so it cannot wrap however many pairs
 * match. */
__kernel __attribute__((reqd_work_group_size(FY_LOCAL, 1, 1))) void
fy_hamming_pairs(__global const ulong *codes, uint i0, uint i1, uint j0, uint j1, uint cols,
                 uint t, __global uint *out, uint cap, __global uint *count) {
  __local ulong tile[FY_LOCAL * FY_WORDS];
  uint lid = (uint)get_local_id(0);
  uint first = i0 + (uint)get_group_id(0) * (FY_LOCAL * FY_ROWS);
  ulong q[FY_ROWS][FY_WORDS];
  uint qi[FY_ROWS];
  for (int r = 0; r < FY_ROWS; r++) {
    qi[r] = first + lid + (uint)r * FY_LOCAL;
    for (int w = 0; w < FY_WORDS; w++)
      q[r][w] = qi[r] < i1 ? codes[(size_t)qi[r] * FY_WORDS + w] : 0;
  }
  uint c0 = j0 + (uint)get_group_id(1) * cols;
  uint c1 = min(c0 + cols, j1);
  /* columns at or before the group's first row pair with no row here */
  if (c0 < first + 1)
    c0 = first + 1;
  for (uint jb = c0; jb < c1; jb += FY_LOCAL) { /* the same bounds for every item */
    uint jl = jb + lid;
    for (int w = 0; w < FY_WORDS; w++)
      tile[lid * FY_WORDS + w] = jl < c1 ? codes[(size_t)jl * FY_WORDS + w] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint m = min((uint)FY_LOCAL, c1 - jb);
    if (m == FY_LOCAL) { /* a whole tile: a constant trip count the compiler unrolls */
#pragma unroll 4
      for (uint k = 0; k < FY_LOCAL; k++)
        fy_pair_test(q, qi, tile + k * FY_WORDS, jb + k, i1, t, out, cap, count);
    } else {
      for (uint k = 0; k < m; k++)
        fy_pair_test(q, qi, tile + k * FY_WORDS, jb + k, i1, t, out, cap, count);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* The k (<= 32) nearest other codes of each query q in [q0, q1): one
 * work-item per query scans all n codes in index order, keeping a list
 * sorted by distance in which a code goes after those at its distance
 * (ties: the lower index first, as on the CPU). out[q * k + r] = (index,
 * distance), padded with 0xFFFFFFFF. */
__kernel __attribute__((reqd_work_group_size(FY_LOCAL, 1, 1))) void
fy_hamming_topk(__global const ulong *codes, uint n, uint q0, uint q1, uint k,
                __global uint *out) {
  __local ulong tile[FY_LOCAL * FY_WORDS];
  uint lid = (uint)get_local_id(0);
  uint q = q0 + (uint)get_global_id(0);
  int live = q < q1;
  ulong c[FY_WORDS];
  for (int w = 0; w < FY_WORDS; w++)
    c[w] = live ? codes[(size_t)q * FY_WORDS + w] : 0;
  uint bi[32], bd[32];
  uint fill = 0;
  for (uint jb = 0; jb < n; jb += FY_LOCAL) {
    uint jl = jb + lid;
    for (int w = 0; w < FY_WORDS; w++)
      tile[lid * FY_WORDS + w] = jl < n ? codes[(size_t)jl * FY_WORDS + w] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint m = min((uint)FY_LOCAL, n - jb);
    if (live) {
      for (uint x = 0; x < m; x++) {
        uint j = jb + x;
        if (j == q)
          continue;
        uint d = 0;
        for (int w = 0; w < FY_WORDS; w++)
          d += (uint)popcount(c[w] ^ tile[x * FY_WORDS + w]);
        if (fill == k && d >= bd[k - 1])
          continue;
        uint at = fill < k ? fill++ : k - 1;
        while (at > 0 && bd[at - 1] > d) {
          bd[at] = bd[at - 1];
          bi[at] = bi[at - 1];
          at--;
        }
        bd[at] = d;
        bi[at] = j;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (live)
    for (uint r = 0; r < k; r++) {
      out[2 * ((size_t)q * k + r)] = r < fill ? bi[r] : 0xFFFFFFFFu;
      out[2 * ((size_t)q * k + r) + 1] = r < fill ? bd[r] : 0xFFFFFFFFu;
    }
}
