/* hamming.cu — all-pairs Hamming search within a threshold on the GPU
 * (64- and 256-bit codes). See hamming.h for the design; in short:
 *
 *  - a kernel grid covers a range of query rows [i0, i1) x target columns
 *    [j0, j1) with square tiles (BQ = BT = 256 threads x R codes); tiles
 *    entirely below the diagonal return at once;
 *  - a block loads its BT targets into shared memory; each thread keeps R
 *    queries in registers and runs every target past them (a broadcast
 *    shared load per target, W XORs and __popcll per pair, a running
 *    minimum); only when the minimum of a target's R distances is within
 *    the threshold does the warp take the (rare) branch that emits pairs;
 *  - pairs are compacted with one atomic counter into a bounded buffer; the
 *    counter counts on past the end, so overflow is detected exactly and the
 *    range re-run in halves; nothing is lost.
 *
 * CUDA errors become ferry status codes through fy_error (as in gpu.cu). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cuda/hamming.h"
}
#define FY_CUDA_CONTEXT "CUDA Hamming search"
#include "cuda/cuda_check.h"

#define HT 256                                 /* threads per block */
#define DEFAULT_BUFFER_PAIRS ((size_t)4 << 20) /* 4M pairs: 48 MB */
#define CHUNK_PAIRS ((double)(1ull << 37))     /* pairs per top-level launch */

/* Query rows per block for W-word codes: R codes per thread. */
template <int W> struct tile_shape;
template <> struct tile_shape<1> { static constexpr int R = 8; };
template <> struct tile_shape<4> { static constexpr int R = 4; };

/* Distance of query r to target b, exactly. */
template <int W>
__device__ __forceinline__ int distance(const uint64_t (&q)[W], const uint64_t (&b)[W]) {
  int s = 0;
#pragma unroll
  for (int w = 0; w < W; w++)
    s += __popcll(q[w] ^ b[w]);
  return s;
}

/* A lower bound of the distance with half the popcounts: for each word x of
 * q ^ b, popc(low half | high half) <= popc(x). One 32-bit POPC per word
 * instead of two; a pair whose bound is over the threshold is not a pair. */
template <int W>
__device__ __forceinline__ int bound(const uint64_t (&q)[W], const uint64_t (&b)[W]) {
  int s = 0;
#pragma unroll
  for (int w = 0; w < W; w++) {
    /* (qh ^ bh) | (ql ^ bl) in two LOP3s: written out, because the
     * compiler would keep both XORs for the exact distance instead */
    const uint32_t lo = (uint32_t)q[w] ^ (uint32_t)b[w];
    uint32_t x;
#ifdef __CUDA_ARCH__
    asm("lop3.b32 %0, %1, %2, %3, 0xBE;" /* 0xBE: (a ^ b) | c */
        : "=r"(x)
        : "r"((uint32_t)(q[w] >> 32)), "r"((uint32_t)(b[w] >> 32)), "r"(lo));
#else
    x = ((uint32_t)(q[w] >> 32) ^ (uint32_t)(b[w] >> 32)) | lo;
#endif
    s += __popc(x);
  }
  return s;
}

/* Pairs (i, j), i in [i0, i1), j in [j0, j1), i < j, distance <= t, as
 * (i, j, distance) uint32 triplets at out[3 * slot] for slot < cap; *counter
 * counts every pair found, also those past cap. FILTER: test the lower
 * bound first (twice the pairs per popcount; chosen when the bound rarely
 * passes, i.e. small thresholds), else the exact distance. */
template <int W, bool FILTER>
__global__ void __launch_bounds__(HT)
    pairs_kernel(const uint64_t *__restrict__ codes, uint32_t i0, uint32_t i1, uint32_t j0,
                 uint32_t j1, int t, uint32_t *__restrict__ out,
                 unsigned long long *__restrict__ counter, unsigned long long cap) {
  constexpr int R = tile_shape<W>::R;
  constexpr int B = HT * R; /* BQ = BT */
  __shared__ uint64_t tgt[B * W];
  const uint64_t qi = (uint64_t)i0 + (uint64_t)blockIdx.y * B; /* first row */
  const uint64_t tj = (uint64_t)j0 + (uint64_t)blockIdx.x * B; /* first column */
  if (qi >= i1 || tj >= j1)
    return;
  const uint64_t jend = tj + B < j1 ? tj + B : j1;
  if (jend - 1 <= qi) /* every j <= every i: below the diagonal */
    return;
  const int nt = (int)(jend - tj);
  const int tid = threadIdx.x;

  for (int k = tid; k < nt * W; k += HT)
    tgt[k] = codes[tj * W + k];

  uint64_t q[R][W];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const uint64_t i = qi + tid + (uint64_t)HT * r;
#pragma unroll
    for (int w = 0; w < W; w++)
      q[r][w] = i < i1 ? codes[i * W + w] : 0; /* rows past i1: never emitted */
  }
  __syncthreads();

#pragma unroll 2
  for (int k = 0; k < nt; k++) {
    uint64_t b[W];
#pragma unroll
    for (int w = 0; w < W; w++)
      b[w] = tgt[k * W + w];
    int mn = 1 << 20;
#pragma unroll
    for (int r = 0; r < R; r++)
      mn = min(mn, FILTER ? bound<W>(q[r], b) : distance<W>(q[r], b));
    if (mn <= t) { /* rare for real thresholds: the whole branch is the slow path */
      const uint64_t j = tj + k;
#pragma unroll
      for (int r = 0; r < R; r++) {
        const uint64_t i = qi + tid + (uint64_t)HT * r;
        const int d = distance<W>(q[r], b);
        if (d <= t && i < i1 && i < j) {
          unsigned long long slot = atomicAdd(counter, 1ull);
          if (slot < cap) {
            out[3 * slot] = (uint32_t)i;
            out[3 * slot + 1] = (uint32_t)j;
            out[3 * slot + 2] = (uint32_t)d;
          }
        }
      }
    }
  }
}

/* Whether the lower bound pays: the chance that it passes for one of a
 * warp's 32 * R pairs of a target is small for uniformly spread codes (each
 * bound is Binomial(32 W, 3/4)). FERRY_GPU_HAMMING_FILTER=0|1 forces the
 * choice (tests run both kernels). */
static int use_filter(int words, int t) {
  const char *e = getenv("FERRY_GPU_HAMMING_FILTER");
  if (e && (e[0] == '0' || e[0] == '1'))
    return e[0] == '1';
  int m = 32 * words, r = words == 1 ? tile_shape<1>::R : tile_shape<4>::R;
  if (t >= m)
    return 0;
  double p = 0; /* P(Binomial(m, 3/4) <= t) */
  for (int k = 0; k <= t; k++)
    p += exp(lgamma(m + 1.0) - lgamma(k + 1.0) - lgamma(m - k + 1.0) + k * log(0.75) +
             (m - k) * log(0.25));
  return 1.0 - pow(1.0 - p, 32.0 * r) < 0.25;
}

/* One search: device buffers, pinned staging, the pairs gathered so far. */
typedef struct search {
  int words, t, filter;
  const uint64_t *codes;       /* device */
  uint32_t *out;               /* device: cap triplets */
  unsigned long long *counter; /* device */
  unsigned long long *count_h; /* pinned */
  uint32_t *stage;             /* pinned: cap triplets */
  size_t cap, max_pairs;
  cudaStream_t stream;
  ferry_pair *pairs; /* host, grown as chunks finish (no sink) */
  size_t npairs, pairs_cap;
  void (*sink)(const ferry_pair *, size_t, void *); /* else: each chunk's pairs to it */
  void *user;
  fy_gpu_hamming_stats *st;
} search;

static int launch(search *s, uint32_t i0, uint32_t i1, uint32_t j0, uint32_t j1) {
  int b = s->words == 1 ? HT * tile_shape<1>::R : HT * tile_shape<4>::R;
  dim3 grid((unsigned)(((uint64_t)j1 - j0 + b - 1) / b),
            (unsigned)(((uint64_t)i1 - i0 + b - 1) / b));
  CU(cudaMemsetAsync(s->counter, 0, sizeof *s->counter, s->stream), "clearing the counter");
#define FY_LAUNCH(W, F)                                                                            \
  pairs_kernel<W, F>                                                                               \
      <<<grid, HT, 0, s->stream>>>(s->codes, i0, i1, j0, j1, s->t, s->out, s->counter, s->cap)
  if (s->words == 1 && s->filter)
    FY_LAUNCH(1, true);
  else if (s->words == 1)
    FY_LAUNCH(1, false);
  else if (s->filter)
    FY_LAUNCH(4, true);
  else
    FY_LAUNCH(4, false);
#undef FY_LAUNCH
  CU(cudaGetLastError(), "launching the pair kernel");
  CU(cudaMemcpyAsync(s->count_h, s->counter, sizeof *s->count_h, cudaMemcpyDeviceToHost, s->stream),
     "reading the pair count");
  CU(cudaStreamSynchronize(s->stream), "running the pair kernel");
  s->st->launches++;
  return FERRY_OK;
}

/* Appends the pairs of one range to s->pairs; re-runs it in halves when
 * its pairs do not fit in the device buffer. */
static int run_range(search *s, uint32_t i0, uint32_t i1, uint32_t j0, uint32_t j1) {
  if (i0 >= i1 || j0 >= j1 || (uint64_t)j1 - 1 <= i0)
    return FERRY_OK;
  int rc = launch(s, i0, i1, j0, j1);
  if (rc)
    return rc;
  size_t found = (size_t)*s->count_h;
  if (found > s->cap) { /* overflow: the halves hold fewer pairs each */
    s->st->reruns++;
    if (i1 - i0 > 1) {
      uint32_t mid = i0 + (i1 - i0) / 2;
      rc = run_range(s, i0, mid, j0, j1);
      return rc ? rc : run_range(s, mid, i1, j0, j1);
    }
    uint32_t mid = j0 + (j1 - j0) / 2; /* one row: j1 - j0 > 1 since found > cap >= 1 */
    rc = run_range(s, i0, i1, j0, mid);
    return rc ? rc : run_range(s, i0, i1, mid, j1);
  }
  if (!found)
    return FERRY_OK;
  if (s->max_pairs && s->npairs + found > s->max_pairs)
    return fy_error(FERRY_ETOO_LARGE, "search: more than %zu pairs within distance %d",
                    s->max_pairs, s->t);
  CU(cudaMemcpyAsync(s->stage, s->out, found * 3 * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                     s->stream),
     "copying pairs to the host");
  CU(cudaStreamSynchronize(s->stream), "copying pairs to the host");
  static_assert(sizeof(ferry_pair) == 3 * sizeof(uint32_t), "ferry_pair is three uint32");
  if (s->sink) {
    s->sink((const ferry_pair *)s->stage, found, s->user);
    s->npairs += found;
    return FERRY_OK;
  }
  if (s->npairs + found > s->pairs_cap) {
    size_t cap = s->pairs_cap ? s->pairs_cap : 1024;
    while (cap < s->npairs + found)
      cap *= 2;
    ferry_pair *p = (ferry_pair *)realloc(s->pairs, cap * sizeof *p);
    if (!p)
      return fy_error(FERRY_ENOMEM, "search: out of memory for %zu pairs", s->npairs + found);
    s->pairs = p;
    s->pairs_cap = cap;
  }
  memcpy(s->pairs + s->npairs, s->stage, found * sizeof(ferry_pair));
  s->npairs += found;
  return FERRY_OK;
}

/* The whole upper triangle, in chunks of query rows of about CHUNK_PAIRS
 * pairs each (a launch long enough that the host's wait between chunks is
 * noise). */
static int run_all(search *s, size_t n) {
  const size_t b = s->words == 1 ? HT * tile_shape<1>::R : HT * tile_shape<4>::R;
  double chunk = CHUNK_PAIRS / (s->words == 1 ? 1 : 4);
  size_t i = 0;
  while (i + 1 < n) {
    size_t rows = (size_t)(chunk / (double)(n - i));
    rows = (rows + b - 1) / b * b;
    if (rows < b)
      rows = b;
    if (rows > (size_t)60000 * b) /* grid.y limit */
      rows = (size_t)60000 * b;
    size_t end = i + rows < n ? i + rows : n;
    size_t before = s->st->reruns;
    int rc = run_range(s, (uint32_t)i, (uint32_t)end, (uint32_t)i, (uint32_t)n);
    if (rc)
      return rc;
    if (s->st->reruns > before && chunk > 2.0 * b * b) /* dense pairs: smaller chunks */
      chunk /= 2;
    i = end;
  }
  return FERRY_OK;
}

static int cmp_pair(const void *a, const void *b) {
  const ferry_pair *x = (const ferry_pair *)a, *y = (const ferry_pair *)b;
  if (x->i != y->i)
    return x->i < y->i ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

extern "C" int fy_gpu_hamming_available(int device) { return fy_cuda_device_check(device); }

/* Both entry points: the pairs into *pairs (sorted) or to sink. */
static int search_pairs(int device, const uint64_t *codes, size_t n, int words, int t,
                        size_t max_pairs, size_t buffer_pairs,
                        void (*sink)(const ferry_pair *, size_t, void *), void *user,
                        ferry_pair **pairs, size_t *count, fy_gpu_hamming_stats *stats) {
  fy_gpu_hamming_stats dummy;
  search s;
  int rc, prev = -1;
  double t0;
  uint64_t *codes_d = NULL;
  size_t bytes = 0;
  if (!stats)
    stats = &dummy;
  memset(stats, 0, sizeof *stats);
  if ((!sink && (!pairs || !count)) || (!codes && n))
    return fy_error(FERRY_EINVAL, "fy_gpu_hamming_pairs: NULL argument");
  if (pairs)
    *pairs = NULL;
  if (count)
    *count = 0;
  if (words != 1 && words != 4)
    return fy_error(FERRY_EINVAL, "GPU Hamming search: words must be 1 or 4, not %d", words);
  if (n >= UINT32_MAX)
    return fy_error(FERRY_ETOO_LARGE, "GPU Hamming search: %zu codes (at most 2^32 - 2)", n);
  if (t < 0 || t > 64 * words)
    return fy_error(FERRY_EINVAL, "GPU Hamming search: threshold %d not in 0..%d", t, 64 * words);
  if ((rc = fy_gpu_hamming_available(device)))
    return rc;
  if (n < 2)
    return FERRY_OK;

  memset(&s, 0, sizeof s);
  s.words = words;
  s.t = t;
  s.filter = use_filter(words, t);
  s.max_pairs = max_pairs;
  s.sink = sink;
  s.user = user;
  s.cap = buffer_pairs ? buffer_pairs : DEFAULT_BUFFER_PAIRS;
  s.st = stats;
  stats->buffer_pairs = s.cap;
  stats->filter = s.filter;
  bytes = n * (size_t)words * sizeof(uint64_t);
  cudaGetDevice(&prev);

  CK(cudaSetDevice(device), "selecting the device");
  CK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "creating a stream");
  t0 = fy_now();
  CK(cudaMalloc((void **)&codes_d, bytes), "allocating the codes");
  CK(cudaMalloc((void **)&s.out, s.cap * 3 * sizeof(uint32_t)), "allocating the pair buffer");
  CK(cudaMalloc((void **)&s.counter, sizeof *s.counter), "allocating the counter");
  CK(cudaMallocHost((void **)&s.count_h, sizeof *s.count_h), "allocating pinned memory");
  CK(cudaMallocHost((void **)&s.stage, s.cap * 3 * sizeof(uint32_t)), "allocating pinned memory");
  CK(cudaMemcpyAsync(codes_d, codes, bytes, cudaMemcpyHostToDevice, s.stream),
     "uploading the codes");
  CK(cudaStreamSynchronize(s.stream), "uploading the codes");
  s.codes = codes_d;
  stats->upload_s = fy_now() - t0;
  t0 = fy_now();
  rc = run_all(&s, n);
  stats->search_s = fy_now() - t0;
  if (rc == FERRY_OK && s.pairs)
    qsort(s.pairs, s.npairs, sizeof *s.pairs, cmp_pair);
done:
  if (s.stream)
    cudaStreamSynchronize(s.stream); /* nothing in flight before the frees */
  cudaFree(codes_d);
  cudaFree(s.out);
  cudaFree(s.counter);
  cudaFreeHost(s.count_h);
  cudaFreeHost(s.stage);
  if (s.stream)
    cudaStreamDestroy(s.stream);
  if (prev >= 0)
    cudaSetDevice(prev);
  if (rc) {
    free(s.pairs);
    return rc;
  }
  if (pairs)
    *pairs = s.pairs;
  if (count)
    *count = s.npairs;
  return FERRY_OK;
}

extern "C" int fy_gpu_hamming_pairs(int device, const uint64_t *codes, size_t n, int words, int t,
                                    size_t max_pairs, size_t buffer_pairs, ferry_pair **pairs,
                                    size_t *count, fy_gpu_hamming_stats *stats) {
  return search_pairs(device, codes, n, words, t, max_pairs, buffer_pairs, NULL, NULL, pairs,
                      count, stats);
}

extern "C" int fy_gpu_hamming_pairs_each(int device, const uint64_t *codes, size_t n, int words,
                                         int t, size_t buffer_pairs,
                                         void (*sink)(const ferry_pair *, size_t, void *),
                                         void *user, fy_gpu_hamming_stats *stats) {
  if (!sink)
    return fy_error(FERRY_EINVAL, "fy_gpu_hamming_pairs_each: NULL sink");
  return search_pairs(device, codes, n, words, t, 0, buffer_pairs, sink, user, NULL, NULL, stats);
}
