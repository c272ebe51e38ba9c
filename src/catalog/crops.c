/* crops.c — the third step of ferry_dupes_find: crops at any place (10-25 %
 * or so cut from each side, anywhere), which the signature's five fixed
 * 90 % crops (robust.c) miss. From the signatures' thumbnails only
 * (src/hash/sigwin.c), so any catalog with signatures has what it needs.
 *
 *   candidates  the whole code of one picture (64 bits) within
 *               FY_CROP_BITS of the code of one of the FY_SIG_WINDOWS
 *               windows of another: "A may be a crop of B, about there";
 *               the CPU's tiled search across (fy_robust_cross), queries
 *               the wholes, targets the windows (64 per picture).
 *   verified    the window aligned (fy_sig_crop_align: place and size
 *               refined on B's thumbnail) and A's whole grid must then
 *               correlate at least FY_CROP_NCC, at the crop's pixel scale
 *               (FY_CROP_SCALE): different shots of one
 *               scene, overlapping but not one inside the other, fail
 *               there (tested on tests/gen/gen_hardset.py's look-alikes:
 *               other crops of the same scene).
 *   joined      as robust.c's pairs (counted in
 *               ferry_dupes_signature_joins).
 *
 * Upright only: a crop that is also turned or mirrored is not looked for.
 * Entries already in one group are not verified again. */
#include "catalog/dupes.h"
#include "hash/hash.h"
#include "search/search.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Chosen on tests/gen/gen_hardset.py's sets (seeds 7 and 1234) and
 * corpus/dupes (docs/DEDUP.md): bits of 64 for a candidate, the
 * correlation an aligned crop needs, and below which it is not aligned. */
#define FY_CROP_BITS 12
#define FY_CROP_NCC 0.91
#define FY_CROP_FLOOR 0.6
/* A crop keeps the pixels' scale: the crop's width and height over the
 * aligned window's, in pixels of the other, within this of 1 (a resized
 * crop is not looked for; corpus/dupes' distinct pictures, other crops of
 * one photo at other scales, 0.7-1.7, stay apart). */
#define FY_CROP_SCALE 0.1

enum { GG = FY_SIG_WIN_GRID * FY_SIG_WIN_GRID };

typedef struct crops {
  const ferry_catalog *cat;
  const fy_robust_join *join;
  const uint32_t *entry; /* picture (with a signature) -> catalog index */
  const uint32_t *code;  /* picture -> distinct-code index (the join's) */
  size_t n;
  uint64_t *low;      /* n wholes, then n * FY_SIG_WINDOWS windows */
  float *grid;        /* picture -> its whole grid */
  atomic_size_t next; /* the pictures' codes, a picture at a time */
  pthread_mutex_t mu;
  size_t joined;
} crops;

static const uint8_t *thumb_of(const crops *c, size_t p) {
  return c->cat->entries[c->entry[p]].signature->thumb;
}

static void codes_worker(void *arg, int index) {
  (void)index;
  crops *c = arg;
  for (size_t p; (p = atomic_fetch_add(&c->next, 1)) < c->n;) {
    const uint8_t *t = thumb_of(c, p);
    c->low[p] = fy_sig_whole_code(t, c->grid + p * GG);
    fy_sig_window_codes(t, c->low + c->n + p * FY_SIG_WINDOWS);
  }
}

/* Is the crop p at the pixels' scale of the window box of q? */
static int same_scale(const crops *c, size_t p, size_t q, const double box[4], double slack) {
  const ferry_catalog_entry *a = &c->cat->entries[c->entry[p]], *b = &c->cat->entries[c->entry[q]];
  double sx = a->width / (box[2] * b->width), sy = a->height / (box[3] * b->height);
  return fabs(sx - 1) <= FY_CROP_SCALE + slack && fabs(sy - 1) <= FY_CROP_SCALE + slack;
}

static int joined_already(const crops *c, uint32_t a, uint32_t b) {
  pthread_mutex_lock(c->join->mu);
  int same = fy_uf_find(c->join->parent, a) == fy_uf_find(c->join->parent, b);
  pthread_mutex_unlock(c->join->mu);
  return same;
}

/* From the search's threads: (whole of p, window k of q) candidates. */
static void take(const ferry_pair *pairs, size_t n, void *user) {
  crops *c = user;
  size_t ok = 0;
  for (size_t k = 0; k < n; k++) {
    size_t p = pairs[k].i, t = pairs[k].j - c->n, q = t / FY_SIG_WINDOWS;
    uint32_t a = c->code[p], b = c->code[q];
    if (a == b || joined_already(c, a, b))
      continue;
    double box[4];
    fy_sig_window((int)(t % FY_SIG_WINDOWS), box);
    /* the window is within 5 % of the crop's ends: far from its scale, no
     * alignment will bring it there */
    if (!same_scale(c, p, q, box, 0.15) ||
        fy_sig_crop_align(thumb_of(c, q), c->grid + p * GG, box, FY_CROP_FLOOR) < FY_CROP_NCC ||
        !same_scale(c, p, q, box, 0))
      continue;
    /* roots the smallest indices, as every join makes them */
    pthread_mutex_lock(c->join->mu);
    uint32_t ra = fy_uf_find(c->join->parent, a), rb = fy_uf_find(c->join->parent, b);
    if (ra != rb) {
      c->join->parent[ra > rb ? ra : rb] = ra < rb ? ra : rb;
      ok++;
    }
    pthread_mutex_unlock(c->join->mu);
  }
  pthread_mutex_lock(&c->mu);
  c->joined += ok;
  pthread_mutex_unlock(&c->mu);
}

int fy_dupes_crops(const ferry_dupes *d, const uint32_t *urep, size_t nu,
                   const ferry_search_options *options, const fy_robust_join *join,
                   size_t *joined) {
  const ferry_catalog *cat = d->cat;
  size_t m = nu ? nu : 1;
  uint32_t *entry = malloc(m * sizeof *entry), *code = malloc(m * sizeof *code);
  crops c = {.cat = cat, .join = join, .entry = entry, .code = code};
  c.low = malloc(m * (1 + FY_SIG_WINDOWS) * sizeof *c.low);
  c.grid = malloc(m * GG * sizeof *c.grid);
  int rc = entry && code && c.low && c.grid
               ? FERRY_OK
               : fy_error(FERRY_ENOMEM, "dupes: out of memory for the crops' codes");
  for (size_t u = 0; u < nu && !rc; u++) {
    uint32_t e = d->idx[urep[u]];
    if (!cat->entries[e].signature)
      continue;
    entry[c.n] = e;
    code[c.n++] = (uint32_t)u;
  }
  if (!rc && c.n >= 2) {
    /* the wholes, then the windows after them */
    atomic_init(&c.next, 0);
    rc = fy_parallel(fy_search_threads(options->threads), codes_worker, &c);
    if (!rc) {
      pthread_mutex_init(&c.mu, NULL);
      rc = fy_robust_cross(c.low, c.n, c.n * FY_SIG_WINDOWS, FY_CROP_BITS, options->threads, take,
                           &c);
      pthread_mutex_destroy(&c.mu);
      *joined += c.joined;
    }
  }
  free(entry);
  free(code);
  free(c.low);
  free(c.grid);
  return rc;
}
