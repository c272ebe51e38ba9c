/* hamming.cl — all-pairs and top-k Hamming search on an OpenCL device
 * (OpenCL C 1.2; host side: hamming_cl.c). Built with -DFY_WORDS=1 (64-bit
 * codes) or 4 (256-bit) and -DFY_LOCAL=<work-group size>. Codes are
 * FY_WORDS ulongs each, one after the other. */

#ifndef FY_WORDS
#error "build with -DFY_WORDS=1 or 4"
#endif
#ifndef FY_LOCAL
#define FY_LOCAL 256
#endif

/* Pairs (i, j), i in [i0, i1), j in [j0, j1), i < j, distance <= t. One
 * work-item per query row (dimension 0); dimension 1 cuts the columns into
 * blocks of `cols`. A work-group stages FY_LOCAL target codes at a time in
 * local memory and every item compares its query with them. Each pair found
 * takes a slot from *count (which keeps counting past `cap`, so the host
 * knows how many there were) and is written as (i, j, distance) when the
 * slot is inside the buffer. */
__kernel __attribute__((reqd_work_group_size(FY_LOCAL, 1, 1))) void
fy_hamming_pairs(__global const ulong *codes, uint i0, uint i1, uint j0, uint j1, uint cols,
                 uint t, __global uint *out, uint cap, __global uint *count) {
  __local ulong tile[FY_LOCAL * FY_WORDS];
  uint lid = (uint)get_local_id(0);
  uint i = i0 + (uint)get_global_id(0);
  int live = i < i1;
  ulong q[FY_WORDS];
  for (int w = 0; w < FY_WORDS; w++)
    q[w] = live ? codes[(size_t)i * FY_WORDS + w] : 0;
  uint c0 = j0 + (uint)get_group_id(1) * cols;
  uint c1 = min(c0 + cols, j1);
  /* the group's first row: columns at or before it pair with no row here */
  uint first = i0 + (uint)get_group_id(0) * FY_LOCAL;
  if (c0 < first + 1)
    c0 = first + 1;
  for (uint jb = c0; jb < c1; jb += FY_LOCAL) { /* the same bounds for every item */
    uint jl = jb + lid;
    for (int w = 0; w < FY_WORDS; w++)
      tile[lid * FY_WORDS + w] = jl < c1 ? codes[(size_t)jl * FY_WORDS + w] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint m = min((uint)FY_LOCAL, c1 - jb);
    if (live) {
      for (uint k = 0; k < m; k++) {
        uint d = 0;
        for (int w = 0; w < FY_WORDS; w++)
          d += (uint)popcount(q[w] ^ tile[k * FY_WORDS + w]);
        uint j = jb + k;
        if (d <= t && j > i) {
          uint at = atomic_inc(count);
          if (at < cap) {
            out[3 * (size_t)at] = i;
            out[3 * (size_t)at + 1] = j;
            out[3 * (size_t)at + 2] = d;
          }
        }
      }
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
