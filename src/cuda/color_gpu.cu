/* color_gpu.cu — colorhash's pixel counts of RGB images in device memory,
 * counted as fy_color_count_rgb counts them on the CPU (src/hash/
 * colorhash.c): Pillow's L for black, the saturation class by (max, min)
 * and the hue bin by (max channel, distances of the other two to the max)
 * from the same host-built tables, uploaded once. Integer work only: the
 * counts are exactly the CPU's for the same pixels.
 *
 * One launch per call: grid (64, n), each block takes every 64th row of
 * its image; black/gray/colour counts in registers, the hue bins in shared
 * memory, one global add per counter per block. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <new>

extern "C" {
#include "cuda/hash_gpu.h"
#include "hash/hash.h"
}
#define FY_CUDA_CONTEXT "CUDA colorhash"
#include "cuda/cuda_check.h"

#define THREADS 256
#define ROW_BLOCKS 64
#define NCOUNT 15 /* black, gray, colors, faint[6], bright[6] */
#define MAX_IMAGES 1024

struct cjob {
  const uint8_t *p;
  int w, h;
  size_t pitch;
};

__global__ void __launch_bounds__(THREADS)
    color_kernel(const cjob *__restrict__ jobs, const uint8_t *__restrict__ sat,
                 const uint8_t *__restrict__ hue, unsigned long long *__restrict__ counts) {
  __shared__ unsigned int bins[12];
  if (threadIdx.x < 12)
    bins[threadIdx.x] = 0;
  __syncthreads();
  const cjob j = jobs[blockIdx.y];
  unsigned int black = 0, gray = 0, colors = 0;
  for (int y = blockIdx.x; y < j.h; y += gridDim.x) {
    const uint8_t *row = j.p + (size_t)y * j.pitch;
    for (int x = threadIdx.x; x < j.w; x += blockDim.x) {
      int r = row[3 * x], g = row[3 * x + 1], b = row[3 * x + 2];
      int l = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16;
      if (l < 256 / 8) {
        black++;
        continue;
      }
      int mx = max(r, max(g, b)), mn = min(r, min(g, b));
      int sc = sat[mx * 256 + mn]; /* 0 gray, 1 faint, 2 neither, 3 bright */
      if (sc == 0) {
        gray++;
        continue;
      }
      colors++;
      if (sc == 2)
        continue;
      int bin;
      if (r == mx)
        bin = hue[(0 * 256 + (mx - g)) * 256 + (mx - b)];
      else if (g == mx)
        bin = hue[(1 * 256 + (mx - r)) * 256 + (mx - b)];
      else
        bin = hue[(2 * 256 + (mx - r)) * 256 + (mx - g)];
      atomicAdd(&bins[(sc == 1 ? 0 : 6) + bin], 1u);
    }
  }
  /* warp sums first: 3 global adds per warp instead of per thread */
  for (int o = 16; o > 0; o >>= 1) {
    black += __shfl_down_sync(0xffffffffu, black, o);
    gray += __shfl_down_sync(0xffffffffu, gray, o);
    colors += __shfl_down_sync(0xffffffffu, colors, o);
  }
  unsigned long long *c = counts + (size_t)blockIdx.y * NCOUNT;
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&c[0], (unsigned long long)black);
    atomicAdd(&c[1], (unsigned long long)gray);
    atomicAdd(&c[2], (unsigned long long)colors);
  }
  __syncthreads();
  if (threadIdx.x < 12)
    atomicAdd(&c[3 + threadIdx.x], (unsigned long long)bins[threadIdx.x]);
}

struct fy_gpu_colorer {
  int device;
  cudaStream_t st;
  cudaEvent_t done;
  uint8_t *sat, *hue;    /* device copies of the host tables */
  cjob *jobs_h, *jobs_d; /* pinned, device: MAX_IMAGES */
  unsigned long long *cnt_d, *cnt_h;
};

extern "C" void fy_gpu_colorer_free(fy_gpu_colorer *c) {
  if (!c)
    return;
  cudaSetDevice(c->device);
  if (c->st)
    cudaStreamSynchronize(c->st);
  cudaFree(c->sat);
  cudaFree(c->hue);
  cudaFree(c->jobs_d);
  cudaFree(c->cnt_d);
  cudaFreeHost(c->jobs_h);
  cudaFreeHost(c->cnt_h);
  if (c->done)
    cudaEventDestroy(c->done);
  if (c->st)
    cudaStreamDestroy(c->st);
  delete c;
}

extern "C" int fy_gpu_colorer_new(int device, fy_gpu_colorer **out) {
  if (!out)
    return fy_error(FERRY_EINVAL, "fy_gpu_colorer_new: NULL argument");
  *out = NULL;
  int rc = fy_gpu_hash_available(device);
  if (rc)
    return rc;
  fy_gpu_colorer *c = new (std::nothrow) fy_gpu_colorer();
  if (!c)
    return fy_error(FERRY_ENOMEM, "GPU colorhash: out of memory");
  c->device = device;
  fy_color_tables t;
  memset(&t, 0, sizeof t);
  rc = fy_color_tables_init(&t);
  cudaError_t e = cudaSuccess;
  if (!rc) {
    e = cudaSetDevice(device);
    if (e == cudaSuccess)
      e = cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking);
    if (e == cudaSuccess)
      e = cudaEventCreateWithFlags(&c->done, cudaEventBlockingSync | cudaEventDisableTiming);
    if (e == cudaSuccess)
      e = cudaMalloc((void **)&c->sat, 256 * 256);
    if (e == cudaSuccess)
      e = cudaMalloc((void **)&c->hue, 3 * 256 * 256);
    if (e == cudaSuccess)
      e = cudaMalloc((void **)&c->jobs_d, MAX_IMAGES * sizeof(cjob));
    if (e == cudaSuccess)
      e = cudaMalloc((void **)&c->cnt_d, MAX_IMAGES * NCOUNT * sizeof(unsigned long long));
    if (e == cudaSuccess)
      e = cudaHostAlloc((void **)&c->jobs_h, MAX_IMAGES * sizeof(cjob), cudaHostAllocDefault);
    if (e == cudaSuccess)
      e = cudaHostAlloc((void **)&c->cnt_h, MAX_IMAGES * NCOUNT * sizeof(unsigned long long),
                        cudaHostAllocDefault);
    if (e == cudaSuccess)
      e = cudaMemcpy(c->sat, t.sat, 256 * 256, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
      e = cudaMemcpy(c->hue, t.hue, 3 * 256 * 256, cudaMemcpyHostToDevice);
    if (e != cudaSuccess)
      rc = fy_cuda_fail(e, "setting up colorhash counting");
  }
  fy_color_tables_free(&t);
  if (rc) {
    fy_gpu_colorer_free(c);
    return rc;
  }
  *out = c;
  return FERRY_OK;
}

extern "C" int fy_gpu_color_counts(fy_gpu_colorer *c, const fy_gpu_hash_image *im, int n,
                                   struct fy_color_counts *out) {
  if (!c || n < 0 || (n && (!im || !out)))
    return fy_error(FERRY_EINVAL, "fy_gpu_color_counts: bad argument");
  CU(cudaSetDevice(c->device), "selecting the device");
  for (int i0 = 0; i0 < n; i0 += MAX_IMAGES) {
    int m = n - i0 < MAX_IMAGES ? n - i0 : MAX_IMAGES;
    for (int i = 0; i < m; i++) {
      const fy_gpu_hash_image *g = &im[i0 + i];
      if (!g->data || g->channels != 3 || g->width < 1 || g->height < 1 ||
          g->pitch < (size_t)g->width * 3)
        return fy_error(FERRY_EINVAL, "GPU colorhash: image %d: need RGB, got %dx%dx%d", i0 + i,
                        g->width, g->height, g->channels);
      c->jobs_h[i] = cjob{g->data, g->width, g->height, g->pitch};
    }
    size_t cb = (size_t)m * NCOUNT * sizeof(unsigned long long);
    CU(cudaMemcpyAsync(c->jobs_d, c->jobs_h, (size_t)m * sizeof(cjob), cudaMemcpyHostToDevice,
                       c->st),
       "uploading jobs");
    CU(cudaMemsetAsync(c->cnt_d, 0, cb, c->st), "clearing counts");
    color_kernel<<<dim3(ROW_BLOCKS, (unsigned)m), THREADS, 0, c->st>>>(c->jobs_d, c->sat, c->hue,
                                                                       c->cnt_d);
    CU(cudaGetLastError(), "launching the colorhash kernel");
    CU(cudaMemcpyAsync(c->cnt_h, c->cnt_d, cb, cudaMemcpyDeviceToHost, c->st),
       "downloading counts");
    CU(cudaEventRecord(c->done, c->st), "counting colours");
    CU(cudaEventSynchronize(c->done), "counting colours");
    for (int i = 0; i < m; i++) {
      const unsigned long long *k = c->cnt_h + (size_t)i * NCOUNT;
      fy_color_counts *o = &out[i0 + i];
      memset(o, 0, sizeof *o);
      o->total = (uint64_t)im[i0 + i].width * (uint64_t)im[i0 + i].height;
      o->black = k[0];
      o->gray = k[1];
      o->colors = k[2];
      for (int b = 0; b < 6; b++) {
        o->faint[b] = k[3 + b];
        o->bright[b] = k[9 + b];
      }
    }
  }
  return FERRY_OK;
}
