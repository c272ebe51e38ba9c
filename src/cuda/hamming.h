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
 * stays bounded however many pairs there are. Over several devices
 * (hamming_multi.c), each holds such a search open (fy_gpu_pairs_*, top-k:
 * fy_gpu_topk_*) and its host thread takes chunks of rows (query blocks)
 * until none is left (device_pool.c). */
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

/* ---- one device's share of a search over several (hamming_multi.c) ---- */

/* A search held open on one device: the codes uploaded, the buffers made,
 * rows searched on demand. Every call on it from one thread at a time (any
 * thread: each call selects the device and puts the thread's back). */
typedef struct fy_gpu_pairs fy_gpu_pairs;
/* Where fy_gpu_pairs_rows hands the pairs it finds (at most buffer_pairs
 * at a time, in no order); a nonzero return (a ferry status, its message
 * set) stops the search, which returns it. */
typedef int (*fy_gpu_pairs_sink)(const ferry_pair *pairs, size_t n, void *user);

/* The arguments of a GPU pair search: FERRY_OK, or FERRY_EINVAL /
 * FERRY_ETOO_LARGE with the reason (codes NULL with n > 0, words not 1 or
 * 4, 2^32 - 1 codes or more, t outside 0..64 * words). Plain C
 * (hamming_multi.c): one rule for one device, several, and without CUDA. */
int fy_gpu_pairs_check(const uint64_t *codes, size_t n, int words, int t);

/* Uploads the n codes (words 1 or 4) and makes the buffers for searches
 * within t on CUDA device `device`; buffer_pairs as above (0: default).
 * Errors as fy_gpu_hamming_pairs. */
int fy_gpu_pairs_open(int device, const uint64_t *codes, size_t n, int words, int t,
                      size_t buffer_pairs, fy_gpu_pairs **out);
/* Every pair (i, j) with i in rows [i0, i1), i < j < n, within t, to sink. */
int fy_gpu_pairs_rows(fy_gpu_pairs *s, size_t i0, size_t i1, fy_gpu_pairs_sink sink, void *user);
/* Frees what open made; adds the search's launches and re-runs to *stats
 * (may be NULL) and sets its upload time, buffer and kernel choice. NULL:
 * nothing. */
void fy_gpu_pairs_close(fy_gpu_pairs *s, fy_gpu_hamming_stats *stats);

/* A top-k held open on one device: the codes uploaded, the neighbours of
 * query rows found on demand; calls from one thread at a time, as above. */
typedef struct fy_gpu_topk fy_gpu_topk;
/* hamming_topk.cu's bound on k */
#define FY_GPU_TOPK_MAX_K 32
/* The arguments of a GPU top-k: fy_gpu_pairs_check's, and k in
 * 1..FY_GPU_TOPK_MAX_K (else FERRY_EUNSUPPORTED). Plain C, as that one. */
int fy_gpu_topk_check(const uint64_t *codes, size_t n, int words, int k);
/* Uploads the n codes for the k nearest on CUDA device `device`. Errors as
 * fy_gpu_hamming_topk. */
int fy_gpu_topk_open(int device, const uint64_t *codes, size_t n, int words, int k,
                     fy_gpu_topk **out);
/* The top-k of queries [q0, q1) (among all n codes) into out[q * k ...] for
 * q in that range only (out holds n * k). */
int fy_gpu_topk_rows(fy_gpu_topk *s, size_t q0, size_t q1, ferry_neighbor *out);
/* Frees what open made; NULL: nothing. */
void fy_gpu_topk_close(fy_gpu_topk *s);

/* ---- several devices (hamming_multi.c; plain C, pthreads) ---- */

/* A row range [begin, end) of the pair matrix. */
typedef struct fy_row_range {
  size_t begin, end;
} fy_row_range;

/* Cuts rows [0, n) of the upper triangle (row i holds the n - 1 - i pairs
 * (i, j > i)) into at most `parts` consecutive non-empty ranges of about
 * equal pairs, every boundary a multiple of `align` rows (>= 1) but the
 * last, n: one range may hold up to align * (n - 1) pairs more or less than
 * its share. Writes them to out[] and returns how many (0 for n < 2). */
size_t fy_pair_split(size_t n, size_t parts, size_t align, fy_row_range *out);

/* The chunks a search over `ndevices` devices cuts its rows into: a few
 * per device (their threads take the next as they finish one, so faster
 * or less loaded devices take more), and no chunk of more than about
 * 2^37 / words pairs (one kernel grid). */
size_t fy_pair_split_count(size_t n, int words, int ndevices);

/* fy_gpu_hamming_pairs and _each over devices[0 .. ndevices - 1] (1 ..
 * FERRY_MAX_SEARCH_DEVICES; a device may come twice): the same pairs in
 * the same order as one device. The sink is called from the devices'
 * threads, one call at a time. stats (may be NULL): launches and re-runs
 * summed over the devices, upload_s the slowest upload, search_s the
 * whole search's time. An error on one device stops the others (each at
 * the end of its chunk) and is returned naming it: "cuda:N: ...". */
int fy_gpu_hamming_pairs_multi(const int *devices, int ndevices, const uint64_t *codes, size_t n,
                               int words, int t, size_t max_pairs, size_t buffer_pairs,
                               ferry_pair **pairs, size_t *count, fy_gpu_hamming_stats *stats);
int fy_gpu_hamming_pairs_each_multi(const int *devices, int ndevices, const uint64_t *codes,
                                    size_t n, int words, int t, size_t buffer_pairs,
                                    void (*sink)(const ferry_pair *pairs, size_t n, void *user),
                                    void *user, fy_gpu_hamming_stats *stats);
/* What the driver calls on each device, so that a test can put a fake
 * device under it (a CPU search, failures on demand): CUDA's is
 * fy_gpu_pairs_open/_rows/_close. */
typedef struct fy_pairs_backend {
  int (*open)(int device, const uint64_t *codes, size_t n, int words, int t, size_t buffer_pairs,
              void **state);
  int (*rows)(void *state, size_t i0, size_t i1, fy_gpu_pairs_sink sink, void *user);
  void (*close)(void *state, fy_gpu_hamming_stats *stats); /* state not NULL */
} fy_pairs_backend;
/* The driver itself, over backend b, always with threads (even for one
 * device): with sink, streamed (max_pairs unused), else listed. */
int fy_pairs_multi_run(const fy_pairs_backend *b, const int *devices, int ndevices,
                       const uint64_t *codes, size_t n, int words, int t, size_t max_pairs,
                       size_t buffer_pairs, void (*sink)(const ferry_pair *, size_t, void *),
                       void *user, ferry_pair **pairs, size_t *count, fy_gpu_hamming_stats *stats);
/* The query blocks of a top-k over `ndevices` devices: a multiple of the
 * devices in number, up to 16 per device, each a multiple of 128 queries
 * and at least 65536 (fewer leave a large GPU idle) unless there are
 * fewer queries than that per device: then one block per device. */
size_t fy_topk_block(size_t n, int ndevices);
/* What the top-k driver calls on each device (a test's fake, or CUDA's:
 * fy_gpu_topk_backend, fy_gpu_topk_open/_rows/_close). */
typedef struct fy_topk_backend {
  int (*open)(int device, const uint64_t *codes, size_t n, int words, int k, void **state);
  int (*rows)(void *state, size_t q0, size_t q1, ferry_neighbor *out);
  void (*close)(void *state); /* state not NULL */
} fy_topk_backend;
extern const fy_topk_backend fy_gpu_topk_backend;
/* The top-k driver itself, over backend b, always with threads (even for
 * one device): queries cut into blocks of `block` (0: fy_topk_block's),
 * each device's thread taking the next block as it finishes one; out[n *
 * k] as on one device. An error stops the others before their next block
 * and is returned naming the device: "cuda:N: ...". */
int fy_topk_multi_run(const fy_topk_backend *b, const int *devices, int ndevices,
                      const uint64_t *codes, size_t n, int words, int k, size_t block,
                      ferry_neighbor *out);
/* fy_gpu_hamming_topk over devices[0 .. ndevices - 1] (a device may come
 * twice): fy_topk_multi_run on CUDA; one device without a thread. */
int fy_gpu_hamming_topk_multi(const int *devices, int ndevices, const uint64_t *codes, size_t n,
                              int words, int k, ferry_neighbor *out);

#endif
