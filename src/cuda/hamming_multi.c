/* hamming_multi.c — the GPU Hamming search over several CUDA devices
 * (ferry_search_options.devices): plain C, one host thread per listed
 * device, each with its own search held open on its device (hamming.cu's
 * fy_gpu_pairs_*, or a test's backend).
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
 *  - The first error (with the device named: "cuda:N: ...") is kept, the
 *    other threads stop at the end of their chunk, every thread is joined
 *    and every search closed before the call returns.
 *  - Top-k: consecutive query ranges of equal size, one per device. */
#include "cuda/hamming.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* The first error of a group of threads, and the flag that stops the
 * others (read with __atomic_load_n: hamming_topk.cu reads it too). */
typedef struct failure {
  pthread_mutex_t mu;
  int stop;
  int rc;
  char msg[1024];
} failure;

/* Keeps rc and the calling thread's message, prefixed with the device when
 * device >= 0, unless an error came first; stops the other threads. */
static void fail(failure *f, int rc, int device) {
  const char *why = ferry_last_error();
  pthread_mutex_lock(&f->mu);
  if (!f->rc) {
    f->rc = rc;
    if (device >= 0)
      snprintf(f->msg, sizeof f->msg, "cuda:%d: %s", device, why);
    else
      snprintf(f->msg, sizeof f->msg, "%s", why);
  }
  __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&f->mu);
}

static int stopped(failure *f) { return __atomic_load_n(&f->stop, __ATOMIC_ACQUIRE); }

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
  const fy_row_range *chunks;
  size_t nchunks;
  atomic_size_t next;                               /* the next chunk to take */
  chunk_pairs *listed;                              /* nchunks of them; NULL when streamed */
  size_t total;                                     /* pairs listed so far (f.mu) */
  void (*sink)(const ferry_pair *, size_t, void *); /* streamed: the caller's (f.mu) */
  void *user;
  failure f;
} search;

typedef struct worker {
  search *s;
  int device;
  size_t chunk; /* the chunk being searched */
  fy_gpu_hamming_stats st;
  pthread_t thread;
} worker;

static int pair_cmp(const void *a, const void *b) {
  const ferry_pair *x = a, *y = b;
  if (x->i != y->i)
    return x->i < y->i ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

/* The sink of every device's search (from its thread). */
static int take(const ferry_pair *pairs, size_t n, void *user) {
  worker *w = user;
  search *s = w->s;
  if (!s->listed) { /* streamed: one call at a time */
    pthread_mutex_lock(&s->f.mu);
    s->sink(pairs, n, s->user);
    pthread_mutex_unlock(&s->f.mu);
    return FERRY_OK;
  }
  pthread_mutex_lock(&s->f.mu);
  int over = s->max_pairs && s->total + n > s->max_pairs;
  if (!over)
    s->total += n;
  pthread_mutex_unlock(&s->f.mu);
  if (over) { /* the whole search's pairs, as on one device */
    fail(&s->f,
         fy_error(FERRY_ETOO_LARGE, "search: more than %zu pairs within distance %d", s->max_pairs,
                  s->t),
         -1);
    return FERRY_ETOO_LARGE;
  }
  chunk_pairs *c = &s->listed[w->chunk];
  if (c->n + n > c->cap) {
    size_t cap = c->cap ? c->cap : 1024;
    while (cap < c->n + n)
      cap *= 2;
    ferry_pair *p = realloc(c->p, cap * sizeof *p);
    if (!p) {
      fail(&s->f, fy_error(FERRY_ENOMEM, "search: out of memory for %zu more pairs", n), -1);
      return FERRY_ENOMEM;
    }
    c->p = p;
    c->cap = cap;
  }
  memcpy(c->p + c->n, pairs, n * sizeof *pairs);
  c->n += n;
  return FERRY_OK;
}

static void *pairs_thread(void *arg) {
  worker *w = arg;
  search *s = w->s;
  void *state = NULL;
  int rc = s->b->open(w->device, s->codes, s->n, s->words, s->t, s->buffer_pairs, &state);
  while (!rc && !stopped(&s->f)) {
    size_t k = atomic_fetch_add(&s->next, 1);
    if (k >= s->nchunks)
      break;
    w->chunk = k;
    rc = s->b->rows(state, s->chunks[k].begin, s->chunks[k].end, take, w);
    if (!rc && s->listed && s->listed[k].n > 1)
      qsort(s->listed[k].p, s->listed[k].n, sizeof(ferry_pair), pair_cmp);
  }
  if (state)
    s->b->close(state, &w->st);
  if (rc)
    fail(&s->f, rc, w->device); /* a sink's own failure came first: kept as it was */
  return NULL;
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

/* Starts one thread per device; returns once all are joined. */
static void run_workers(search *s, const int *devices, int ndevices, worker *w,
                        fy_gpu_hamming_stats *stats) {
  int started = 0;
  double t0 = fy_now();
  for (; started < ndevices; started++) {
    w[started] = (worker){.s = s, .device = devices[started]};
    if (pthread_create(&w[started].thread, NULL, pairs_thread, &w[started])) {
      fail(&s->f,
           fy_error(FERRY_ENOMEM, "GPU Hamming search: cannot start a thread for cuda:%d",
                    devices[started]),
           -1);
      break;
    }
  }
  for (int d = 0; d < started; d++)
    pthread_join(w[d].thread, NULL);
  if (!stats)
    return;
  stats->search_s = fy_now() - t0;
  for (int d = 0; d < started; d++) {
    stats->launches += w[d].st.launches;
    stats->reruns += w[d].st.reruns;
    if (w[d].st.upload_s > stats->upload_s)
      stats->upload_s = w[d].st.upload_s;
    if (w[d].st.buffer_pairs)
      stats->buffer_pairs = w[d].st.buffer_pairs, stats->filter = w[d].st.filter;
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
  search s = {.b = b,
              .codes = codes,
              .n = n,
              .words = words,
              .t = t,
              .buffer_pairs = buffer_pairs,
              .max_pairs = sink ? 0 : max_pairs,
              .sink = sink,
              .user = user};
  fy_row_range *chunks = malloc(parts * sizeof *chunks);
  worker *w = calloc((size_t)ndevices, sizeof *w);
  if (chunks)
    s.nchunks = fy_pair_split(n, parts, TILE_ROWS(words), chunks);
  s.chunks = chunks;
  if (!sink && chunks)
    s.listed = calloc(s.nchunks, sizeof *s.listed);
  if (!chunks || !w || (!sink && !s.listed)) {
    free(chunks);
    free(w);
    free(s.listed);
    return fy_error(FERRY_ENOMEM, "GPU Hamming search: out of memory");
  }
  atomic_init(&s.next, 0);
  pthread_mutex_init(&s.f.mu, NULL);
  run_workers(&s, devices, ndevices, w, stats);
  pthread_mutex_destroy(&s.f.mu);
  rc = s.f.rc;
  ferry_pair *out = NULL;
  if (!rc && s.listed && s.total) {
    out = malloc(s.total * sizeof *out);
    if (!out)
      rc = fy_error(FERRY_ENOMEM, "search: out of memory for %zu pairs", s.total);
  }
  size_t at = 0;
  for (size_t k = 0; s.listed && k < s.nchunks; k++) {
    if (out && s.listed[k].n)
      memcpy(out + at, s.listed[k].p, s.listed[k].n * sizeof *out);
    at += s.listed[k].n;
    free(s.listed[k].p);
  }
  free(s.listed);
  free(chunks);
  free(w);
  if (s.f.rc)
    return fy_error(s.f.rc, "%s", s.f.msg); /* this thread's message: the device's */
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

typedef struct topk_part {
  failure *f;
  int device, words, k;
  const uint64_t *codes;
  size_t n, q0, q1;
  ferry_neighbor *out;
  pthread_t thread;
} topk_part;

static void *topk_thread(void *arg) {
  topk_part *p = arg;
  int rc = fy_gpu_hamming_topk_rows(p->device, p->codes, p->n, p->words, p->k, p->q0, p->q1, p->out,
                                    &p->f->stop);
  if (rc)
    fail(p->f, rc, p->device);
  return NULL;
}

int fy_gpu_hamming_topk_multi(const int *devices, int ndevices, const uint64_t *codes, size_t n,
                              int words, int k, ferry_neighbor *out) {
  int rc = check_devices(devices, ndevices);
  if (rc)
    return rc;
  if (ndevices == 1)
    return fy_gpu_hamming_topk(devices[0], codes, n, words, k, out);
  if (!out)
    return fy_error(FERRY_EINVAL, "GPU Hamming top-k: NULL argument");
  rc = check_pairs(devices, ndevices, codes, n, words, 0);
  if (rc)
    return rc;
  if (k < 1 || k > 32) /* hamming_topk.cu's bound, refused before any thread */
    return fy_error(FERRY_EUNSUPPORTED, "GPU Hamming top-k: k must be 1..32, not %d", k);
  topk_part parts[FERRY_MAX_SEARCH_DEVICES];
  failure f = {.rc = FERRY_OK};
  pthread_mutex_init(&f.mu, NULL);
  int started = 0;
  for (; started < ndevices; started++) {
    topk_part *p = &parts[started];
    *p = (topk_part){.f = &f,
                     .device = devices[started],
                     .words = words,
                     .k = k,
                     .codes = codes,
                     .n = n,
                     .out = out,
                     .q0 = n * (size_t)started / (size_t)ndevices,
                     .q1 = n * (size_t)(started + 1) / (size_t)ndevices};
    if (pthread_create(&p->thread, NULL, topk_thread, p)) {
      fail(&f,
           fy_error(FERRY_ENOMEM, "GPU Hamming top-k: cannot start a thread for cuda:%d",
                    devices[started]),
           -1);
      break;
    }
  }
  for (int d = 0; d < started; d++)
    pthread_join(parts[d].thread, NULL);
  pthread_mutex_destroy(&f.mu);
  return f.rc ? fy_error(f.rc, "%s", f.msg) : FERRY_OK;
}
