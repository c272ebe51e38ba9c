/* search.h — internal interface of the Hamming search (src/search).
 *
 * Codes are 64-bit (words = 1) or 256-bit (words = 4). Brute force runs
 * tiles of the upper triangle of the n x n pair matrix on every core; each
 * tile streams a block of targets (kept in L1/L2) past the queries, with
 * the popcount kernel chosen at run time (AVX-512 VPOPCNTDQ, AVX2 nibble
 * lookup, POPCNT, or portable). 256-bit codes are read from a word-planar
 * copy (word 0 of every code, then word 1, ...) so that one vector holds
 * the same word of eight codes. Multi-index hashing (mih.c) finds the same
 * pairs without looking at most of them when n is large and the threshold
 * small; plan.c chooses. */
#ifndef FY_SEARCH_H
#define FY_SEARCH_H

#include "core/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Union-find's root of x, halving the path on the way. */
static inline uint32_t fy_uf_find(uint32_t *parent, uint32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

/* qsort order of pairs: by i, then j. */
int fy_pair_cmp(const void *a, const void *b);

/* Where a streamed search hands its pairs: from the worker threads, a
 * batch at a time, concurrently (the sink locks what it shares). */
typedef void (*fy_pair_sink)(const ferry_pair *pairs, size_t n, void *user);

#define FY_PAIRBUF_FLUSH 65536 /* a streamed buffer hands its pairs on at this size */

/* A growable list of pairs (one per thread); with a sink, a bounded one
 * that hands its pairs on when full. */
typedef struct fy_pairbuf {
  ferry_pair *p;
  size_t n, cap;
  int oom; /* an allocation failed: the search fails with FERRY_ENOMEM */
  fy_pair_sink sink;
  void *user;
} fy_pairbuf;

static inline void fy_pairbuf_push(fy_pairbuf *b, uint32_t i, uint32_t j, uint32_t d) {
  if (b->n == b->cap && b->sink && b->cap >= FY_PAIRBUF_FLUSH) {
    b->sink(b->p, b->n, b->user);
    b->n = 0;
  }
  if (b->n == b->cap) {
    ferry_pair *p = fy_grow(b->p, &b->cap, b->n + 1, sizeof *p, 1024);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
  }
  b->p[b->n++] = (ferry_pair){i, j, d};
}

/* The codes as the kernels read them. */
typedef struct fy_codes {
  const uint64_t *aos;   /* code i at aos[i * words] (the caller's array) */
  const uint64_t *plane; /* words = 4: word w of code i at plane[w * n + i] */
  size_t n;
  int words;
} fy_codes;

/* Kernels of one instruction set. */
/* After a worker added out->n - before pairs: 1 when the whole search must
 * stop (an allocation failed, or the pairs of all workers, counted in
 * *total, passed max_pairs when that is not 0). */
static inline int fy_pairs_over(const fy_pairbuf *out, size_t before, atomic_size_t *total,
                                size_t max_pairs) {
  if (out->oom)
    return 1;
  size_t added = out->n - before;
  return max_pairs && added && atomic_fetch_add(total, added) + added > max_pairs;
}

typedef struct fy_kernels {
  const char *name;
  /* Every pair (i, j), i in [i0, i1), j in [j0, j1), i < j, with distance
   * <= t, appended to out. */
  void (*tile)(const fy_codes *c, size_t i0, size_t i1, size_t j0, size_t j1, int t,
               fy_pairbuf *out);
  /* Distances of code q to codes [j0, j1) into d[0 .. j1 - j0). */
  void (*dist)(const fy_codes *c, const uint64_t *q, size_t j0, size_t j1, uint16_t *d);
  /* Which of codes [j0, j1) are nearer to q than `limit` (distance <
   * limit): bit (t - j0) % 64 of mask[(t - j0) / 64], the mask's
   * (j1 - j0 + 63) / 64 words written whole. NULL: the caller uses dist. */
  void (*below)(const fy_codes *c, const uint64_t *q, size_t j0, size_t j1, uint32_t limit,
                uint64_t *mask);
} fy_kernels;

extern const fy_kernels fy_kernels_scalar, fy_kernels_popcnt, fy_kernels_avx2, fy_kernels_avx512;

/* The fastest kernels this CPU runs (FERRY_ISA=scalar|popcnt|avx2|avx512
 * in the environment forces a slower one, for tests and benchmarks). */
const fy_kernels *fy_search_kernels(void);
/* The kernels of a named ISA if this CPU has it, else NULL. */
const fy_kernels *fy_search_kernels_named(const char *name);

/* Distance of two codes. */
static inline int fy_code_distance(const uint64_t *a, const uint64_t *b, int words) {
  int d = 0;
  for (int w = 0; w < words; w++)
    d += __builtin_popcountll(a[w] ^ b[w]);
  return d;
}

/* Runs fn(arg, thread index) on `threads` threads (the caller's thread is
 * one of them). FERRY_OK or FERRY_ENOMEM if threads could not start (then
 * the work runs on fewer). */
int fy_parallel(int threads, void (*fn)(void *arg, int index), void *arg);
/* Threads to use for an option value (0 = all cores). */
int fy_search_threads(int option);

/* Word-planar copy of 256-bit codes (NULL plane for 64-bit ones). */
int fy_codes_init(fy_codes *c, const uint64_t *codes, size_t n, int words);
void fy_codes_free(fy_codes *c);

/* Brute force over all pairs; multi-index hashing. Both append to
 * per-thread buffers that the caller merges. */
int fy_pairs_brute(const fy_codes *c, int t, int threads, size_t max_pairs, fy_pairbuf *bufs);

/* ferry_hamming_pairs streamed: every pair handed to sink (from several
 * threads at once, in no order) instead of listed, so memory stays
 * bounded however many pairs there are; options->max_pairs is ignored. On
 * a GPU (CUDA, a list of CUDA devices, or OpenCL) each chunk's pairs are
 * handed on as the chunk finishes (one sink call at a time). */
int fy_hamming_pairs_each(const uint64_t *codes, size_t n, int words,
                          const ferry_search_options *options, fy_pair_sink sink, void *user);

typedef struct fy_mih fy_mih;
/* Builds the tables for m substrings (FERRY_ENOMEM, FERRY_EINVAL). */
int fy_mih_build(const fy_codes *c, int m, fy_mih **out);
void fy_mih_free(fy_mih *h);
/* The number of substrings that minimises the expected work for n codes
 * of `bits` bits at threshold t, and that work in nanoseconds (assuming
 * uniformly spread codes); 0 when multi-index hashing does not apply. */
int fy_mih_choose(size_t n, int bits, int t, double *cost_ns);
/* Buckets one query probes for a search within r. */
double fy_mih_probes(const fy_mih *h, int r);
/* Average buckets probed and candidates met per query, measured on a
 * sample of `samples` queries. */
void fy_mih_sample(const fy_mih *h, int t, size_t samples, double *probes, double *cands);
int fy_mih_pairs(const fy_mih *h, int t, int threads, size_t max_pairs, fy_pairbuf *bufs);
/* Codes within distance `radius` of code q (not q itself), as (index,
 * distance) appended to out (i = q). */
void fy_mih_query(const fy_mih *h, size_t q, int radius, fy_pairbuf *out);

/* Estimated cost in ns of brute force over all pairs with these kernels. */
double fy_brute_cost_ns(const fy_kernels *k, size_t n, int words, int threads);

#endif
