/* hamming_topk.cu — the k nearest other codes of every code on the GPU
 * (k <= 32; 64- and 256-bit codes), the same neighbours in the same order
 * as ferry_hamming_topk on the CPU.
 *
 * One thread per query keeps its k best as sorted 64-bit keys (distance <<
 * 32 | index: smaller is better, ties go to the lower index) while every
 * target streams past through shared memory; a target enters only when its
 * key beats the current k-th, which is rare once the list is full. Queries
 * run in chunks whose results (8 bytes x k each) fit a bounded buffer. */
#include <cuda_runtime.h>
#include <stdint.h>
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

extern "C" int fy_gpu_hamming_topk_rows(int device, const uint64_t *codes, size_t n, int words,
                                        int k, size_t q0, size_t q1, ferry_neighbor *out,
                                        const int *stop) {
  int rc, prev = -1;
  uint64_t *codes_d = NULL;
  uint32_t *out_d = NULL;
  cudaStream_t stream = NULL;
  size_t chunk = 0;
  if (!out || (!codes && n))
    return fy_error(FERRY_EINVAL, "fy_gpu_hamming_topk: NULL argument");
  if (words != 1 && words != 4)
    return fy_error(FERRY_EINVAL, "GPU Hamming top-k: words must be 1 or 4, not %d", words);
  if (k < 1 || k > TK_MAX_K)
    return fy_error(FERRY_EUNSUPPORTED, "GPU Hamming top-k: k must be 1..%d, not %d", TK_MAX_K, k);
  if (n >= UINT32_MAX)
    return fy_error(FERRY_ETOO_LARGE, "GPU Hamming top-k: %zu codes (at most 2^32 - 2)", n);
  if (q0 > q1 || q1 > n)
    return fy_error(FERRY_EINVAL, "GPU Hamming top-k: queries %zu..%zu of %zu codes", q0, q1, n);
  if ((rc = fy_gpu_hamming_available(device)))
    return rc;
  if (q0 == q1)
    return FERRY_OK;
  static_assert(sizeof(ferry_neighbor) == 2 * sizeof(uint32_t), "ferry_neighbor is two uint32");
  chunk = TK_CHUNK_BYTES / ((size_t)k * sizeof(ferry_neighbor));
  chunk = chunk / TK_THREADS * TK_THREADS;
  if (chunk > q1 - q0)
    chunk = q1 - q0;
  cudaGetDevice(&prev);

  CK(cudaSetDevice(device), "selecting the device");
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  CK(cudaMalloc((void **)&codes_d, n * (size_t)words * sizeof(uint64_t)), "allocating the codes");
  CK(cudaMalloc((void **)&out_d, chunk * k * sizeof(ferry_neighbor)), "allocating the results");
  CK(cudaMemcpyAsync(codes_d, codes, n * (size_t)words * sizeof(uint64_t), cudaMemcpyHostToDevice,
                     stream),
     "uploading the codes");
  for (size_t a = q0; a < q1 && !(stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE)); a += chunk) {
    const size_t b = a + chunk < q1 ? a + chunk : q1;
    const unsigned blocks = (unsigned)((b - a + TK_THREADS - 1) / TK_THREADS);
    if (words == 1)
      topk_kernel<1><<<blocks, TK_THREADS, 0, stream>>>(codes_d, (uint32_t)n, (uint32_t)a,
                                                        (uint32_t)b, k, out_d);
    else
      topk_kernel<4><<<blocks, TK_THREADS, 0, stream>>>(codes_d, (uint32_t)n, (uint32_t)a,
                                                        (uint32_t)b, k, out_d);
    CK(cudaGetLastError(), "launching the top-k kernel");
    CK(cudaMemcpyAsync(out + a * k, out_d, (b - a) * k * sizeof(ferry_neighbor),
                       cudaMemcpyDeviceToHost, stream),
       "copying neighbours to the host");
    CK(cudaStreamSynchronize(stream), "running the top-k kernel");
  }
done:
  if (stream) {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  cudaFree(codes_d);
  cudaFree(out_d);
  if (prev >= 0)
    cudaSetDevice(prev);
  return rc;
}

extern "C" int fy_gpu_hamming_topk(int device, const uint64_t *codes, size_t n, int words, int k,
                                   ferry_neighbor *out) {
  return fy_gpu_hamming_topk_rows(device, codes, n, words, k, 0, n, out, NULL);
}
