/* topk.c — the k nearest codes of every code. Brute force: each thread
 * takes blocks of queries and streams every code past them, keeping a
 * bounded max-heap per query; targets come in ascending order, so a code at
 * the same distance as the current k-th never replaces it (ties go to the
 * lower index). With FERRY_SEARCH_MIH, each query widens a multi-index
 * search radius until k neighbours are inside it. */
#include "cuda/hamming.h"
#include "opencl/opencl.h"
#include "search/search.h"

#include <stdatomic.h>
#include <string.h>

/* (distance, index) order: the heap's root is the worst neighbour. */
static int worse(const ferry_neighbor *a, const ferry_neighbor *b) {
  return a->distance != b->distance ? a->distance > b->distance : a->index > b->index;
}

static void heap_down(ferry_neighbor *h, int n, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, w = i;
    if (l < n && worse(&h[l], &h[w]))
      w = l;
    if (r < n && worse(&h[r], &h[w]))
      w = r;
    if (w == i)
      return;
    ferry_neighbor t = h[i];
    h[i] = h[w];
    h[w] = t;
    i = w;
  }
}

static void heap_push(ferry_neighbor *h, int *n, int k, ferry_neighbor v) {
  if (*n < k) { /* sift up */
    int i = (*n)++;
    h[i] = v;
    while (i > 0 && worse(&h[i], &h[(i - 1) / 2])) {
      ferry_neighbor t = h[i];
      h[i] = h[(i - 1) / 2];
      h[(i - 1) / 2] = t;
      i = (i - 1) / 2;
    }
  } else if (worse(&h[0], &v)) {
    h[0] = v;
    heap_down(h, *n, 0);
  }
}

static int cmp_neighbor(const void *a, const void *b) {
  return worse(a, b) ? 1 : worse(b, a) ? -1 : 0;
}

/* Writes the heap sorted, padded with UINT32_MAX. */
static void finish(ferry_neighbor *h, int n, int k, ferry_neighbor *out) {
  qsort(h, (size_t)n, sizeof *h, cmp_neighbor);
  for (int r = 0; r < k; r++)
    out[r] = r < n ? h[r] : (ferry_neighbor){UINT32_MAX, UINT32_MAX};
}

enum { CHUNK = 64 };

/* The least of n distances: a loop the compiler turns into vector minima. */
static uint16_t least(const uint16_t *d, size_t n) {
  uint16_t m = UINT16_MAX;
  for (size_t i = 0; i < n; i++)
    m = d[i] < m ? d[i] : m;
  return m;
}

/* Targets [b0, b1) of query q, their distances in d, into q's heap (fill
 * of k). Once the heap is full most chunks of targets hold none nearer
 * than its worst: their least distance says so without a branch each. */
static void consider(ferry_neighbor *h, int *fill, int k, const uint16_t *d, size_t b0, size_t b1,
                     size_t q) {
  uint32_t worst = *fill == k ? h[0].distance : UINT32_MAX;
  for (size_t c0 = b0; c0 < b1; c0 += CHUNK) {
    size_t c1 = c0 + CHUNK < b1 ? c0 + CHUNK : b1;
    if (least(d + (c0 - b0), c1 - c0) >= worst)
      continue;
    for (size_t t = c0; t < c1; t++)
      if (d[t - b0] < worst && t != q) {
        heap_push(h, fill, k, (ferry_neighbor){(uint32_t)t, d[t - b0]});
        worst = *fill == k ? h[0].distance : UINT32_MAX;
      }
  }
}

/* Query q against targets [b0, b1) into its heap: with a full heap and a
 * kernel that has `below`, only the targets nearer than the worst kept
 * are looked at (a mask from the kernel, their distances counted again);
 * else every distance (dist, then consider). */
static void scan_block(const fy_kernels *kern, const fy_codes *c, size_t q, size_t b0, size_t b1,
                       ferry_neighbor *h, int *fill, int k, uint16_t *d, uint64_t *mask) {
  const uint64_t *qc = c->aos + q * c->words;
  if (*fill < k || !kern->below) {
    kern->dist(c, qc, b0, b1, d);
    consider(h, fill, k, d, b0, b1, q);
    return;
  }
  kern->below(c, qc, b0, b1, h[0].distance, mask);
  for (size_t w = 0; w < (b1 - b0 + 63) / 64; w++)
    for (uint64_t m = mask[w]; m; m &= m - 1) {
      size_t t = b0 + 64 * w + (size_t)__builtin_ctzll(m);
      uint32_t dist = (uint32_t)fy_code_distance(qc, c->aos + t * c->words, c->words);
      if (t != q && dist < h[0].distance)
        heap_push(h, fill, k, (ferry_neighbor){(uint32_t)t, dist});
    }
}

typedef struct topk_job {
  const fy_codes *c;
  const fy_kernels *kern;
  const fy_mih *mih;
  int k, oom;
  ferry_neighbor *out;
  atomic_size_t next;
} topk_job;

enum { QBLOCK = 16, TBLOCK = 4096 };

static void brute_worker(void *arg, int index) {
  (void)index;
  topk_job *j = arg;
  const fy_codes *c = j->c;
  size_t n = c->n;
  ferry_neighbor *heaps = malloc((size_t)QBLOCK * j->k * sizeof *heaps);
  uint16_t *d = malloc(TBLOCK * sizeof *d);
  uint64_t *mask = malloc(TBLOCK / 64 * sizeof *mask);
  if (!heaps || !d || !mask) {
    free(heaps);
    free(d);
    free(mask);
    j->oom = 1;
    return;
  }
  for (;;) {
    size_t q0 = atomic_fetch_add(&j->next, QBLOCK);
    if (q0 >= n)
      break;
    size_t q1 = q0 + QBLOCK < n ? q0 + QBLOCK : n;
    int fill[QBLOCK] = {0};
    for (size_t b0 = 0; b0 < n; b0 += TBLOCK) { /* target block stays in cache */
      size_t b1 = b0 + TBLOCK < n ? b0 + TBLOCK : n;
      for (size_t q = q0; q < q1; q++) {
        scan_block(j->kern, c, q, b0, b1, heaps + (q - q0) * j->k, &fill[q - q0], j->k, d, mask);
      }
    }
    for (size_t q = q0; q < q1; q++)
      finish(heaps + (q - q0) * j->k, fill[q - q0], j->k, j->out + q * j->k);
  }
  free(heaps);
  free(d);
  free(mask);
}

/* One query by brute force (when its neighbours are too far for the
 * index to be worth it). */
static void scan_one(const topk_job *j, size_t q, ferry_neighbor *heap, uint16_t *d,
                     uint64_t *mask) {
  const fy_codes *c = j->c;
  int fill = 0;
  for (size_t b0 = 0; b0 < c->n; b0 += TBLOCK)
    scan_block(j->kern, c, q, b0, b0 + TBLOCK < c->n ? b0 + TBLOCK : c->n, heap, &fill, j->k, d,
               mask);
  finish(heap, fill, j->k, j->out + q * j->k);
}

static void mih_worker(void *arg, int index) {
  (void)index;
  topk_job *j = arg;
  size_t n = j->c->n;
  fy_pairbuf found = {0};
  ferry_neighbor *tmp = NULL, *heap = malloc((size_t)j->k * sizeof *heap);
  uint16_t *d = malloc(TBLOCK * sizeof *d);
  uint64_t *mask = malloc(TBLOCK / 64 * sizeof *mask);
  size_t tmp_cap = 0;
  if (!heap || !d || !mask)
    j->oom = 1;
  while (!j->oom) {
    size_t q = atomic_fetch_add(&j->next, 1);
    if (q >= n)
      break;
    for (int r = 0;; r++) { /* widen until k are inside */
      if (fy_mih_probes(j->mih, r) > (double)n / 4) {
        scan_one(j, q, heap, d, mask); /* the ball outgrew the data */
        break;
      }
      found.n = 0;
      fy_mih_query(j->mih, q, r, &found);
      if (found.oom) {
        j->oom = 1;
        break;
      }
      if ((int)found.n >= j->k || found.n == n - 1) {
        if (found.n > tmp_cap) {
          free(tmp);
          tmp_cap = found.n;
          tmp = malloc(tmp_cap * sizeof *tmp);
          if (!tmp) {
            j->oom = 1;
            tmp_cap = 0;
            break;
          }
        }
        for (size_t i = 0; i < found.n; i++)
          tmp[i] = (ferry_neighbor){found.p[i].j, found.p[i].distance};
        finish(tmp, (int)found.n, j->k, j->out + q * j->k);
        break;
      }
    }
  }
  free(found.p);
  free(tmp);
  free(heap);
  free(d);
  free(mask);
}

int ferry_hamming_topk(const uint64_t *codes, size_t n, int words, int k,
                       const ferry_search_options *options, ferry_neighbor *out) {
  ferry_search_options def;
  if (!options) {
    ferry_search_options_default(&def);
    options = &def;
  }
  if (!out || (!codes && n))
    return fy_error(FERRY_EINVAL, "ferry_hamming_topk: NULL argument");
  if (words != 1 && words != 4)
    return fy_error(FERRY_EINVAL, "ferry_hamming_topk: words must be 1 or 4, not %d", words);
  if (k < 1 || k > 1 << 16)
    return fy_error(FERRY_EINVAL, "ferry_hamming_topk: k must be 1..65536, not %d", k);
  if (n >= UINT32_MAX)
    return fy_error(FERRY_ETOO_LARGE, "ferry_hamming_topk: %zu codes (at most 2^32 - 2)", n);
  if (options->ndevices) /* src/cuda/hamming_multi.c: the queries shared out */
    return fy_gpu_hamming_topk_multi(options->devices, options->ndevices, codes, n, words, k, out);
  if (FERRY_DEVICE_IS_OPENCL(options->device)) /* src/opencl/hamming_cl.c: k <= 32 */
    return fy_cl_hamming_topk(options->device - FERRY_DEVICE_OPENCL, codes, n, words, k, out);
  if (options->device >= 0) /* src/cuda/hamming_topk.cu: k <= 32 */
    return fy_gpu_hamming_topk(options->device, codes, n, words, k, out);
  if (n == 0)
    return FERRY_OK;
  fy_codes c;
  int rc = fy_codes_init(&c, codes, n, words);
  if (rc)
    return rc;
  topk_job j;
  memset(&j, 0, sizeof j);
  j.c = &c;
  j.kern = fy_search_kernels();
  j.k = k;
  j.out = out;
  atomic_init(&j.next, 0);
  fy_mih *mih = NULL;
  if (options->method == FERRY_SEARCH_MIH) {
    double cost;
    int m = fy_mih_choose(n, 64 * words, 4, &cost);
    rc = fy_mih_build(&c, m ? m : words * 4, &mih);
    if (rc) {
      fy_codes_free(&c);
      return rc;
    }
    j.mih = mih;
  }
  fy_parallel(fy_search_threads(options->threads), mih ? mih_worker : brute_worker, &j);
  fy_mih_free(mih);
  fy_codes_free(&c);
  if (j.oom)
    return fy_error(FERRY_ENOMEM, "ferry_hamming_topk: out of memory");
  return FERRY_OK;
}
