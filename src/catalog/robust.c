/* robust.c — the second pass of ferry_dupes_find: copies that the hash
 * alone misses (turned by a right angle, mirrored, cropped, letterboxed),
 * found from the entries' signatures (src/hash/signature.c) and verified.
 *
 *   candidates  two entries are candidates when the whole picture of one,
 *               turned any of the eight ways, is within FY_ROBUST_BITS of
 *               256 of the other's whole picture upright or of one of its
 *               five crops, or a crop of one is within them of the same crop
 *               of the other (tested: which kinds of code pairs count). That
 *               covers a copy turned any way, a crop of either (turned too)
 *               and letterboxing (the bars were trimmed). The search runs on
 *               the 64 bits of the 8 x 8 lowest frequencies within
 *               FY_ROBUST_BITS64 (a pair costs a quarter), the whole 256
 *               bits checked after (on the hard set and corpus/dupes, 4,535
 *               of the 4,537 pairs of codes within 48 of 256 are within 12
 *               of 64); on the CPU across (fy_robust_cross, same_crops), on a
 *               GPU one pool of all the codes.
 *   verified    the two thumbnails, each cut to the part its code stands
 *               for, turned as its code is and reduced to 16 x 16, must
 *               correlate (Pearson) at least FY_ROBUST_NCC: different shots
 *               of one scene, whose codes can be close, fail there.
 *   joined      a verified pair joins the two groups, as the hash's pairs do
 *               (it is not counted or listed among the hash's pairs, which
 *               stay those within the threshold; how many joins the
 *               signatures made is: ferry_dupes_signature_joins).
 *
 * Entries already in one group are not verified again, so a group of many
 * near-identical pictures costs a verification per merge, not per pair. */
#include "catalog/dupes.h"
#include "hash/hash.h"
#include "search/search.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Chosen on tests/gen/gen_hardset.py's set and corpus/dupes (docs/DEDUP.md,
 * bench/CLAIMS.md C63): bits of 256, and the correlation a candidate needs. */
#define FY_ROBUST_BITS 48
#define FY_ROBUST_BITS64 12
#define FY_ROBUST_NCC 0.9
#define CODES 14 /* at most per signature: 8 turns of the whole, the whole, 5 crops */
#define TILE 4096
#define V 16 /* verification grid */

typedef struct robust {
  const ferry_catalog *cat;
  const uint32_t *entry; /* code owner (distinct-code index) -> catalog index */
  uint32_t *owner;       /* pool code -> distinct-code index */
  const uint64_t *full;  /* pool code -> its 256 bits */
  uint8_t *meta;         /* pool code -> part * 8 + turn */
  const fy_robust_join *join;
  pthread_mutex_t mu;
  size_t joined;
} robust;

/* Exact-area means of the box (x0, y0, x1, y1) of an n x n thumbnail
 * into an m x m grid. */
static void area(const uint8_t *src, int n, const double box[4], float *dst, int m) {
  double wx[V][FERRY_SIGNATURE_THUMB], wy[V][FERRY_SIGNATURE_THUMB];
  double(*ws[2])[FERRY_SIGNATURE_THUMB] = {wx, wy};
  for (int axis = 0; axis < 2; axis++) {
    double a0 = box[axis], step = (box[axis + 2] - box[axis]) / m;
    for (int o = 0; o < m; o++) {
      double lo = a0 + o * step, hi = lo + step;
      for (int i = 0; i < n; i++) {
        double l = lo > i ? lo : i, h = hi < i + 1 ? hi : i + 1;
        ws[axis][o][i] = h > l ? (h - l) / step : 0;
      }
    }
  }
  for (int y = 0; y < m; y++)
    for (int x = 0; x < m; x++) {
      double s = 0;
      for (int i = 0; i < n; i++) {
        if (wy[y][i] == 0)
          continue;
        double r = 0;
        for (int j = 0; j < n; j++)
          r += wx[x][j] * src[i * n + j];
        s += wy[y][i] * r;
      }
      dst[y * m + x] = (float)s;
    }
}

/* The verification grid of a pool code: its part of the thumbnail, turned. */
static void grid_of(const ferry_signature *s, int meta, float *out) {
  enum { T = FERRY_SIGNATURE_THUMB };
  const double *f = fy_sig_parts[meta >> 3];
  double box[4] = {f[0] * T, f[1] * T, f[2] * T, f[3] * T};
  float g[V * V];
  area(s->thumb, T, box, g, V);
  for (int y = 0; y < V; y++)
    for (int x = 0; x < V; x++)
      out[y * V + x] = g[fy_sig_turn_at(V, meta & 7, y, x)];
}

static double correlation(const float *a, const float *b) {
  double ma = 0, mb = 0;
  for (int i = 0; i < V * V; i++)
    ma += a[i], mb += b[i];
  ma /= V * V, mb /= V * V;
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < V * V; i++) {
    double x = a[i] - ma, y = b[i] - mb;
    ab += x * y, aa += x * x, bb += y * y;
  }
  /* a flat grid says nothing either way: no match */
  return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

static int verify(const robust *r, uint32_t p, uint32_t q) {
  const ferry_signature *a = r->cat->entries[r->entry[r->owner[p]]].signature,
                        *b = r->cat->entries[r->entry[r->owner[q]]].signature;
  float ga[V * V], gb[V * V];
  grid_of(a, r->meta[p], ga);
  grid_of(b, r->meta[q], gb);
  return correlation(ga, gb) >= FY_ROBUST_NCC;
}

/* The kinds of code pairs the CPU's search across tests (a whole turned
 * any way against a whole upright or a crop; a crop against the same crop).
 * The GPU's pool search finds these and more; the others are the same
 * pairs turned (a whole turned v against one turned w is the first turned
 * by w^-1 v against the second upright, found too) or crop against another
 * crop, which the CPU does not test: left out, so that CPU and GPU join the
 * same groups. */
static int tested(uint8_t a, uint8_t b) {
  int pa = a >> 3, pb = b >> 3;
  if (pa == 0 && pb == 0)
    return (a & 7) == 0 || (b & 7) == 0;
  return pa == 0 || pb == 0 || pa == pb;
}

/* From the search's threads: candidates of codes, verified, joined. */
static void take(const ferry_pair *p, size_t n, void *user) {
  robust *r = user;
  const fy_robust_join *j = r->join;
  ferry_pair *keep = malloc(n * sizeof *keep);
  if (!keep)
    return; /* out of memory: these candidates stay apart (never a false join) */
  size_t m = 0, ok = 0;
  /* those not yet in one group (under the join's lock: find compresses) */
  pthread_mutex_lock(j->mu);
  for (size_t k = 0; k < n; k++) {
    uint32_t a = r->owner[p[k].i], b = r->owner[p[k].j];
    if (a == b || !tested(r->meta[p[k].i], r->meta[p[k].j]))
      continue;
    const uint64_t *x = r->full + (size_t)p[k].i * 4, *y = r->full + (size_t)p[k].j * 4;
    int d = 0;
    for (int w = 0; w < 4; w++)
      d += __builtin_popcountll(x[w] ^ y[w]);
    if (d <= FY_ROBUST_BITS && fy_uf_find(j->parent, a) != fy_uf_find(j->parent, b))
      keep[m++] = p[k];
  }
  pthread_mutex_unlock(j->mu);
  for (size_t k = 0; k < m; k++) {
    uint32_t a0 = r->owner[keep[k].i], b0 = r->owner[keep[k].j];
    pthread_mutex_lock(j->mu); /* joined by an earlier candidate of this batch? */
    int still = fy_uf_find(j->parent, a0) != fy_uf_find(j->parent, b0);
    pthread_mutex_unlock(j->mu);
    if (!still)
      continue;
    if (!verify(r, keep[k].i, keep[k].j))
      continue;
    /* joined at once, so that the next candidates of these two are skipped;
     * the roots are the smallest indices, as the hash's joins make them, so
     * the groups do not depend on the order the search found pairs in */
    pthread_mutex_lock(j->mu);
    uint32_t ra = fy_uf_find(j->parent, a0), rb = fy_uf_find(j->parent, b0);
    if (ra != rb) {
      j->parent[ra > rb ? ra : rb] = ra < rb ? ra : rb;
      ok++;
    }
    pthread_mutex_unlock(j->mu);
  }
  free(keep);
  pthread_mutex_lock(&r->mu);
  r->joined += ok;
  pthread_mutex_unlock(&r->mu);
}

/* The CPU's search, across: every pair of a query (a whole picture turned
 * one of the eight ways) and a target (a whole picture upright, or a crop),
 * tiles of the two blocks taken from a shared counter: 48 pairs of codes
 * per pair of files (and 5 more in same_crops), where a pool of all the
 * codes tests 84. */
typedef struct cross {
  const fy_kernels *k;
  fy_codes codes;
  size_t nq, nt, ti, tj;
  int bits;
  atomic_size_t next;
  fy_pairbuf *bufs;
} cross;

static void cross_worker(void *arg, int index) {
  cross *x = arg;
  fy_pairbuf *b = &x->bufs[index];
  for (size_t k; !b->oom && (k = atomic_fetch_add(&x->next, 1)) < x->ti * x->tj;) {
    size_t i0 = k / x->tj * TILE, j0 = x->nq + k % x->tj * TILE;
    size_t i1 = i0 + TILE < x->nq ? i0 + TILE : x->nq;
    size_t j1 = j0 + TILE < x->nq + x->nt ? j0 + TILE : x->nq + x->nt;
    x->k->tile(&x->codes, i0, i1, j0, j1, x->bits, b);
  }
}

/* Crop r of one picture against crop r of the others (a letterboxed copy
 * whose bars were not all trimmed meets its original there): one search
 * per crop, within its codes; pairs mapped back to pool indices. */
typedef struct same_crop {
  robust *r;
  const uint32_t *pool; /* local index -> pool index */
} same_crop;

static void take_same_crop(const ferry_pair *p, size_t n, void *user) {
  same_crop *s = user;
  ferry_pair buf[1024];
  for (size_t k = 0; k < n;) {
    size_t m = 0;
    for (; k < n && m < 1024; k++, m++)
      buf[m] = (ferry_pair){s->pool[p[k].i], s->pool[p[k].j], p[k].distance};
    take(buf, m, s->r);
  }
}

static int same_crops(const uint64_t *low, const uint8_t *meta, size_t from, size_t to,
                      const ferry_search_options *o, robust *r) {
  size_t n = to - from;
  uint64_t *c = malloc((n ? n : 1) * sizeof *c);
  uint32_t *pool = malloc((n ? n : 1) * sizeof *pool);
  int rc = c && pool ? FERRY_OK : fy_error(FERRY_ENOMEM, "dupes: out of memory");
  for (int part = 1; part < FERRY_SIGNATURE_PARTS && !rc; part++) {
    size_t m = 0;
    for (size_t i = from; i < to; i++)
      if (meta[i] == part * 8) {
        c[m] = low[i];
        pool[m++] = (uint32_t)i;
      }
    same_crop s = {r, pool};
    if (m >= 2)
      rc = fy_hamming_pairs_each(c, m, 1, o, take_same_crop, &s);
  }
  free(c);
  free(pool);
  return rc;
}

int fy_robust_cross(const uint64_t *low, size_t nq, size_t nt, int bits, int threads,
                    fy_pair_sink sink, void *user) {
  cross x = {.k = fy_search_kernels(), .nq = nq, .nt = nt, .bits = bits};
  x.ti = (nq + TILE - 1) / TILE;
  x.tj = (nt + TILE - 1) / TILE;
  atomic_init(&x.next, 0);
  int rc = fy_codes_init(&x.codes, low, nq + nt, 1);
  if (rc)
    return rc;
  int n = fy_search_threads(threads);
  x.bufs = calloc((size_t)n, sizeof *x.bufs);
  if (!x.bufs) {
    fy_codes_free(&x.codes);
    return fy_error(FERRY_ENOMEM, "dupes: out of memory");
  }
  for (int t = 0; t < n; t++)
    x.bufs[t] = (fy_pairbuf){.sink = sink, .user = user};
  rc = fy_parallel(n, cross_worker, &x);
  for (int t = 0; t < n; t++) {
    if (x.bufs[t].oom && !rc)
      rc = fy_error(FERRY_ENOMEM, "dupes: out of memory for candidate pairs");
    if (!rc && x.bufs[t].n)
      sink(x.bufs[t].p, x.bufs[t].n, user);
    free(x.bufs[t].p);
  }
  free(x.bufs);
  fy_codes_free(&x.codes);
  return rc;
}

int fy_dupes_robust(const ferry_dupes *d, const uint32_t *urep, size_t nu,
                    const ferry_search_options *options, const fy_robust_join *join,
                    size_t *joined) {
  const ferry_catalog *cat = d->cat;
  *joined = 0;
  uint32_t *entry = malloc((nu ? nu : 1) * sizeof *entry);
  uint64_t *codes = malloc((nu ? nu : 1) * CODES * 4 * sizeof *codes);
  uint64_t *low = malloc((nu ? nu : 1) * CODES * sizeof *low);
  robust r = {.cat = cat, .entry = entry, .join = join};
  r.owner = malloc((nu ? nu : 1) * CODES * sizeof *r.owner);
  r.meta = malloc((nu ? nu : 1) * CODES);
  r.full = codes;
  int rc = entry && codes && low && r.owner && r.meta
               ? FERRY_OK
               : fy_error(FERRY_ENOMEM, "dupes: out of memory for the signatures");
  /* the codes: on the CPU the queries (8 turns of each whole) then the
   * targets (each whole upright and its crops), searched across; on a GPU
   * one pool of the 8 turns and the crops, searched all against all */
  int across = options->device < 0 && !options->ndevices;
  size_t np = 0, nq = 0;
  for (int block = 0; block < (across ? 2 : 1) && !rc; block++) {
    for (size_t u = 0; u < nu; u++) {
      uint32_t e = d->idx[urep[u]];
      entry[u] = e;
      const ferry_signature *s = cat->entries[e].signature;
      if (!s)
        continue;
      /* k: 0-7 the whole turned, 8 the whole upright, 9-13 the crops */
      int k0 = !across ? 0 : block == 0 ? 0 : 8, k1 = !across ? 14 : block == 0 ? 8 : 14;
      for (int k = k0; k < k1; k++) {
        if (!across && k == 8)
          continue; /* in the pool, the upright whole is turn 0 */
        int part = k < 9 ? 0 : k - 8, turn = k < 8 ? k : 0;
        uint64_t *c = codes + np * 4;
        fy_sig_turn(s->code[part], turn, c);
        uint64_t l = 0; /* bits (u, v), u, v < 8: the low 8 of rows 0..7 */
        for (int v = 0; v < 8; v++)
          l |= ((c[v >> 2] >> (16 * (v & 3))) & 0xFF) << (8 * v);
        low[np] = l;
        r.owner[np] = (uint32_t)u;
        r.meta[np] = (uint8_t)(part * 8 + turn);
        np++;
      }
    }
    if (block == 0)
      nq = np;
  }
  if (!rc && np >= 2) {
    ferry_search_options o = *options;
    o.threshold = FY_ROBUST_BITS64;
    o.max_pairs = 0;
    pthread_mutex_init(&r.mu, NULL);
    rc = across ? fy_robust_cross(low, nq, np - nq, FY_ROBUST_BITS64, options->threads, take, &r)
                : fy_hamming_pairs_each(low, np, 1, &o, take, &r);
    if (!rc && across)
      rc = same_crops(low, r.meta, nq, np, &o, &r);
    pthread_mutex_destroy(&r.mu);
    *joined = r.joined;
  }
  free(entry);
  free(codes);
  free(low);
  free(r.owner);
  free(r.meta);
  return rc;
}
