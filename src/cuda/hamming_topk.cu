/* hamming_topk.cu — the k nearest other codes of every code on the GPU
 * (k <= 32; 64- and 256-bit codes), the same neighbours in the same order
 * as ferry_hamming_topk on the CPU.
 *
 * One thread per query keeps its k best as sorted 64-bit keys (distance <<
 * 32 | index: smaller is better, ties go to the lower index) while every
 * target streams past through shared memory; a target enters only when its
 * key beats the current k-th, which is rare once the list is full. Queries
 * run in chunks whose results (8 bytes x k each) fit a bounded buffer. The
 * codes stay on the device while it is open (fy_gpu_topk_*), so that the
 * search over several devices (hamming_multi.c) uploads them once per
 * device however many query blocks it takes. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cuda/hamming.h"
}
#define FY_CUDA_CONTEXT "CUDA Hamming top-k"
#include "cuda/cuda_check.h"

#define TK_THREADS 128
#define TK_MAX_K 32
#define TK_TILE 1024                       /* targets per shared-memory tile */
#define TK_CHUNK_BYTES ((size_t)256 << 20) /* results per chunk */

/* Neighbours of queries [q0, q1) among all n codes, as ferry_neighbor
 * pairs (index, distance) at out[(q - q0) * k ...]; UINT32_MAX pads. */
template <int W>
__global__ void __launch_bounds__(TK_THREADS)
    topk_kernel(const uint64_t *__restrict__ codes, uint32_t n, uint32_t q0, uint32_t q1, int k,
                uint32_t *__restrict__ out) {
  __shared__ uint64_t tgt[TK_TILE * W];
  const uint32_t q = q0 + blockIdx.x * TK_THREADS + threadIdx.x;
  const bool live = q < q1;
  uint64_t a[W];
#pragma unroll
  for (int w = 0; w < W; w++)
    a[w] = live ? codes[(uint64_t)q * W + w] : 0;
  uint64_t best[TK_MAX_K];
  for (int r = 0; r < k; r++)
    best[r] = ~0ull;
  uint64_t worst = ~0ull;
  for (uint32_t t0 = 0; t0 < n; t0 += TK_TILE) {
    const uint32_t nt = n - t0 < TK_TILE ? n - t0 : TK_TILE;
    __syncthreads(); /* the previous tile is no longer read */
    for (uint32_t x = threadIdx.x; x < nt * W; x += TK_THREADS)
      tgt[x] = codes[(uint64_t)t0 * W + x];
    __syncthreads();
    if (!live)
      continue;
    for (uint32_t x = 0; x < nt; x++) {
      int d = 0;
#pragma unroll
      for (int w = 0; w < W; w++)
        d += __popcll(a[w] ^ tgt[x * W + w]);
      const uint64_t key = (uint64_t)d << 32 | (t0 + x);
      if (key < worst && t0 + x != q) { /* insert, keeping best[] sorted */
        int r = k - 1;
        while (r > 0 && best[r - 1] > key) {
          best[r] = best[r - 1];
          r--;
        }
        best[r] = key;
        worst = best[k - 1];
      }
    }
  }
  if (live)
    for (int r = 0; r < k; r++) {
      const uint64_t key = best[r];
      out[2 * ((uint64_t)(q - q0) * k + r)] = key == ~0ull ? UINT32_MAX : (uint32_t)key;
      out[2 * ((uint64_t)(q - q0) * k + r) + 1] = key == ~0ull ? UINT32_MAX : (uint32_t)(key >> 32);
    }
}

/* A top-k held open on one device (hamming.h). */
struct fy_gpu_topk {
  fy_device_codes dc; /* the device, its stream (all of its work), the codes */
  int words, k;
  size_t n, cap; /* cap: queries the result buffer holds */
  uint32_t *out; /* device: cap * k neighbours */
};

/* Frees what open and rows made (device `s->dc.device` current). */
static void release(fy_gpu_topk *s) {
  fy_device_codes_free(&s->dc); /* first: it waits for the stream */
  cudaFree(s->out);
  free(s);
}

extern "C" int fy_gpu_topk_open(int device, const uint64_t *codes, size_t n, int words, int k,
                                fy_gpu_topk **out) {
  int rc, prev = -1;
  fy_gpu_topk *s = NULL;
  if (!out)
    return fy_error(FERRY_EINVAL, "fy_gpu_topk_open: NULL argument");
  *out = NULL;
  if ((rc = fy_gpu_topk_check(codes, n, words, k)) || (rc = fy_gpu_hamming_available(device)))
    return rc;
  static_assert(FY_GPU_TOPK_MAX_K == TK_MAX_K, "hamming.h's bound is the kernel's");
  if (!(s = (fy_gpu_topk *)calloc(1, sizeof *s)))
    return fy_error(FERRY_ENOMEM, "GPU Hamming top-k: out of memory");
  s->dc.device = device;
  s->words = words;
  s->k = k;
  s->n = n;
  if (!(rc = fy_device_enter(device, &prev, FY_CUDA_CONTEXT)))
    rc = fy_device_codes_upload(&s->dc, device, codes, n, words, FY_CUDA_CONTEXT);
  if (rc) {
    cudaSetDevice(device); /* the failure may have been the selection itself */
    release(s);
  } else {
    *out = s;
  }
  fy_device_leave(prev);
  return rc;
}

extern "C" int fy_gpu_topk_rows(fy_gpu_topk *s, size_t q0, size_t q1, ferry_neighbor *out) {
  int rc = FERRY_OK, prev = -1;
  size_t chunk;
  if (!s || !out)
    return fy_error(FERRY_EINVAL, "fy_gpu_topk_rows: NULL argument");
  if (q0 > q1 || q1 > s->n)
    return fy_error(FERRY_EINVAL, "GPU Hamming top-k: queries %zu..%zu of %zu codes", q0, q1, s->n);
  if (q0 == q1)
    return FERRY_OK;
  static_assert(sizeof(ferry_neighbor) == 2 * sizeof(uint32_t), "ferry_neighbor is two uint32");
  chunk = TK_CHUNK_BYTES / ((size_t)s->k * sizeof(ferry_neighbor));
  chunk = chunk / TK_THREADS * TK_THREADS;
  if (chunk > q1 - q0)
    chunk = q1 - q0;
  if ((rc = fy_device_enter(s->dc.device, &prev, FY_CUDA_CONTEXT)))
    goto done;
  if (chunk > s->cap) { /* the first rows, or larger ones than before */
    cudaFree(s->out);
    s->out = NULL;
    s->cap = 0;
    CK(cudaMalloc((void **)&s->out, chunk * s->k * sizeof(ferry_neighbor)),
       "allocating the results");
    s->cap = chunk;
  }
  for (size_t a = q0; a < q1; a += chunk) {
    const size_t b = a + chunk < q1 ? a + chunk : q1;
    const unsigned blocks = (unsigned)((b - a + TK_THREADS - 1) / TK_THREADS);
    if (s->words == 1)
      topk_kernel<1><<<blocks, TK_THREADS, 0, s->dc.stream>>>(
          s->dc.codes, (uint32_t)s->n, (uint32_t)a, (uint32_t)b, s->k, s->out);
    else
      topk_kernel<4><<<blocks, TK_THREADS, 0, s->dc.stream>>>(
          s->dc.codes, (uint32_t)s->n, (uint32_t)a, (uint32_t)b, s->k, s->out);
    CK(cudaGetLastError(), "launching the top-k kernel");
    CK(cudaMemcpyAsync(out + a * s->k, s->out, (b - a) * s->k * sizeof(ferry_neighbor),
                       cudaMemcpyDeviceToHost, s->dc.stream),
       "copying neighbours to the host");
    CK(cudaStreamSynchronize(s->dc.stream), "running the top-k kernel");
  }
done:
  if (rc) /* nothing left writing into out */
    cudaStreamSynchronize(s->dc.stream);
  fy_device_leave(prev);
  return rc;
}

extern "C" void fy_gpu_topk_close(fy_gpu_topk *s) {
  if (!s)
    return;
  int prev = -1;
  fy_device_enter(s->dc.device, &prev, NULL); /* quietly: the last error may be the search's */
  release(s);
  fy_device_leave(prev);
}

extern "C" int fy_gpu_hamming_topk(int device, const uint64_t *codes, size_t n, int words, int k,
                                   ferry_neighbor *out) {
  fy_gpu_topk *s = NULL;
  if (!out)
    return fy_error(FERRY_EINVAL, "fy_gpu_hamming_topk: NULL argument");
  int rc = fy_gpu_topk_open(device, codes, n, words, k, &s);
  if (rc)
    return rc;
  rc = fy_gpu_topk_rows(s, 0, n, out);
  fy_gpu_topk_close(s);
  return rc;
}
