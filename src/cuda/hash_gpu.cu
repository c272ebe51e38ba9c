/* hash_gpu.cu — compatible-mode perceptual hashes on the GPU (see
 * hash_gpu.h). Every step reproduces the CPU's integer or double operations
 * in the CPU's order, so the hashes are the CPU's bit for bit:
 *
 *  - L: (19595 R + 38470 G + 7471 B + 0x8000) >> 16 (src/hash/gray.c);
 *  - resize: for each hash grid, fy_resize_u8's choice (copy, one pass,
 *    horizontal-then-vertical, or vertical-then-horizontal when the height
 *    shrinks more than twice as much as the width), the tables of
 *    fy_resize_axis_table (the CPU's own fixed-point weights, padded
 *    windows), 32-bit integer sums (exact in any order) and clip8 between
 *    the passes (the jobs are planned on the host: hash_plan.c). Jobs of
 *    all images and grids form one flat list per stage:
 *    stage 1 reads the full-resolution L image (long windows: one warp per
 *    output pixel, lanes over the taps, reading consecutive bytes; short
 *    windows: one thread per output pixel), stage 2 the intermediates;
 *  - aHash/dHash: integer compares, numpy's mean as a double;
 *  - pHash: scipy's pocketfft DCT-II, the CPU's own code (hash/dct_core.h),
 *    with the host-built plan; wHash: PyWavelets' Haar with the CPU's
 *    butterflies (hash/haar_core.h) level by level, each level
 *    2x2-block-local, one launch per level across the batch; median as
 *    fy_median (rank sort, mean of the middle two: fy_median_mid).
 *
 * Every double product that meets an addition is written with __dmul_rn /
 * __dadd_rn (never fused; hash/fp_core.h in the shared code), and the file
 * is compiled with -fmad=false too. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <new>
#include <vector>

extern "C" {
#include "cuda/hash_gpu.h"
#include "cuda/hash_plan.h"
#include "hash/haar_core.h"
#include "hash/hash.h"
}
#define FY_CUDA_CONTEXT "CUDA hashing"
#include "cuda/cuda_check.h"

#define NGRID FY_HP_NGRID
#define PREC FY_HP_PREC
#define THREADS 256
#define DEFAULT_BUDGET ((size_t)3 << 30) /* device bytes per round */
#define MAX_ROUND 4096                   /* images per round (grid y of the L kernel) */

/* The jobs, as hash_plan.c plans them. */
typedef fy_hp_pass pjob;
typedef fy_hp_gray gjob;
typedef fy_hp_haar wjob;
typedef fy_hp_hash hjob;

/* ---------------------------------------------------------- resampling */

__device__ __forceinline__ uint8_t clip8(int acc) {
  acc = acc < 0 ? 0 : acc;
  acc >>= PREC;
  return (uint8_t)(acc > 255 ? 255 : acc);
}

/* The job of item t: a binary search for the first item of a thread, then
 * a walk forward (a thread's items only grow, by the grid's size). */
__device__ __forceinline__ int find_job(const fy_i64 *begin, int n, size_t stride, long long t,
                                        int prev) {
#define BEGIN(j) (*(const fy_i64 *)((const char *)begin + (size_t)(j)*stride))
  if (prev >= 0) {
    while (prev + 1 < n && BEGIN(prev + 1) <= t)
      prev++;
    return prev;
  }
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (BEGIN(mid) <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
#undef BEGIN
}

/* Job counts per item are multiples of 32 and the grid stride is too, so a
 * warp always works on one job (and in warp mode on one output). */
__global__ void pass_kernel(const pjob *__restrict__ jobs, int njobs, long long total) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  int j = -1;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
    j = find_job(&jobs[0].begin, njobs, sizeof(pjob), t, j);
    const pjob &J = jobs[j];
    const long long local = t - J.begin;
    const long long o = J.warp ? local >> 5 : local;
    const int lane = J.warp ? (int)(local & 31) : 0;
    if (o >= (long long)J.lines * J.out)
      continue; /* padding (warp-uniform in warp mode) */
    int line, i;
    if (J.line_fast) {
      line = (int)(o % J.lines);
      i = (int)(o / J.lines);
    } else {
      i = (int)(o % J.out);
      line = (int)(o / J.out);
    }
    const int32_t *start = (const int32_t *)J.start;
    const int32_t *k = (const int32_t *)J.k + (long long)i * J.taps;
    const uint8_t *s =
        (const uint8_t *)J.src + line * J.sl + (long long)(start[i] - J.shift) * J.sp;
    unsigned acc = 0; /* wraps like the CPU's int32; the true sum fits */
    const int step = J.warp ? 32 : 1;
    for (int tt = lane; tt < J.taps; tt += step)
      acc += (unsigned)((int)s[tt * J.sp] * k[tt]);
    if (J.warp) {
#pragma unroll
      for (int d = 16; d; d >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, d);
      if (lane)
        continue;
    }
    ((uint8_t *)J.dst)[line * J.dl + i * J.dp] = clip8((int)(acc + (1u << (PREC - 1))));
  }
}

__global__ void gray_kernel(const gjob *__restrict__ jobs) {
  const gjob J = jobs[blockIdx.y];
  const long long n = (long long)J.w * J.h;
  const uint8_t *src = (const uint8_t *)J.src;
  uint8_t *dst = (uint8_t *)J.dst;
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < n;
       p += (long long)gridDim.x * blockDim.x) {
    const long long y = p / J.w, x = p - y * J.w;
    const uint8_t *q = src + y * J.pitch + 3 * x;
    dst[p] = (uint8_t)((q[0] * 19595u + q[1] * 38470u + q[2] * 7471u + 0x8000u) >> 16);
  }
}

/* ---------------------------------------------------------------- Haar */

/* The butterflies are hash/haar_core.h's, the CPU's own (wavelet.c). */
__global__ void haar_kernel(const wjob *__restrict__ jobs, int njobs, long long total) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  int j = -1;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
    j = find_job(&jobs[0].begin, njobs, sizeof(wjob), t, j);
    const wjob &J = jobs[j];
    const long long local = t - J.begin;
    const int h = J.h, m = 2 * h;
    if (local >= (long long)h * h)
      continue; /* padding */
    const int i = (int)(local / h), o = (int)(local % h);
    const long long q = (long long)h * h;
    if (J.type == 1) { /* synthesis: a, ad, da, dd of block (i, o) -> 2x2 */
      const double *a = (const double *)J.in, *b = (const double *)J.bands;
      double aa = a[local];
      if (J.zero)
        aa = __dmul_rn(aa, 0.0); /* imagehash: coeffs[0] *= 0 */
      const double ad = b[local], da = b[q + local], dd = b[2 * q + local];
      /* synth_cols: ta = (a, ad), td = (da, dd) along the columns */
      const double ta0 = fy_haar_even(aa, ad), ta1 = fy_haar_odd(aa, ad);
      const double td0 = fy_haar_even(da, dd), td1 = fy_haar_odd(da, dd);
      /* synth_rows */
      double *x = (double *)J.out;
      x[(long long)(2 * i) * m + 2 * o] = fy_haar_even(ta0, td0);
      x[(long long)(2 * i + 1) * m + 2 * o] = fy_haar_odd(ta0, td0);
      x[(long long)(2 * i) * m + 2 * o + 1] = fy_haar_even(ta1, td1);
      x[(long long)(2 * i + 1) * m + 2 * o + 1] = fy_haar_odd(ta1, td1);
      continue;
    }
    double x00, x01, x10, x11; /* x[2i + r][2o + c] */
    if (J.from_u8) {           /* numpy.asarray(image) / 255. */
      const uint8_t *p = (const uint8_t *)J.in;
      x00 = __ddiv_rn((double)p[(long long)(2 * i) * m + 2 * o], 255.0);
      x01 = __ddiv_rn((double)p[(long long)(2 * i) * m + 2 * o + 1], 255.0);
      x10 = __ddiv_rn((double)p[(long long)(2 * i + 1) * m + 2 * o], 255.0);
      x11 = __ddiv_rn((double)p[(long long)(2 * i + 1) * m + 2 * o + 1], 255.0);
    } else {
      const double *p = (const double *)J.in;
      x00 = p[(long long)(2 * i) * m + 2 * o];
      x01 = p[(long long)(2 * i) * m + 2 * o + 1];
      x10 = p[(long long)(2 * i + 1) * m + 2 * o];
      x11 = p[(long long)(2 * i + 1) * m + 2 * o + 1];
    }
    /* analyse_rows (pairs of rows), then analyse_cols (pairs of columns) */
    const double ta0 = fy_haar_lo(x10, x00), ta1 = fy_haar_lo(x11, x01);
    ((double *)J.out)[local] = fy_haar_lo(ta1, ta0);
    if (J.type == 0) {
      const double td0 = fy_haar_hi(x10, x00), td1 = fy_haar_hi(x11, x01);
      double *b = (double *)J.bands;
      b[local] = fy_haar_hi(ta1, ta0);         /* ad */
      b[q + local] = fy_haar_lo(td1, td0);     /* da */
      b[2 * q + local] = fy_haar_hi(td1, td0); /* dd */
    }
  }
}

/* ----------------------------------------------------------- thresholds */

/* numpy.median of v[0..n) (shared memory), by rank: sorted[] gets every
 * value at its place in a stable sort. All threads call it. */
__device__ double block_median(const double *v, double *sorted, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    int r = 0;
    const double x = v[i];
    for (int j = 0; j < n; j++)
      r += v[j] < x || (v[j] == x && j < i);
    sorted[r] = x;
  }
  __syncthreads();
  double med = n & 1 ? sorted[n / 2] : fy_median_mid(sorted[n / 2 - 1], sorted[n / 2]);
  __syncthreads();
  return med;
}

__device__ void set_bit(unsigned long long *w, int bits, int i) {
  const int b = bits - 1 - i;
  atomicOr(&w[b >> 6], 1ull << (b & 63));
}

__global__ void __launch_bounds__(THREADS)
    hash_kernel(const hjob *__restrict__ jobs, const fy_dct_plan *__restrict__ plans,
                unsigned long long *__restrict__ out) {
  __shared__ double tmp[FY_DCT_MAX * FY_DCT_MAX];
  __shared__ double vals[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE];
  __shared__ double sorted[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE];
  __shared__ unsigned long long w[NGRID][4];
  __shared__ double mean;
  const hjob J = jobs[blockIdx.x];
  const int s = J.s, n2 = s * s, tid = threadIdx.x;
  if (tid < NGRID * 4)
    w[tid / 4][tid % 4] = 0;
  __syncthreads();
  if (J.kinds & FERRY_HASH_MASK(FERRY_HASH_AHASH)) {
    const uint8_t *px = (const uint8_t *)J.grid[0];
    if (tid == 0) {
      double sum = 0; /* exact: integers */
      for (int i = 0; i < n2; i++)
        sum = __dadd_rn(sum, (double)px[i]);
      mean = __ddiv_rn(sum, (double)n2);
    }
    __syncthreads();
    for (int i = tid; i < n2; i += blockDim.x)
      if ((double)px[i] > mean)
        set_bit(w[0], n2, i);
  }
  for (int v = 0; v < 2; v++) {
    const int kind = v ? FERRY_HASH_DHASH_V : FERRY_HASH_DHASH;
    if (!(J.kinds & FERRY_HASH_MASK(kind)))
      continue;
    const uint8_t *px = (const uint8_t *)J.grid[kind];
    const int gw = v ? s : s + 1;
    for (int i = tid; i < n2; i += blockDim.x) {
      const int y = i / s, x = i % s;
      const int a = v ? px[(y + 1) * gw + x] : px[y * gw + x + 1], b = px[y * gw + x];
      if (a > b)
        set_bit(w[kind], n2, i);
    }
  }
  if (J.kinds & FERRY_HASH_MASK(FERRY_HASH_PHASH)) {
    const fy_dct_plan *p = &plans[s == 8 ? 0 : 1];
    const int n = p->n;
    const uint8_t *px = (const uint8_t *)J.grid[FERRY_HASH_PHASH];
    if (tid < n) { /* axis 0: column tid */
      double col[FY_DCT_MAX];
      for (int y = 0; y < n; y++)
        col[y] = px[y * n + tid];
      fy_dct2_core(p, col);
      for (int y = 0; y < n; y++)
        tmp[y * n + tid] = col[y];
    }
    __syncthreads();
    if (tid < s) { /* axis 1: the kept rows */
      double row[FY_DCT_MAX];
      for (int x = 0; x < n; x++)
        row[x] = tmp[tid * n + x];
      fy_dct2_core(p, row);
      for (int x = 0; x < s; x++)
        vals[tid * s + x] = row[x];
    }
    __syncthreads();
    const double med = block_median(vals, sorted, n2);
    for (int i = tid; i < n2; i += blockDim.x)
      if (vals[i] > med)
        set_bit(w[FERRY_HASH_PHASH], n2, i);
    __syncthreads();
  }
  if (J.kinds & FERRY_HASH_MASK(FERRY_HASH_WHASH)) {
    const double *low = (const double *)J.wlow;
    for (int i = tid; i < n2; i += blockDim.x)
      vals[i] = low[i];
    __syncthreads();
    const double med = block_median(vals, sorted, n2);
    for (int i = tid; i < n2; i += blockDim.x)
      if (vals[i] > med)
        set_bit(w[FERRY_HASH_WHASH], n2, i);
  }
  __syncthreads();
  if (tid < NGRID * 4)
    out[(size_t)blockIdx.x * NGRID * 4 + tid] = w[tid / 4][tid % 4];
}

/* ------------------------------------------------- signature grids */

/* One image for grid_kernel. */
struct sjob {
  const uint8_t *data;
  int w, h, channels;
  long long pitch;
};

/* Means of each image over the cells of an n x n grid (integer cell
 * edges; a picture smaller than the grid repeats its pixels), Pillow's L of
 * RGB: what fy_signature starts from (signature.c). Block (row, image),
 * a thread per column. */
__global__ void grid_kernel(const sjob *__restrict__ jobs, int n, float *__restrict__ out) {
  const sjob J = jobs[blockIdx.y];
  int oy = blockIdx.x;
  int y0 = (int)((long long)oy * J.h / n), y1 = (int)((long long)(oy + 1) * J.h / n);
  if (y1 <= y0)
    y1 = y0 + 1;
  for (int ox = threadIdx.x; ox < n; ox += blockDim.x) {
    int x0 = (int)((long long)ox * J.w / n), x1 = (int)((long long)(ox + 1) * J.w / n);
    if (x1 <= x0)
      x1 = x0 + 1;
    unsigned long long sum = 0;
    for (int y = y0; y < y1; y++) {
      const uint8_t *row = J.data + (long long)y * J.pitch;
      unsigned s = 0;
      if (J.channels == 1)
        for (int x = x0; x < x1; x++)
          s += row[x];
      else
        for (int x = x0; x < x1; x++) {
          const uint8_t *q = row + 3 * x;
          s += (q[0] * 19595u + q[1] * 38470u + q[2] * 7471u + 0x8000u) >> 16;
        }
      sum += s;
    }
    out[((long long)blockIdx.y * n + oy) * n + ox] =
        (float)((double)sum / ((double)(x1 - x0) * (y1 - y0)));
  }
}

/* ================================================================ host */

namespace {

struct dbuf {
  void *p;
  size_t cap;
};

/* b holds at least n bytes of device (or pinned host) memory, grown by a
 * quarter and 4 KiB beyond what is asked. */
int grow(dbuf *b, size_t n, int pinned) {
  if (n <= b->cap)
    return FERRY_OK;
  if (pinned)
    cudaFreeHost(b->p);
  else
    cudaFree(b->p);
  b->p = NULL;
  b->cap = 0;
  n = n + n / 4 + 4096;
  if (pinned)
    CU(cudaHostAlloc(&b->p, n, cudaHostAllocDefault), "allocating pinned memory");
  else
    CU(cudaMalloc(&b->p, n), "allocating device memory");
  b->cap = n;
  return FERRY_OK;
}

int dgrow(dbuf *b, size_t n) { return grow(b, n, 0); }
int hgrow(dbuf *b, size_t n) { return grow(b, n, 1); }

} // namespace

struct fy_gpu_hasher {
  int device, sms;
  cudaStream_t st;
  cudaEvent_t done; /* blocking: the calling thread sleeps while the kernels run */
  dbuf u8, dbl, tabs, jobs, out, input, plans;
  dbuf hjobs, hout, stage; /* pinned */
  dbuf sjobs, grids;       /* fy_gpu_hasher_grids */
  fy_hash_plan P;          /* the round's jobs and the tables (hash_plan.c) */
};

static int blocks_for(const fy_gpu_hasher *g, long long total) {
  long long b = (total + THREADS - 1) / THREADS, cap = (long long)g->sms * 16;
  return (int)(b < cap ? b : cap);
}

/* One round: images that fit the budget together. */
static int run_round(fy_gpu_hasher *g, const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                     ferry_hash_result *out) {
  fy_hash_plan *P = &g->P;
  int rc;
  /* size, allocate, plan with the real addresses */
  P->u8_base = P->dbl_base = P->tab_base = 0;
  if ((rc = fy_hash_plan_all(P, im, n, kinds, s)))
    return rc;
  size_t u8b = P->u8_bytes, dblb = P->dbl_bytes, tabb = (size_t)P->tab_entries * 4;
  if ((rc = dgrow(&g->u8, u8b)) || (rc = dgrow(&g->dbl, dblb ? dblb : 8)) ||
      (rc = dgrow(&g->tabs, tabb ? tabb : 4)))
    return rc;
  P->u8_base = (uint64_t)(uintptr_t)g->u8.p;
  P->dbl_base = (uint64_t)(uintptr_t)g->dbl.p;
  P->tab_base = (uint64_t)(uintptr_t)g->tabs.p;
  if ((rc = fy_hash_plan_all(P, im, n, kinds, s)) || (rc = fy_hash_plan_layout(P)))
    return rc;

  /* one upload: tables, pass jobs, gray jobs, Haar jobs, hash jobs */
  if ((rc = hgrow(&g->hjobs, P->bytes)) || (rc = dgrow(&g->jobs, P->bytes)))
    return rc;
  fy_hash_plan_write(P, g->hjobs.p);
  char *hp = (char *)g->hjobs.p, *dj = (char *)g->jobs.p;
  /* the tables go to their own arena, the jobs to the job arena */
  CU(cudaMemcpyAsync(g->tabs.p, hp, tabb, cudaMemcpyHostToDevice, g->st), "uploading tables");
  CU(cudaMemcpyAsync(dj + P->off_p[0], hp + P->off_p[0], P->bytes - P->off_p[0],
                     cudaMemcpyHostToDevice, g->st),
     "uploading jobs");
  size_t outb = (size_t)n * NGRID * 4 * sizeof(unsigned long long);
  if ((rc = dgrow(&g->out, outb)) || (rc = hgrow(&g->hout, outb)))
    return rc;

  if (P->ngray)
    gray_kernel<<<dim3(64, (unsigned)P->ngray), THREADS, 0, g->st>>>((const gjob *)(dj + P->off_g));
  for (int k = 0; k < 2; k++)
    if (P->tot[k])
      pass_kernel<<<blocks_for(g, P->tot[k]), THREADS, 0, g->st>>>((const pjob *)(dj + P->off_p[k]),
                                                                   (int)P->nstage[k], P->tot[k]);
  for (size_t k = 0; k < P->nsteps; k++)
    haar_kernel<<<blocks_for(g, P->wtot[k]), THREADS, 0, g->st>>>((const wjob *)(dj + P->off_w[k]),
                                                                  (int)P->steps[k].n, P->wtot[k]);
  hash_kernel<<<(unsigned)n, THREADS, 0, g->st>>>((const hjob *)(dj + P->off_h),
                                                  (const fy_dct_plan *)g->plans.p,
                                                  (unsigned long long *)g->out.p);
  CU(cudaGetLastError(), "launching the hash kernels");
  CU(cudaMemcpyAsync(g->hout.p, g->out.p, outb, cudaMemcpyDeviceToHost, g->st),
     "downloading hashes");
  CU(cudaEventRecord(g->done, g->st), "running the hash kernels");
  CU(cudaEventSynchronize(g->done), "running the hash kernels");
  fy_hash_plan_results(im, n, kinds, s, (const uint64_t *)g->hout.p, out);
  fy_hash_plan_reset(P);
  return FERRY_OK;
}

/* Runs images [0, n) in rounds that fit the budget; `host` images are
 * uploaded through the pinned staging first. */
static int run_all(fy_gpu_hasher *g, const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                   ferry_hash_result *out, int host) {
  int rc = fy_hash_plan_check_images(im, n, s);
  if (rc)
    return rc;
  kinds &= FY_GPU_HASH_KINDS;
  if (!kinds || !n)
    return FERRY_OK;
  CU(cudaSetDevice(g->device), "selecting the device");
  std::vector<fy_gpu_hash_image> dev;
  for (int i0 = 0; i0 < n;) {
    size_t in_bytes = 0;
    const int i1 = i0 + fy_hash_plan_round(&g->P, im + i0, n - i0, kinds, s, host, DEFAULT_BUDGET,
                                           MAX_ROUND, &in_bytes);
    const fy_gpu_hash_image *batch = im + i0;
    if (host) { /* pinned staging, one upload */
      if ((rc = hgrow(&g->stage, in_bytes)) || (rc = dgrow(&g->input, in_bytes)))
        return rc;
      dev.assign(im + i0, im + i1);
      size_t o = 0;
      for (int i = i0; i < i1; i++) {
        size_t len = fy_hp_image_len(&im[i]);
        memcpy((char *)g->stage.p + o, im[i].data, len);
        dev[i - i0].data = (const uint8_t *)g->input.p + o;
        o += fy_hp_align256(len);
      }
      CU(cudaMemcpyAsync(g->input.p, g->stage.p, o, cudaMemcpyHostToDevice, g->st),
         "uploading images");
      batch = dev.data();
    }
    if ((rc = run_round(g, batch, i1 - i0, kinds, s, out + i0)))
      return rc;
    i0 = i1;
  }
  return FERRY_OK;
}

/* -------------------------------------------------------------- public */

extern "C" int fy_gpu_hash_available(int device) { return fy_cuda_device_check(device); }

extern "C" void fy_gpu_hasher_free(fy_gpu_hasher *g) {
  if (!g)
    return;
  cudaSetDevice(g->device);
  if (g->st)
    cudaStreamSynchronize(g->st);
  dbuf *dev[] = {&g->u8,    &g->dbl,   &g->tabs,  &g->jobs, &g->out,
                 &g->input, &g->plans, &g->sjobs, &g->grids};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    cudaFree(dev[i]->p);
  dbuf *pin[] = {&g->hjobs, &g->hout, &g->stage};
  for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++)
    cudaFreeHost(pin[i]->p);
  if (g->st)
    cudaStreamDestroy(g->st);
  if (g->done)
    cudaEventDestroy(g->done);
  fy_hash_plan_free(&g->P);
  delete g;
}

extern "C" int fy_gpu_hasher_new(int device, fy_gpu_hasher **out) {
  if (!out)
    return fy_error(FERRY_EINVAL, "fy_gpu_hasher_new: NULL argument");
  *out = NULL;
  int rc = fy_gpu_hash_available(device);
  if (rc)
    return rc;
  fy_gpu_hasher *g = new (std::nothrow) fy_gpu_hasher();
  if (!g)
    return fy_error(FERRY_ENOMEM, "GPU hash: out of memory");
  g->device = device;
  fy_dct_plan plans[2];
  if (fy_dct_plan_init(&plans[0], 32) || fy_dct_plan_init(&plans[1], 64)) {
    delete g;
    return fy_error(FERRY_EINTERNAL, "GPU hash: DCT plan");
  }
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags(&g->done, cudaEventBlockingSync | cudaEventDisableTiming);
  if (e == cudaSuccess && (rc = dgrow(&g->plans, sizeof plans)) == FERRY_OK)
    e = cudaMemcpy(g->plans.p, plans, sizeof plans, cudaMemcpyHostToDevice);
  if (e != cudaSuccess || rc) {
    if (!rc)
      rc = fy_cuda_fail(e, "setting up");
    fy_gpu_hasher_free(g);
    return rc;
  }
  *out = g;
  return FERRY_OK;
}

extern "C" int fy_gpu_hasher_run(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n,
                                 unsigned kinds, int hash_size, ferry_hash_result *out) {
  if (!g || (n && !out))
    return fy_error(FERRY_EINVAL, "fy_gpu_hasher_run: NULL argument");
  return run_all(g, images, n, kinds, hash_size, out, 0);
}

extern "C" int fy_gpu_hasher_run_host(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n,
                                      unsigned kinds, int hash_size, ferry_hash_result *out) {
  if (!g || (n && !out))
    return fy_error(FERRY_EINVAL, "fy_gpu_hasher_run_host: NULL argument");
  return run_all(g, images, n, kinds, hash_size, out, 1);
}

extern "C" int fy_gpu_hasher_grids(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n,
                                   int grid, float *out) {
  if (!g || !images || !out || n < 1 || grid < 1 || grid > 1024)
    return fy_error(FERRY_EINVAL, "fy_gpu_hasher_grids: bad argument");
  CU(cudaSetDevice(g->device), "selecting the device");
  sjob *host = (sjob *)malloc((size_t)n * sizeof *host);
  if (!host)
    return fy_error(FERRY_ENOMEM, "GPU grids: out of memory");
  for (int i = 0; i < n; i++)
    host[i] = sjob{images[i].data, images[i].width, images[i].height, images[i].channels,
                   (long long)images[i].pitch};
  size_t outb = (size_t)n * grid * grid * sizeof(float);
  int rc = dgrow(&g->sjobs, (size_t)n * sizeof *host);
  if (!rc)
    rc = dgrow(&g->grids, outb);
  cudaError_t e = rc ? cudaSuccess
                     : cudaMemcpyAsync(g->sjobs.p, host, (size_t)n * sizeof *host,
                                       cudaMemcpyHostToDevice, g->st);
  if (!rc && e == cudaSuccess) {
    grid_kernel<<<dim3(grid, n), 128, 0, g->st>>>((const sjob *)g->sjobs.p, grid,
                                                  (float *)g->grids.p);
    e = cudaGetLastError();
  }
  if (!rc && e == cudaSuccess)
    e = cudaMemcpyAsync(out, g->grids.p, outb, cudaMemcpyDeviceToHost, g->st);
  if (!rc && e == cudaSuccess)
    e = cudaStreamSynchronize(g->st);
  free(host);
  if (!rc && e != cudaSuccess)
    rc = fy_cuda_fail(e, "computing signature grids");
  return rc;
}

extern "C" int fy_gpu_hash_batch(int device, const fy_gpu_hash_image *images, int n, unsigned kinds,
                                 int hash_size, ferry_hash_result *out) {
  fy_gpu_hasher *g = NULL;
  int rc = fy_gpu_hasher_new(device, &g);
  if (!rc)
    rc = fy_gpu_hasher_run(g, images, n, kinds, hash_size, out);
  fy_gpu_hasher_free(g);
  return rc;
}

extern "C" int fy_gpu_hash_device_alloc(int device, size_t bytes, void **p) {
  *p = NULL;
  CU(cudaSetDevice(device), "selecting the device");
  CU(cudaMalloc(p, bytes ? bytes : 1), "allocating device memory");
  return FERRY_OK;
}

extern "C" int fy_gpu_hash_device_upload(int device, void *dst, const void *src, size_t bytes) {
  CU(cudaSetDevice(device), "selecting the device");
  CU(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "uploading");
  /* cudaMemcpy from pageable memory may return before the DMA lands: wait,
   * so that work on any stream (the hashers' are non-blocking) sees it */
  CU(cudaDeviceSynchronize(), "uploading");
  return FERRY_OK;
}

extern "C" void fy_gpu_hash_device_free(int device, void *p) {
  if (p && cudaSetDevice(device) == cudaSuccess)
    cudaFree(p);
}

extern "C" int fy_gpu_hash_pinned_grow(int device, void **p, size_t *cap, size_t n) {
  CU(cudaSetDevice(device), "selecting the device");
  dbuf b = {*p, *cap};
  int rc = hgrow(&b, n);
  *p = b.p, *cap = b.cap;
  return rc;
}

extern "C" void fy_gpu_hash_pinned_free(void *p) {
  if (p)
    cudaFreeHost(p);
}

extern "C" int fy_gpu_hasher_run_pinned(fy_gpu_hasher *g, const void *base, size_t bytes,
                                        const fy_gpu_hash_image *images, int n, unsigned kinds,
                                        int hash_size, ferry_hash_result *out) {
  if (!g || (n && (!out || !images)))
    return fy_error(FERRY_EINVAL, "fy_gpu_hasher_run_pinned: NULL argument");
  CU(cudaSetDevice(g->device), "selecting the device");
  int rc = dgrow(&g->input, bytes);
  if (rc)
    return rc;
  CU(cudaMemcpyAsync(g->input.p, base, bytes, cudaMemcpyHostToDevice, g->st), "uploading images");
  std::vector<fy_gpu_hash_image> dev(images, images + n);
  for (int i = 0; i < n; i++)
    dev[i].data = (const uint8_t *)g->input.p + (images[i].data - (const uint8_t *)base);
  return run_all(g, dev.data(), n, kinds, hash_size, out, 0);
}
