/* brute.c — every pair, tile by tile. The upper triangle of the pair
 * matrix is cut into T x T tiles (T targets fit in L1/L2 while the queries
 * of the tile stream past them); threads take tiles from a shared counter,
 * so a slow or missing thread never holds the others back. */
#include "search/search.h"

#include <stdatomic.h>
#include <string.h>

int fy_codes_init(fy_codes *c, const uint64_t *codes, size_t n, int words) {
  memset(c, 0, sizeof *c);
  c->aos = codes;
  c->n = n;
  c->words = words;
  if (words == 1 || n == 0)
    return FERRY_OK;
  size_t bytes;
  if (!fy_mul_size(n, 4 * sizeof(uint64_t), &bytes))
    return fy_error(FERRY_ETOO_LARGE, "search: %zu codes overflow", n);
  uint64_t *p = malloc(bytes + 64); /* + slack: vector loads past the end */
  if (!p)
    return fy_error(FERRY_ENOMEM, "search: out of memory for %zu codes", n);
  for (size_t i = 0; i < n; i++)
    for (int w = 0; w < 4; w++)
      p[w * n + i] = codes[i * 4 + w];
  c->plane = p;
  return FERRY_OK;
}

void fy_codes_free(fy_codes *c) {
  free((void *)c->plane);
  c->plane = NULL;
}

typedef struct brute_job {
  const fy_codes *c;
  const fy_kernels *k;
  int t;
  size_t tile, blocks, tiles, max_pairs;
  atomic_size_t next, total;
  atomic_int stop;
  fy_pairbuf *bufs;
} brute_job;

/* Row and column block of linear tile x (row r holds blocks - r tiles). */
static void tile_at(size_t x, size_t blocks, size_t *r, size_t *col) {
  size_t row = 0;
  while (x >= blocks - row) {
    x -= blocks - row;
    row++;
  }
  *r = row;
  *col = row + x;
}

static void brute_worker(void *arg, int index) {
  brute_job *j = arg;
  fy_pairbuf *out = &j->bufs[index];
  size_t n = j->c->n;
  for (;;) {
    size_t x = atomic_fetch_add(&j->next, 1);
    if (x >= j->tiles || atomic_load(&j->stop))
      return;
    size_t r, col; /* a walk of at most `blocks` steps: nothing next to a tile */
    tile_at(x, j->blocks, &r, &col);
    size_t i0 = r * j->tile, i1 = i0 + j->tile < n ? i0 + j->tile : n;
    size_t j0 = col * j->tile, j1 = j0 + j->tile < n ? j0 + j->tile : n;
    size_t before = out->n;
    j->k->tile(j->c, i0, i1, j0, j1, j->t, out);
    if (fy_pairs_over(out, before, &j->total, j->max_pairs)) {
      atomic_store(&j->stop, 1);
      return;
    }
  }
}

int fy_pairs_brute(const fy_codes *c, int t, int threads, size_t max_pairs, fy_pairbuf *bufs) {
  brute_job j;
  memset(&j, 0, sizeof j);
  j.c = c;
  j.k = fy_search_kernels();
  j.t = t;
  j.tile = c->words == 1 ? 4096 : 2048;
  j.blocks = (c->n + j.tile - 1) / j.tile;
  j.tiles = j.blocks * (j.blocks + 1) / 2;
  j.max_pairs = max_pairs;
  j.bufs = bufs;
  atomic_init(&j.next, 0);
  atomic_init(&j.total, 0);
  atomic_init(&j.stop, 0);
  fy_parallel(threads, brute_worker, &j);
  for (int i = 0; i < threads; i++)
    if (bufs[i].oom)
      return fy_error(FERRY_ENOMEM, "search: out of memory for the pairs found");
  if (atomic_load(&j.stop))
    return fy_error(FERRY_ETOO_LARGE, "search: more than %zu pairs within distance %d", max_pairs,
                    t);
  return FERRY_OK;
}

double fy_brute_cost_ns(const fy_kernels *k, size_t n, int words, int threads) {
  /* measured on a Zen 4 core at 3.4 GHz, per pair of 64-bit codes */
  double per_pair = !strcmp(k->name, "avx512")   ? 0.05
                    : !strcmp(k->name, "avx2")   ? 0.12
                    : !strcmp(k->name, "popcnt") ? 0.3
                                                 : 1.5;
  if (words == 4)
    per_pair *= 3.5;
  return per_pair * (double)n * (double)(n - 1) / 2.0 / (threads > 0 ? threads : 1);
}
