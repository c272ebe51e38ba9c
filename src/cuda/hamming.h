/* hamming.h — all-pairs Hamming search on a CUDA GPU, seen from the C side
 * (src/search/pairs.c, tests, benchmarks). Implemented in hamming.cu (with
 * CUDA) or hamming_stub.c (without: FERRY_EUNSUPPORTED "built without
 * CUDA").
 *
 * The codes are uploaded once; the upper triangle of the pair matrix is cut
 * into chunks of query rows, each run as one kernel grid of square tiles
 * (2048 x 2048 pairs for 64-bit codes, 1024 x 1024 for 256-bit): every
 * thread keeps R query codes in registers while the tile's targets stream
 * past them from shared memory, with hardware popcount (for small
 * thresholds a lower bound with half the popcounts is tested first, the
 * exact distance only where it passes). Pairs within the
 * threshold are compacted on the device (one atomic counter, a bounded
 * output buffer) and copied to the host after each chunk. The counter keeps
 * counting past the buffer's end, so a chunk that found more pairs than the
 * buffer holds is known exactly and re-run in halves (rows, then columns,
 * down to a single pair if need be): no pair is ever lost and device memory
 * stays bounded however many pairs there are. */
#ifndef FY_CUDA_HAMMING_H
#define FY_CUDA_HAMMING_H

#include "core/internal.h"

/* What a search did (for benchmarks and tests). */
typedef struct fy_gpu_hamming_stats {
  double upload_s;     /* codes to the device */
  double search_s;     /* kernels + result copies */
  size_t launches;     /* kernel grids run */
  size_t reruns;       /* chunks re-run in halves because the buffer overflowed */
  size_t buffer_pairs; /* capacity of the device output buffer */
  int filter;          /* 1: the kernel tested a cheap lower bound first */
} fy_gpu_hamming_stats;

/* Every pair (i < j) of the n codes (words = 1 or 4 uint64 per code)
 * within distance t, on CUDA device `device`. *pairs (free()) is sorted by
 * (i, j), exactly as ferry_hamming_pairs returns them. buffer_pairs bounds
 * the device output buffer (0: default, 4M pairs, 48 MB); max_pairs != 0
 * fails with FERRY_ETOO_LARGE past that many pairs. stats may be NULL.
 * Errors: FERRY_EINVAL, FERRY_ENOMEM, FERRY_ETOO_LARGE, FERRY_EIO (CUDA),
 * FERRY_EUNSUPPORTED (no CUDA / no such device). */
int fy_gpu_hamming_pairs(int device, const uint64_t *codes, size_t n, int words, int t,
                         size_t max_pairs, size_t buffer_pairs, ferry_pair **pairs, size_t *count,
                         fy_gpu_hamming_stats *stats);
/* The same search with the pairs handed to sink(pairs, n, user), from this
 * thread, as each chunk of the search finds them (in no order), so that
 * they are never all in memory at once (a clique of k close codes is
 * k(k-1)/2 pairs). */
int fy_gpu_hamming_pairs_each(int device, const uint64_t *codes, size_t n, int words, int t,
                              size_t buffer_pairs,
                              void (*sink)(const ferry_pair *pairs, size_t n, void *user),
                              void *user, fy_gpu_hamming_stats *stats);

/* The k nearest other codes of every code (k = 1..32, else
 * FERRY_EUNSUPPORTED) into out[n * k], nearest first, ties to the lower
 * index, padded with UINT32_MAX: what ferry_hamming_topk returns. One
 * thread per query scans every code (n^2 distances). */
int fy_gpu_hamming_topk(int device, const uint64_t *codes, size_t n, int words, int k,
                        ferry_neighbor *out);

/* Whether device `device` can run the search; FERRY_OK or the reason as a
 * ferry error (ferry_last_error()). */
int fy_gpu_hamming_available(int device);

#endif
