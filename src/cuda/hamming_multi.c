/* hamming_multi.c — the GPU Hamming search over several CUDA devices
 * (ferry_search_options.devices): plain C, one host thread per listed
 * device, each with its own search held open on its device (hamming.cu's
 * fy_gpu_pairs_*, hamming_topk.cu's fy_gpu_topk_*, or a test's backend),
 * taking work from device_pool.c's shared cursor.
 *
 *  - The rows of the pair matrix's upper triangle are cut into consecutive
 *    chunks of about equal pairs (fy_pair_split: row i holds n - 1 - i
 *    pairs, so the chunks get longer down the matrix), several per device;
 *    each thread takes the next chunk from a shared counter when it has
 *    finished the last, so a faster or less loaded device takes more.
 *  - Pairs listed: each chunk's pairs are kept apart and sorted by the
 *    thread that found them; the chunks cover consecutive rows, so laid end
 *    to end in chunk order they are sorted by (i, j), the CPU's order.
 *    max_pairs is counted over all devices. Streamed: the caller's sink is
 *    called under a mutex, one call at a time.
 *  - Top-k: the queries are cut into blocks of equal size (fy_topk_block:
 *    a multiple of the devices, up to 16 each, none too small to fill a
 *    GPU unless the queries are few: then one per device), handed out the
 *    same way; each block's neighbours are written in place, so the output
 *    is one device's.
 *  - The first error (with the device named: "cuda:N: ...") is kept, the
 *    other threads stop at the end of their chunk or block, every thread
 *    is joined and every search closed before the call returns. */
#include "cuda/hamming.h"

#include "cuda/device_pool.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows of hamming.cu's square tiles (256 threads x 8 codes, 256-bit: x 4):
 * chunk boundaries on them waste no tile. */
#define TILE_ROWS(words) ((size_t)((words) == 1 ? 2048 : 1024))
/* Pairs per chunk: half of hamming.cu's launch (2^37, 256-bit 2^35), so that
 * a chunk is one kernel grid. */
#define CHUNK_PAIRS(words) ((double)(1ull << 36) / ((words) == 1 ? 1 : 4))
#define CHUNKS_PER_DEVICE 8
#define MAX_CHUNKS 4096 /* past this, larger chunks (hamming.cu cuts them in grids) */

/* The first row of the rows that hold the last `pairs` pairs (of n rows). */
static double first_row_of_tail(size_t n, double pairs) {
  /* m rows at the end hold m (m - 1) / 2 pairs */
  double m = (1.0 + sqrt(1.0 + 8.0 * pairs)) / 2.0;
  return (double)n - m;
}

size_t fy_pair_split(size_t n, size_t parts, size_t align, fy_row_range *out) {
  if (n < 2 || parts == 0)
    return 0;
  if (align == 0)
    align = 1;
  double total = (double)n * (double)(n - 1) / 2.0;
  size_t count = 0, begin = 0;
  for (size_t k = 1; k < parts; k++) {
    double r = first_row_of_tail(n, total * (double)(parts - k) / (double)parts);
    size_t at = r <= 0 ? 0 : (size_t)(r / (double)align + 0.5) * align;
    if (at <= begin || at >= n - 1) /* empty, or only the last row (no pairs) after it */
      continue;
    out[count++] = (fy_row_range){begin, at};
    begin = at;
  }
  out[count++] = (fy_row_range){begin, n};
  return count;
}

size_t fy_pair_split_count(size_t n, int words, int ndevices) {
  double total = n < 2 ? 0 : (double)n * (double)(n - 1) / 2.0;
  double by_size = ceil(total / CHUNK_PAIRS(words));
  size_t parts = (size_t)(ndevices > 0 ? ndevices : 1) * CHUNKS_PER_DEVICE;
  if (by_size > (double)parts)
    parts = by_size > MAX_CHUNKS ? MAX_CHUNKS : (size_t)by_size;
  return parts;
}

/* ---------------------------------------------------------------- pairs */

/* One chunk's pairs, listed (sorted by the thread that found them). */
typedef struct chunk_pairs {
  ferry_pair *p;
  size_t n, cap;
} chunk_pairs;

typedef struct search {
  const fy_pairs_backend *b;
  const uint64_t *codes;
  size_t n;
  int words, t;
  size_t buffer_pairs, max_pairs;
  const fy_row_range *chunks;                       /* the pool's items */
  chunk_pairs *listed;                              /* one per chunk; NULL when streamed */
  size_t total;                                     /* pairs listed so far (pool.mu) */
  void (*sink)(const ferry_pair *, size_t, void *); /* streamed: the caller's (pool.mu) */
  void *user;
  fy_gpu_hamming_stats st[FERRY_MAX_SEARCH_DEVICES]; /* each device's, from its close */
  fy_pool pool;
} search;

static int pair_cmp(const void *a, const void *b) {
  const ferry_pair *x = a, *y = b;
  if (x->i != y->i)
    return x->i < y->i ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

/* The sink of every device's search (from its thread; user: its worker). */
static int take(const ferry_pair *pairs, size_t n, void *user) {
  fy_pool_worker *w = user;
  search *s = w->pool->job;
  if (!s->listed) { /* streamed: one call at a time */
    pthread_mutex_lock(&s->pool.mu);
    s->sink(pairs, n, s->user);
    pthread_mutex_unlock(&s->pool.mu);
    return FERRY_OK;
  }
  pthread_mutex_lock(&s->pool.mu);
  int over = s->max_pairs && s->total + n > s->max_pairs;
  if (!over)
    s->total += n;
  pthread_mutex_unlock(&s->pool.mu);
  if (over) { /* the whole search's pairs, as on one device */
    fy_pool_fail(&s->pool,
                 fy_error(FERRY_ETOO_LARGE, "search: more than %zu pairs within distance %d",
                          s->max_pairs, s->t),
                 -1);
    return FERRY_ETOO_LARGE;
  }
  chunk_pairs *c = &s->listed[w->item];
  if (c->n + n > c->cap) {
    size_t cap = c->cap ? c->cap : 1024;
    while (cap < c->n + n)
      cap *= 2;
    ferry_pair *p = realloc(c->p, cap * sizeof *p);
    if (!p) {
      fy_pool_fail(&s->pool, fy_error(FERRY_ENOMEM, "search: out of memory for %zu more pairs", n),
                   -1);
      return FERRY_ENOMEM;
    }
    c->p = p;
    c->cap = cap;
  }
  memcpy(c->p + c->n, pairs, n * sizeof *pairs);
  c->n += n;
  return FERRY_OK;
}

static int pairs_open(fy_pool_worker *w) {
  search *s = w->pool->job;
  return s->b->open(w->device, s->codes, s->n, s->words, s->t, s->buffer_pairs, &w->state);
}

static int pairs_work(fy_pool_worker *w, size_t k) {
  search *s = w->pool->job;
  int rc = s->b->rows(w->state, s->chunks[k].begin, s->chunks[k].end, take, w);
  if (!rc && s->listed && s->listed[k].n > 1)
    qsort(s->listed[k].p, s->listed[k].n, sizeof(ferry_pair), pair_cmp);
  return rc;
}

static void pairs_close(fy_pool_worker *w) {
  search *s = w->pool->job;
  s->b->close(w->state, &s->st[w->index]);
}

/* The device list: 1..FERRY_MAX_SEARCH_DEVICES CUDA device numbers. */
static int check_devices(const int *devices, int ndevices) {
  if (!devices)
    return fy_error(FERRY_EINVAL, "GPU Hamming search: NULL device list");
  if (ndevices < 1 || ndevices > FERRY_MAX_SEARCH_DEVICES)
    return fy_error(FERRY_EINVAL, "GPU Hamming search: %d devices (1..%d)", ndevices,
                    FERRY_MAX_SEARCH_DEVICES);
  for (int d = 0; d < ndevices; d++)
    if (devices[d] < 0 || devices[d] >= FERRY_DEVICE_OPENCL)
      return fy_error(FERRY_EINVAL, "GPU Hamming search: devices[%d] = %d is not a CUDA device", d,
                      devices[d]);
  return FERRY_OK;
}

int fy_gpu_pairs_check(const uint64_t *codes, size_t n, int words, int t) {
  if (!codes && n)
    return fy_error(FERRY_EINVAL, "GPU Hamming search: NULL argument");
  if (words != 1 && words != 4)
    return fy_error(FERRY_EINVAL, "GPU Hamming search: words must be 1 or 4, not %d", words);
  if (n >= UINT32_MAX)
    return fy_error(FERRY_ETOO_LARGE, "GPU Hamming search: %zu codes (at most 2^32 - 2)", n);
  if (t < 0 || t > 64 * words)
    return fy_error(FERRY_EINVAL, "GPU Hamming search: threshold %d not in 0..%d", t, 64 * words);
  return FERRY_OK;
}

/* The checks of one device's search, before any thread. */
static int check_pairs(const int *devices, int ndevices, const uint64_t *codes, size_t n, int words,
                       int t) {
  int rc = check_devices(devices, ndevices);
  return rc ? rc : fy_gpu_pairs_check(codes, n, words, t);
}

/* The devices' stats as one search's. */
static void sum_stats(const search *s, int ndevices, double seconds, fy_gpu_hamming_stats *stats) {
  stats->search_s = seconds;
  for (int d = 0; d < ndevices; d++) {
    stats->launches += s->st[d].launches;
    stats->reruns += s->st[d].reruns;
    if (s->st[d].upload_s > stats->upload_s)
      stats->upload_s = s->st[d].upload_s;
    if (s->st[d].buffer_pairs)
      stats->buffer_pairs = s->st[d].buffer_pairs, stats->filter = s->st[d].filter;
  }
}

int fy_pairs_multi_run(const fy_pairs_backend *b, const int *devices, int ndevices,
                       const uint64_t *codes, size_t n, int words, int t, size_t max_pairs,
                       size_t buffer_pairs, void (*sink)(const ferry_pair *, size_t, void *),
                       void *user, ferry_pair **pairs, size_t *count, fy_gpu_hamming_stats *stats) {
  if (stats)
    memset(stats, 0, sizeof *stats);
  if (pairs)
    *pairs = NULL;
  if (count)
    *count = 0;
  if (!b || (!sink && (!pairs || !count)))
    return fy_error(FERRY_EINVAL, "GPU Hamming search: NULL argument");
  int rc = check_pairs(devices, ndevices, codes, n, words, t);
  if (rc || n < 2)
    return rc;
  size_t parts = fy_pair_split_count(n, words, ndevices);
  fy_row_range *chunks = malloc(parts * sizeof *chunks);
  if (!chunks)
    return fy_error(FERRY_ENOMEM, "GPU Hamming search: out of memory");
  search s = {.b = b,
              .codes = codes,
              .n = n,
              .words = words,
              .t = t,
              .buffer_pairs = buffer_pairs,
              .max_pairs = sink ? 0 : max_pairs,
              .chunks = chunks,
              .sink = sink,
              .user = user,
              .pool = {.open = pairs_open, .work = pairs_work, .close = pairs_close}};
  s.pool.job = &s;
  s.pool.items = fy_pair_split(n, parts, TILE_ROWS(words), chunks);
  if (!sink && !(s.listed = calloc(s.pool.items, sizeof *s.listed))) {
    free(chunks);
    return fy_error(FERRY_ENOMEM, "GPU Hamming search: out of memory");
  }
  double t0 = fy_now();
  rc = fy_pool_run(&s.pool, devices, ndevices); /* its message: the device's */
  if (stats)
    sum_stats(&s, ndevices, fy_now() - t0, stats);
  ferry_pair *out = NULL;
  if (!rc && s.listed && s.total) {
    out = malloc(s.total * sizeof *out);
    if (!out)
      rc = fy_error(FERRY_ENOMEM, "search: out of memory for %zu pairs", s.total);
  }
  size_t at = 0;
  for (size_t k = 0; s.listed && k < s.pool.items; k++) { /* in chunk order: the CPU's */
    if (out && s.listed[k].n)
      memcpy(out + at, s.listed[k].p, s.listed[k].n * sizeof *out);
    at += s.listed[k].n;
    free(s.listed[k].p);
  }
  free(s.listed);
  free(chunks);
  if (rc)
    return rc;
  if (pairs) {
    *pairs = out;
    *count = s.total;
  }
  return FERRY_OK;
}

/* hamming.cu's search as the backend */
static int cuda_open(int device, const uint64_t *codes, size_t n, int words, int t,
                     size_t buffer_pairs, void **state) {
  fy_gpu_pairs *s = NULL;
  int rc = fy_gpu_pairs_open(device, codes, n, words, t, buffer_pairs, &s);
  *state = s;
  return rc;
}

static int cuda_rows(void *state, size_t i0, size_t i1, fy_gpu_pairs_sink sink, void *user) {
  return fy_gpu_pairs_rows(state, i0, i1, sink, user);
}

static void cuda_close(void *state, fy_gpu_hamming_stats *stats) {
  fy_gpu_pairs_close(state, stats);
}

static const fy_pairs_backend cuda_backend = {cuda_open, cuda_rows, cuda_close};

int fy_gpu_hamming_pairs_multi(const int *devices, int ndevices, const uint64_t *codes, size_t n,
                               int words, int t, size_t max_pairs, size_t buffer_pairs,
                               ferry_pair **pairs, size_t *count, fy_gpu_hamming_stats *stats) {
  int rc = check_devices(devices, ndevices);
  if (rc)
    return rc;
  if (ndevices == 1) /* one device: no thread */
    return fy_gpu_hamming_pairs(devices[0], codes, n, words, t, max_pairs, buffer_pairs, pairs,
                                count, stats);
  if (!pairs || !count)
    return fy_error(FERRY_EINVAL, "GPU Hamming search: NULL argument");
  return fy_pairs_multi_run(&cuda_backend, devices, ndevices, codes, n, words, t, max_pairs,
                            buffer_pairs, NULL, NULL, pairs, count, stats);
}

int fy_gpu_hamming_pairs_each_multi(const int *devices, int ndevices, const uint64_t *codes,
                                    size_t n, int words, int t, size_t buffer_pairs,
                                    void (*sink)(const ferry_pair *pairs, size_t n, void *user),
                                    void *user, fy_gpu_hamming_stats *stats) {
  int rc = check_devices(devices, ndevices);
  if (rc)
    return rc;
  if (ndevices == 1)
    return fy_gpu_hamming_pairs_each(devices[0], codes, n, words, t, buffer_pairs, sink, user,
                                     stats);
  if (!sink)
    return fy_error(FERRY_EINVAL, "fy_gpu_hamming_pairs_each: NULL sink");
  return fy_pairs_multi_run(&cuda_backend, devices, ndevices, codes, n, words, t, 0, buffer_pairs,
                            sink, user, NULL, NULL, stats);
}

/* ---------------------------------------------------------------- top-k */

/* Query blocks: a multiple of the devices in number (up to 16 each), so
 * that equal devices end together, and none smaller than keeps a large GPU
 * busy (hamming_topk.cu runs one thread per query: 65,536 queries are 512
 * blocks of 128 threads, about 4 per SM of an H100) unless there are fewer
 * queries than that per device: then one block each. Rounded up to the
 * kernel's 128 threads, which may leave the last block shorter. */
#define TOPK_BLOCKS_PER_DEVICE 16
#define TOPK_MIN_BLOCK ((size_t)1 << 16)
#define TOPK_ALIGN ((size_t)128)

size_t fy_topk_block(size_t n, int ndevices) {
  size_t nd = (size_t)(ndevices > 0 ? ndevices : 1);
  size_t per = n / (nd * TOPK_MIN_BLOCK); /* blocks per device */
  per = per < 1 ? 1 : per > TOPK_BLOCKS_PER_DEVICE ? TOPK_BLOCKS_PER_DEVICE : per;
  size_t parts = nd * per, b = (n + parts - 1) / parts;
  b = (b + TOPK_ALIGN - 1) / TOPK_ALIGN * TOPK_ALIGN;
  return b ? b : TOPK_ALIGN;
}

int fy_gpu_topk_check(const uint64_t *codes, size_t n, int words, int k) {
  int rc = fy_gpu_pairs_check(codes, n, words, 0);
  if (!rc && (k < 1 || k > FY_GPU_TOPK_MAX_K))
    rc = fy_error(FERRY_EUNSUPPORTED, "GPU Hamming top-k: k must be 1..%d, not %d",
                  FY_GPU_TOPK_MAX_K, k);
  return rc;
}

typedef struct topk_job {
  const fy_topk_backend *b;
  const uint64_t *codes;
  size_t n, block;
  int words, k;
  ferry_neighbor *out; /* n * k: each block's rows written in place */
} topk_job;

static int topk_open(fy_pool_worker *w) {
  topk_job *j = w->pool->job;
  return j->b->open(w->device, j->codes, j->n, j->words, j->k, &w->state);
}

static int topk_work(fy_pool_worker *w, size_t item) {
  topk_job *j = w->pool->job;
  size_t q0 = item * j->block, q1 = j->n - q0 < j->block ? j->n : q0 + j->block;
  return j->b->rows(w->state, q0, q1, j->out);
}

static void topk_close(fy_pool_worker *w) {
  topk_job *j = w->pool->job;
  j->b->close(w->state);
}

int fy_topk_multi_run(const fy_topk_backend *b, const int *devices, int ndevices,
                      const uint64_t *codes, size_t n, int words, int k, size_t block,
                      ferry_neighbor *out) {
  if (!b || !out)
    return fy_error(FERRY_EINVAL, "GPU Hamming top-k: NULL argument");
  int rc = check_devices(devices, ndevices);
  if (rc || (rc = fy_gpu_topk_check(codes, n, words, k))) /* before any thread */
    return rc;
  topk_job j = {b, codes, n, block ? block : fy_topk_block(n, ndevices), words, k, out};
  fy_pool pool = {.job = &j,
                  .items = (n + j.block - 1) / j.block,
                  .open = topk_open,
                  .work = topk_work,
                  .close = topk_close};
  return fy_pool_run(&pool, devices, ndevices); /* its message: the device's */
}

/* hamming_topk.cu's top-k as the backend */
static int cuda_topk_open(int device, const uint64_t *codes, size_t n, int words, int k,
                          void **state) {
  fy_gpu_topk *s = NULL;
  int rc = fy_gpu_topk_open(device, codes, n, words, k, &s);
  *state = s;
  return rc;
}

static int cuda_topk_rows(void *state, size_t q0, size_t q1, ferry_neighbor *out) {
  return fy_gpu_topk_rows(state, q0, q1, out);
}

static void cuda_topk_close(void *state) { fy_gpu_topk_close(state); }

const fy_topk_backend fy_gpu_topk_backend = {cuda_topk_open, cuda_topk_rows, cuda_topk_close};

int fy_gpu_hamming_topk_multi(const int *devices, int ndevices, const uint64_t *codes, size_t n,
                              int words, int k, ferry_neighbor *out) {
  int rc = check_devices(devices, ndevices);
  if (rc)
    return rc;
  if (ndevices == 1) /* one device: no thread */
    return fy_gpu_hamming_topk(devices[0], codes, n, words, k, out);
  return fy_topk_multi_run(&fy_gpu_topk_backend, devices, ndevices, codes, n, words, k, 0, out);
}
