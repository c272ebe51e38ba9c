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
#include "core/testctl.h"
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
 * bound is Binomial(32 W, 3/4)). The test control FERRY_GPU_HAMMING_FILTER=0|1
 * forces the choice (tests run both kernels). */
static int use_filter(int words, int t) {
  long forced = 0;
  if (fy_tc_long(FY_TC_GPU_HAMMING_FILTER, &forced))
    return (int)forced;
  int m = 32 * words, r = words == 1 ? tile_shape<1>::R : tile_shape<4>::R;
  if (t >= m)
    return 0;
  double p = 0; /* P(Binomial(m, 3/4) <= t) */
  for (int k = 0; k <= t; k++)
    p += exp(lgamma(m + 1.0) - lgamma(k + 1.0) - lgamma(m - k + 1.0) + k * log(0.75) +
             (m - k) * log(0.25));
  return 1.0 - pow(1.0 - p, 32.0 * r) < 0.25;
}

/* A search held open on one device (hamming.h): device buffers, pinned
 * staging, the sink of the rows being searched. */
struct fy_gpu_pairs {
  fy_device_codes dc; /* the device, its stream, the codes */
  int words, t, filter;
  size_t n, cap;
  uint32_t *out;               /* device: cap triplets */
  unsigned long long *counter; /* device */
  unsigned long long *count_h; /* pinned */
  uint32_t *stage;             /* pinned: cap triplets */
  fy_gpu_pairs_sink sink;      /* of the rows call under way */
  void *user;
  fy_gpu_hamming_stats st;
};

static int launch(fy_gpu_pairs *s, uint32_t i0, uint32_t i1, uint32_t j0, uint32_t j1) {
  int b = s->words == 1 ? HT * tile_shape<1>::R : HT * tile_shape<4>::R;
  dim3 grid((unsigned)(((uint64_t)j1 - j0 + b - 1) / b),
            (unsigned)(((uint64_t)i1 - i0 + b - 1) / b));
  CU(cudaMemsetAsync(s->counter, 0, sizeof *s->counter, s->dc.stream), "clearing the counter");
#define FY_LAUNCH(W, F)                                                                            \
  pairs_kernel<W, F><<<grid, HT, 0, s->dc.stream>>>(s->dc.codes, i0, i1, j0, j1, s->t, s->out,     \
                                                    s->counter, s->cap)
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
  CU(cudaMemcpyAsync(s->count_h, s->counter, sizeof *s->count_h, cudaMemcpyDeviceToHost,
                     s->dc.stream),
     "reading the pair count");
  CU(cudaStreamSynchronize(s->dc.stream), "running the pair kernel");
  s->st.launches++;
  return FERRY_OK;
}

/* Hands the pairs of one range to the sink; re-runs it in halves when its
 * pairs do not fit in the device buffer. */
static int run_range(fy_gpu_pairs *s, uint32_t i0, uint32_t i1, uint32_t j0, uint32_t j1) {
  if (i0 >= i1 || j0 >= j1 || (uint64_t)j1 - 1 <= i0)
    return FERRY_OK;
  int rc = launch(s, i0, i1, j0, j1);
  if (rc)
    return rc;
  size_t found = (size_t)*s->count_h;
  if (found > s->cap) { /* overflow: the halves hold fewer pairs each */
    s->st.reruns++;
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
  CU(cudaMemcpyAsync(s->stage, s->out, found * 3 * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                     s->dc.stream),
     "copying pairs to the host");
  CU(cudaStreamSynchronize(s->dc.stream), "copying pairs to the host");
  static_assert(sizeof(ferry_pair) == 3 * sizeof(uint32_t), "ferry_pair is three uint32");
  return s->sink((const ferry_pair *)s->stage, found, s->user);
}

/* Rows [i, iend) of the upper triangle, in chunks of query rows of about
 * CHUNK_PAIRS pairs each (a launch long enough that the host's wait
 * between chunks is noise). */
static int run_rows(fy_gpu_pairs *s, size_t i, size_t iend) {
  const size_t b = s->words == 1 ? HT * tile_shape<1>::R : HT * tile_shape<4>::R;
  const size_t n = s->n;
  double chunk = CHUNK_PAIRS / (s->words == 1 ? 1 : 4);
  while (i < iend && i + 1 < n) {
    size_t rows = (size_t)(chunk / (double)(n - i));
    rows = (rows + b - 1) / b * b;
    if (rows < b)
      rows = b;
    if (rows > (size_t)60000 * b) /* grid.y limit */
      rows = (size_t)60000 * b;
    size_t end = i + rows < iend ? i + rows : iend;
    size_t before = s->st.reruns;
    int rc = run_range(s, (uint32_t)i, (uint32_t)end, (uint32_t)i, (uint32_t)n);
    if (rc)
      return rc;
    if (s->st.reruns > before && chunk > 2.0 * b * b) /* dense pairs: smaller chunks */
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

/* Frees what open made (device `s->dc.device` current). */
static void release(fy_gpu_pairs *s) {
  fy_device_codes_free(&s->dc); /* first: it waits for the stream */
  cudaFree(s->out);
  cudaFree(s->counter);
  cudaFreeHost(s->count_h);
  cudaFreeHost(s->stage);
  free(s);
}

extern "C" int fy_gpu_pairs_open(int device, const uint64_t *codes, size_t n, int words, int t,
                                 size_t buffer_pairs, fy_gpu_pairs **out) {
  int rc, prev = -1;
  fy_gpu_pairs *s = NULL;
  double t0;
  if (!out)
    return fy_error(FERRY_EINVAL, "fy_gpu_pairs_open: NULL argument");
  *out = NULL;
  if ((rc = fy_gpu_pairs_check(codes, n, words, t)) || (rc = fy_gpu_hamming_available(device)))
    return rc;
  if (!(s = (fy_gpu_pairs *)calloc(1, sizeof *s)))
    return fy_error(FERRY_ENOMEM, "GPU Hamming search: out of memory");
  s->dc.device = device;
  s->words = words;
  s->t = t;
  s->n = n;
  s->filter = use_filter(words, t);
  s->cap = buffer_pairs ? buffer_pairs : DEFAULT_BUFFER_PAIRS;
  s->st.buffer_pairs = s->cap;
  s->st.filter = s->filter;
  if ((rc = fy_device_enter(device, &prev, FY_CUDA_CONTEXT)))
    goto done;
  t0 = fy_now();
  if ((rc = fy_device_codes_upload(&s->dc, device, codes, n, words, FY_CUDA_CONTEXT)))
    goto done;
  CK(cudaMalloc((void **)&s->out, s->cap * 3 * sizeof(uint32_t)), "allocating the pair buffer");
  CK(cudaMalloc((void **)&s->counter, sizeof *s->counter), "allocating the counter");
  CK(cudaMallocHost((void **)&s->count_h, sizeof *s->count_h), "allocating pinned memory");
  CK(cudaMallocHost((void **)&s->stage, s->cap * 3 * sizeof(uint32_t)), "allocating pinned memory");
  s->st.upload_s = fy_now() - t0;
done:
  if (rc) {
    cudaSetDevice(device); /* the failure may have been the selection itself */
    release(s);
  } else {
    *out = s;
  }
  fy_device_leave(prev);
  return rc;
}

extern "C" int fy_gpu_pairs_rows(fy_gpu_pairs *s, size_t i0, size_t i1, fy_gpu_pairs_sink sink,
                                 void *user) {
  int prev = -1, rc;
  if (!s || !sink)
    return fy_error(FERRY_EINVAL, "fy_gpu_pairs_rows: NULL argument");
  if (i1 > s->n)
    i1 = s->n;
  if (i0 >= i1)
    return FERRY_OK;
  if ((rc = fy_device_enter(s->dc.device, &prev, FY_CUDA_CONTEXT))) {
    fy_device_leave(prev);
    return rc;
  }
  s->sink = sink;
  s->user = user;
  double t0 = fy_now();
  rc = run_rows(s, i0, i1);
  s->st.search_s += fy_now() - t0;
  fy_device_leave(prev);
  return rc;
}

extern "C" void fy_gpu_pairs_close(fy_gpu_pairs *s, fy_gpu_hamming_stats *stats) {
  if (!s)
    return;
  if (stats) {
    stats->upload_s = s->st.upload_s;
    stats->search_s += s->st.search_s;
    stats->launches += s->st.launches;
    stats->reruns += s->st.reruns;
    stats->buffer_pairs = s->st.buffer_pairs;
    stats->filter = s->st.filter;
  }
  int prev = -1;
  fy_device_enter(s->dc.device, &prev, NULL); /* quietly: the last error may be the search's */
  release(s);
  fy_device_leave(prev);
}

/* The pairs gathered on the host by fy_gpu_hamming_pairs. */
typedef struct gathered {
  ferry_pair *p;
  size_t n, cap, max_pairs;
  int t;
} gathered;

static int gather(const ferry_pair *pairs, size_t found, void *user) {
  gathered *g = (gathered *)user;
  if (g->max_pairs && g->n + found > g->max_pairs)
    return fy_error(FERRY_ETOO_LARGE, "search: more than %zu pairs within distance %d",
                    g->max_pairs, g->t);
  if (g->n + found > g->cap) {
    size_t cap = g->cap ? g->cap : 1024;
    while (cap < g->n + found)
      cap *= 2;
    ferry_pair *p = (ferry_pair *)realloc(g->p, cap * sizeof *p);
    if (!p)
      return fy_error(FERRY_ENOMEM, "search: out of memory for %zu pairs", g->n + found);
    g->p = p;
    g->cap = cap;
  }
  memcpy(g->p + g->n, pairs, found * sizeof *pairs);
  g->n += found;
  return FERRY_OK;
}

/* The caller's sink of fy_gpu_hamming_pairs_each, which cannot stop. */
typedef struct handed {
  void (*sink)(const ferry_pair *, size_t, void *);
  void *user;
} handed;

static int hand_on(const ferry_pair *pairs, size_t found, void *user) {
  handed *h = (handed *)user;
  h->sink(pairs, found, h->user);
  return FERRY_OK;
}

/* Both entry points: the whole triangle on one device, to sink. */
static int search_pairs(int device, const uint64_t *codes, size_t n, int words, int t,
                        size_t buffer_pairs, fy_gpu_pairs_sink sink, void *user,
                        fy_gpu_hamming_stats *stats) {
  fy_gpu_pairs *s = NULL;
  int rc = fy_gpu_pairs_open(device, codes, n, words, t, buffer_pairs, &s);
  if (rc)
    return rc;
  rc = fy_gpu_pairs_rows(s, 0, n, sink, user);
  fy_gpu_pairs_close(s, stats);
  return rc;
}

/* The checks of fy_gpu_pairs_open, and the device's, before n < 2 returns
 * early with nothing (as the search always did). */
static int check_search(int device, const uint64_t *codes, size_t n, int words, int t) {
  int rc = fy_gpu_pairs_check(codes, n, words, t);
  return rc ? rc : fy_gpu_hamming_available(device);
}

extern "C" int fy_gpu_hamming_pairs(int device, const uint64_t *codes, size_t n, int words, int t,
                                    size_t max_pairs, size_t buffer_pairs, ferry_pair **pairs,
                                    size_t *count, fy_gpu_hamming_stats *stats) {
  if (stats)
    memset(stats, 0, sizeof *stats);
  if (!pairs || !count)
    return fy_error(FERRY_EINVAL, "fy_gpu_hamming_pairs: NULL argument");
  *pairs = NULL;
  *count = 0;
  int rc = check_search(device, codes, n, words, t);
  if (rc || n < 2)
    return rc;
  gathered g = {NULL, 0, 0, max_pairs, t};
  rc = search_pairs(device, codes, n, words, t, buffer_pairs, gather, &g, stats);
  if (rc) {
    free(g.p);
    return rc;
  }
  if (g.p)
    qsort(g.p, g.n, sizeof *g.p, cmp_pair);
  *pairs = g.p;
  *count = g.n;
  return FERRY_OK;
}

extern "C" int fy_gpu_hamming_pairs_each(int device, const uint64_t *codes, size_t n, int words,
                                         int t, size_t buffer_pairs,
                                         void (*sink)(const ferry_pair *, size_t, void *),
                                         void *user, fy_gpu_hamming_stats *stats) {
  if (stats)
    memset(stats, 0, sizeof *stats);
  if (!sink)
    return fy_error(FERRY_EINVAL, "fy_gpu_hamming_pairs_each: NULL sink");
  int rc = check_search(device, codes, n, words, t);
  if (rc || n < 2)
    return rc;
  handed h = {sink, user};
  return search_pairs(device, codes, n, words, t, buffer_pairs, hand_on, &h, stats);
}
