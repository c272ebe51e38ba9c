/* hash.cl — compatible-mode aHash, dHash, vertical dHash, pHash and wHash
 * on an OpenCL device, bit-identical to the CPU (src/hash/compat.c) as the
 * CUDA kernels are (src/cuda/hash_gpu.cu, whose comments explain each
 * step). The program is src/hash/fp_core.h, dct_core.h, haar_core.h,
 * hash_jobs.h, hash_core.cl, then this file: the DCT, the Haar butterflies,
 * the median of two and the jobs' layout are those files', not copies.
 *
 * The host (src/opencl/hash_cl.c) plans a round with src/cuda/hash_plan.c
 * exactly as for CUDA, with the arenas' bases set to byte offsets: every
 * address in a job is an offset into `data` (the images, the u8 scratch,
 * the double scratch) or, for the resampling tables, into `up` (the round's
 * upload: tables at 0, then the job arrays at the offsets passed in). */

#define FY_PREC FY_HP_PREC
#ifndef FY_LOCAL_PASS /* the pass kernel's work-group (hash_cl.c sets it) */
#define FY_LOCAL_PASS 256
#endif

static uchar fy_clip8(int acc) {
  acc = acc < 0 ? 0 : acc;
  acc >>= FY_PREC;
  return (uchar)(acc > 255 ? 255 : acc);
}

/* The job holding item t (jobs sorted by begin; t >= jobs[0].begin). */
#define FY_FIND_JOB(jobs, njobs, t, out)                                                           \
  do {                                                                                             \
    int lo_ = 0, hi_ = (njobs)-1;                                                                  \
    while (lo_ < hi_) {                                                                            \
      int mid_ = (lo_ + hi_ + 1) >> 1;                                                             \
      if ((jobs)[mid_].begin <= (t))                                                               \
        lo_ = mid_;                                                                                \
      else                                                                                         \
        hi_ = mid_ - 1;                                                                            \
    }                                                                                              \
    (out) = lo_;                                                                                   \
  } while (0)

/* RGB -> Pillow's L (src/hash/gray.c). Global size (x, ngray). */
__kernel void fy_hash_gray(__global const uchar *up, ulong off, __global uchar *data) {
  __global const fy_hp_gray *jobs = (__global const fy_hp_gray *)(up + off);
  const fy_hp_gray J = jobs[get_global_id(1)];
  const long n = (long)J.w * J.h;
  __global const uchar *src = data + J.src;
  __global uchar *dst = data + J.dst;
  for (long p = get_global_id(0); p < n; p += get_global_size(0)) {
    const long y = p / J.w, x = p - y * J.w;
    __global const uchar *q = src + y * J.pitch + 3 * x;
    dst[p] = (uchar)((q[0] * 19595u + q[1] * 38470u + q[2] * 7471u + 0x8000u) >> 16);
  }
}

/* One resampling stage: item base + global id, one item per work-item
 * (work-groups of FY_LOCAL_PASS, set by the host, a multiple of the 32 items a warp-mode output
 * takes: its 32 partial sums meet in li memory). The integer sums are exact in any order, as on the
 * CPU. */
__kernel void fy_hash_pass(__global const uchar *up, ulong off, int njobs, long total, long base,
                           __global uchar *data) {
  __local uint part[FY_LOCAL_PASS];
  __global const fy_hp_pass *jobs = (__global const fy_hp_pass *)(up + off);
  const long t = base + (long)get_global_id(0);
  const int lid = (int)get_local_id(0);
  uint acc = 0;
  int store = 0, warp = 0;
  __global uchar *out = 0;
  if (t < total) {
    int j;
    FY_FIND_JOB(jobs, njobs, t, j);
    const fy_hp_pass J = jobs[j];
    const long li = t - J.begin;
    const long o = J.warp ? li >> 5 : li;
    const int lane = J.warp ? (int)(li & 31) : 0;
    warp = J.warp;
    if (o < (long)J.lines * J.out) {
      int line, i;
      if (J.line_fast) {
        line = (int)(o % J.lines);
        i = (int)(o / J.lines);
      } else {
        i = (int)(o % J.out);
        line = (int)(o / J.out);
      }
      __global const int *start = (__global const int *)(up + J.start);
      __global const int *k = (__global const int *)(up + J.k) + (long)i * J.taps;
      __global const uchar *s = data + J.src + line * J.sl + (long)(start[i] - J.shift) * J.sp;
      const int step = J.warp ? 32 : 1;
      for (int tt = lane; tt < J.taps; tt += step)
        acc += (uint)((int)s[tt * J.sp] * k[tt]);
      out = data + J.dst + line * J.dl + i * J.dp;
      store = lane == 0;
    }
  }
  /* warp mode: lanes 1..31 hand their sums to lane 0 (32-aligned groups;
   * padding items add 0) */
  part[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (store && warp)
    for (int d = 1; d < 32; d++)
      acc += part[lid + d];
  if (store)
    *out = fy_clip8((int)(acc + (1u << (FY_PREC - 1))));
}

/* One Haar step of every image: item base + global id (the CPU's
 * butterflies, haar_core.h, 2x2-block-li as in hash_gpu.cu). */
__kernel void fy_hash_haar(__global const uchar *up, ulong off, int njobs, long total, long base,
                           __global uchar *data) {
  __global const fy_hp_haar *jobs = (__global const fy_hp_haar *)(up + off);
  const long t = base + (long)get_global_id(0);
  if (t >= total)
    return;
  int j;
  FY_FIND_JOB(jobs, njobs, t, j);
  const fy_hp_haar J = jobs[j];
  const long li = t - J.begin;
  const int h = J.h, m = 2 * h;
  if (li >= (long)h * h)
    return; /* padding */
  const int i = (int)(li / h), o = (int)(li % h);
  const long q = (long)h * h;
  if (J.type == 1) { /* synthesis: a, ad, da, dd of block (i, o) -> 2x2 */
    __global const double *a = (__global const double *)(data + J.in);
    __global const double *b = (__global const double *)(data + J.bands);
    double aa = a[li];
    if (J.zero)
      aa = aa * 0.0; /* imagehash: coeffs[0] *= 0 */
    const double ad = b[li], da = b[q + li], dd = b[2 * q + li];
    const double ta0 = fy_haar_even(aa, ad), ta1 = fy_haar_odd(aa, ad);
    const double td0 = fy_haar_even(da, dd), td1 = fy_haar_odd(da, dd);
    __global double *x = (__global double *)(data + J.out);
    x[(long)(2 * i) * m + 2 * o] = fy_haar_even(ta0, td0);
    x[(long)(2 * i + 1) * m + 2 * o] = fy_haar_odd(ta0, td0);
    x[(long)(2 * i) * m + 2 * o + 1] = fy_haar_even(ta1, td1);
    x[(long)(2 * i + 1) * m + 2 * o + 1] = fy_haar_odd(ta1, td1);
    return;
  }
  double x00, x01, x10, x11; /* x[2i + r][2o + c] */
  if (J.from_u8) {           /* numpy.asarray(image) / 255. */
    __global const uchar *p = data + J.in;
    x00 = (double)p[(long)(2 * i) * m + 2 * o] / 255.0;
    x01 = (double)p[(long)(2 * i) * m + 2 * o + 1] / 255.0;
    x10 = (double)p[(long)(2 * i + 1) * m + 2 * o] / 255.0;
    x11 = (double)p[(long)(2 * i + 1) * m + 2 * o + 1] / 255.0;
  } else {
    __global const double *p = (__global const double *)(data + J.in);
    x00 = p[(long)(2 * i) * m + 2 * o];
    x01 = p[(long)(2 * i) * m + 2 * o + 1];
    x10 = p[(long)(2 * i + 1) * m + 2 * o];
    x11 = p[(long)(2 * i + 1) * m + 2 * o + 1];
  }
  const double ta0 = fy_haar_lo(x10, x00), ta1 = fy_haar_lo(x11, x01);
  ((__global double *)(data + J.out))[li] = fy_haar_lo(ta1, ta0);
  if (J.type == 0) {
    const double td0 = fy_haar_hi(x10, x00), td1 = fy_haar_hi(x11, x01);
    __global double *b = (__global double *)(data + J.bands);
    b[li] = fy_haar_hi(ta1, ta0);         /* ad */
    b[q + li] = fy_haar_lo(td1, td0);     /* da */
    b[2 * q + li] = fy_haar_hi(td1, td0); /* dd */
  }
}

/* numpy.median's sort, by rank: sorted[] gets every value of v[0..n) at
 * its place in a stable sort, the work-items of the group sharing the
 * values (no barrier inside: the caller's barriers are all at the kernel's
 * top level, where every OpenCL compiler handles them; PoCL 3.1 got a
 * median wrong with them inside a conditional). */
static void fy_rank_place(__local const double *v, __local double *sorted, int n) {
  for (int i = (int)get_local_id(0); i < n; i += (int)get_local_size(0)) {
    int r = 0;
    const double x = v[i];
    for (int j = 0; j < n; j++)
      r += v[j] < x || (v[j] == x && j < i);
    sorted[r] = x;
  }
}

/* numpy.median of the sorted values: the middle one, or the mean of the
 * middle two. */
static double fy_sorted_median(__local const double *sorted, int n) {
  return n & 1 ? sorted[n / 2] : fy_median_mid(sorted[n / 2 - 1], sorted[n / 2]);
}

/* Bit i of a `bits`-bit hash, most significant first, as 32-bit words
 * (local 32-bit atomics are core OpenCL; 64-bit ones are not). */
static void fy_set_bit(__local uint *w, int bits, int i) {
  const int b = bits - 1 - i;
  atomic_or(&w[b >> 5], 1u << (b & 31));
}

#define FY_MASK(k) (1u << (k))

/* The thresholds, the DCT and the medians: one work-group per image
 * (at least FY_DCT_MAX work-items); out[image][grid][4] 64-bit words.
 * Every barrier is at the top level: the steps of a hash not asked for
 * are skipped inside, never around a barrier. */
__kernel void fy_hash_bits(__global const uchar *up, ulong off, __global const fy_dct_plan *plans,
                           __global const uchar *data, __global ulong *out) {
  __local double tmp[FY_DCT_MAX * FY_DCT_MAX];
  __local double vals[256];
  __local double sorted[256];
  __local uint w[FY_HP_NGRID * 8];
  __local double mean;
  __global const fy_hp_hash *jobs = (__global const fy_hp_hash *)(up + off);
  const fy_hp_hash J = jobs[get_group_id(0)];
  const int s = J.s, n2 = s * s, tid = (int)get_local_id(0), nt = (int)get_local_size(0);
  const int do_a = (J.kinds & FY_MASK(0)) != 0, do_p = (J.kinds & FY_MASK(3)) != 0,
            do_w = (J.kinds & FY_MASK(4)) != 0;
  for (int i = tid; i < FY_HP_NGRID * 8; i += nt)
    w[i] = 0;
  if (do_a && tid == 0) { /* aHash's mean: exact (integers) */
    __global const uchar *px = data + J.grid[0];
    double sum = 0;
    for (int i = 0; i < n2; i++)
      sum = sum + (double)px[i];
    mean = sum / (double)n2;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (do_a) {
    __global const uchar *px = data + J.grid[0];
    for (int i = tid; i < n2; i += nt)
      if ((double)px[i] > mean)
        fy_set_bit(w, n2, i);
  }
  for (int v = 0; v < 2; v++) { /* dHash (grid 1), vertical dHash (grid 2) */
    const int kind = v ? 2 : 1;
    if (!(J.kinds & FY_MASK(kind)))
      continue;
    __global const uchar *px = data + J.grid[kind];
    const int gw = v ? s : s + 1;
    for (int i = tid; i < n2; i += nt) {
      const int y = i / s, x = i % s;
      const int a = v ? px[(y + 1) * gw + x] : px[y * gw + x + 1], b = px[y * gw + x];
      if (a > b)
        fy_set_bit(w + 8 * kind, n2, i);
    }
  }
  /* pHash: the DCT along the columns (a work-item each), then along the
   * kept rows, then the median */
  const int n = plans[s == 8 ? 0 : 1].n;
  fy_dct_plan p; /* the shared functions take private pointers (OpenCL 1.2) */
  if (do_p && tid < n) {
    p = plans[s == 8 ? 0 : 1];
    __global const uchar *px = data + J.grid[3];
    double col[FY_DCT_MAX];
    for (int y = 0; y < n; y++)
      col[y] = px[y * n + tid];
    fy_dct2_core(&p, col);
    for (int y = 0; y < n; y++)
      tmp[y * n + tid] = col[y];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (do_p && tid < s) {
    double row[FY_DCT_MAX];
    for (int x = 0; x < n; x++)
      row[x] = tmp[tid * n + x];
    fy_dct2_core(&p, row);
    for (int x = 0; x < s; x++)
      vals[tid * s + x] = row[x];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (do_p)
    fy_rank_place(vals, sorted, n2);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (do_p) {
    const double med = fy_sorted_median(sorted, n2);
    for (int i = tid; i < n2; i += nt)
      if (vals[i] > med)
        fy_set_bit(w + 8 * 3, n2, i);
  }
  barrier(CLK_LOCAL_MEM_FENCE); /* vals and sorted are wHash's now */
  if (do_w) {
    __global const double *low = (__global const double *)(data + J.wlow);
    for (int i = tid; i < n2; i += nt)
      vals[i] = low[i];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (do_w)
    fy_rank_place(vals, sorted, n2);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (do_w) {
    const double med = fy_sorted_median(sorted, n2);
    for (int i = tid; i < n2; i += nt)
      if (vals[i] > med)
        fy_set_bit(w + 8 * 4, n2, i);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int i = tid; i < FY_HP_NGRID * 4; i += nt)
    out[get_group_id(0) * FY_HP_NGRID * 4 + i] = (ulong)w[2 * i] | ((ulong)w[2 * i + 1] << 32);
}
