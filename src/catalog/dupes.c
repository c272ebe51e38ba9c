/* dupes.c — near-duplicate groups of a catalog: the entries that have the
 * chosen hash go through the Hamming search, the pairs through union-find,
 * and each group gets its keeper (keeper.c: by default the camera
 * original, then the largest picture, the largest file, the oldest). */
#include "catalog/dupes.h"
#include "search/search.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int ferry_dupes_default_threshold(ferry_hash_kind kind, int hash_size) {
  /* the thresholds of best pair F1 on the ground truth of
   * ../shared/corpus/dupes, fast and compatible hashes alike (DEDUP.md) */
  static const int t8[FERRY_HASH_KIND_COUNT] = {3, 3, 2, 10, 2, 0};
  static const int t16[FERRY_HASH_KIND_COUNT] = {10, 14, 12, 72, 8, 0};
  if ((unsigned)kind >= FERRY_HASH_KIND_COUNT)
    return 0;
  return hash_size == 16 ? t16[kind] : t8[kind];
}

/* qsort of search indices by code (the codes and their width set just
 * before: ferry_dupes_find is not called from two threads on one catalog
 * at once... but it may be, on two: so thread-local). */
static _Thread_local const uint64_t *sort_codes;
static _Thread_local int sort_words;

static int by_code(const void *pa, const void *pb) {
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  const uint64_t *x = sort_codes + (size_t)a * sort_words, *y = sort_codes + (size_t)b * sort_words;
  for (int w = 0; w < sort_words; w++)
    if (x[w] != y[w])
      return x[w] < y[w] ? -1 : 1;
  return a < b ? -1 : a > b;
}

/* The search's pairs as they stream in (from its threads): joined by
 * union-find, counted, and listed while there are at most
 * FERRY_DUPES_MAX_LISTED_PAIRS, so that a clique of many distinct close
 * codes (k codes: k(k-1)/2 pairs) never has its pairs in memory at once. */
typedef struct pair_sink {
  pthread_mutex_t mu;
  uint32_t *parent;
  const uint32_t *ucount;
  uint64_t total; /* pairs of entries */
  ferry_pair *kept;
  size_t nkept, cap;
  int dropped; /* too many to list: none are */
} pair_sink;

static void take_pairs(const ferry_pair *p, size_t n, void *user) {
  pair_sink *s = user;
  pthread_mutex_lock(&s->mu);
  for (size_t k = 0; k < n; k++) {
    uint32_t a = fy_uf_find(s->parent, p[k].i), b = fy_uf_find(s->parent, p[k].j);
    if (a != b)
      s->parent[a > b ? a : b] = a < b ? a : b;
    s->total += (uint64_t)s->ucount[p[k].i] * s->ucount[p[k].j];
  }
  if (!s->dropped && s->nkept + n > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->nkept + n)
      cap *= 2;
    ferry_pair *q = cap <= FERRY_DUPES_MAX_LISTED_PAIRS ? realloc(s->kept, cap * sizeof *q) : NULL;
    if (q) {
      s->kept = q;
      s->cap = cap;
    } else { /* over the listing limit (or no memory for a list): groups only */
      free(s->kept);
      s->kept = NULL;
      s->nkept = s->cap = 0;
      s->dropped = 1;
    }
  }
  if (!s->dropped) {
    memcpy(s->kept + s->nkept, p, n * sizeof *p);
    s->nkept += n;
  }
  pthread_mutex_unlock(&s->mu);
}

int ferry_dupes_find(const ferry_catalog *cat, ferry_hash_kind kind,
                     const ferry_search_options *options, ferry_dupes **out) {
  if (!cat || !out || (unsigned)kind >= FERRY_HASH_KIND_COUNT)
    return fy_error(FERRY_EINVAL, "ferry_dupes_find: bad argument");
  *out = NULL;
  fy_catalog_ready(cat); /* entries added out of order: sorted by path now */
  if (!(cat->options.kinds & FERRY_HASH_MASK(kind)))
    return fy_error(FERRY_EINVAL, "the catalog has no %s hashes (built with other --hashes)",
                    ferry_hash_kind_name(kind));
  ferry_search_options def;
  if (!options) {
    ferry_search_options_default(&def);
    options = &def;
  }
  ferry_dupes *d = calloc(1, sizeof *d);
  if (!d)
    return fy_error(FERRY_ENOMEM, "out of memory");
  d->cat = cat;
  d->kind = kind;
  d->threshold = options->threshold;
  /* the codes: entries that hashed, packed (colorhash's 42 bits fit one
   * word; 256-bit hashes take four) */
  int bits = 0;
  for (size_t i = 0; i < cat->count && !bits; i++)
    if (!cat->entries[i].status && (cat->entries[i].kinds & FERRY_HASH_MASK(kind)))
      bits = cat->entries[i].hash[kind].bits;
  d->words = bits > 64 ? 4 : 1;
  d->idx = malloc((cat->count ? cat->count : 1) * sizeof *d->idx);
  d->codes = malloc((cat->count ? cat->count : 1) * d->words * sizeof *d->codes);
  if (!d->idx || !d->codes) {
    ferry_dupes_free(d);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  size_t n = 0;
  for (size_t i = 0; i < cat->count; i++) {
    const ferry_catalog_entry *e = &cat->entries[i];
    if (e->status || !(e->kinds & FERRY_HASH_MASK(kind)) || e->hash[kind].bits != bits)
      continue;
    d->idx[n] = (uint32_t)i;
    memcpy(d->codes + n * d->words, e->hash[kind].w, d->words * sizeof *d->codes);
    n++;
  }
  /* Identical codes are searched once: entries sharing a code form a run
   * of the sorted order, stand for each other at distance 0, and the
   * search sees one code per run. A catalog of 100,000 copies of one
   * picture is then one code and one group, not 5e9 pairs in memory. */
  uint32_t *ord = malloc((n ? n : 1) * sizeof *ord), *uid = malloc((n ? n : 1) * sizeof *uid);
  uint64_t *ucodes = malloc((n ? n : 1) * d->words * sizeof *ucodes);
  uint32_t *urep = malloc((n ? n : 1) * sizeof *urep),
           *ucount = malloc((n ? n : 1) * sizeof *ucount);
  int rc =
      ord && uid && ucodes && urep && ucount ? FERRY_OK : fy_error(FERRY_ENOMEM, "out of memory");
  size_t nu = 0;
  if (!rc) {
    for (size_t i = 0; i < n; i++)
      ord[i] = (uint32_t)i;
    sort_codes = d->codes;
    sort_words = d->words;
    qsort(ord, n, sizeof *ord, by_code);
    for (size_t k = 0; k < n; k++) {
      uint32_t i = ord[k];
      if (!k || memcmp(d->codes + (size_t)i * d->words, d->codes + (size_t)ord[k - 1] * d->words,
                       d->words * sizeof *d->codes)) {
        memcpy(ucodes + nu * d->words, d->codes + (size_t)i * d->words,
               d->words * sizeof *d->codes);
        urep[nu] = i; /* the smallest index of the run (ties sorted by index) */
        ucount[nu++] = 0;
      }
      uid[i] = (uint32_t)(nu - 1);
      ucount[nu - 1]++;
    }
  }
  /* union-find over the distinct codes, fed as the search finds pairs */
  uint32_t *parent = rc ? NULL : malloc((nu ? nu : 1) * sizeof *parent);
  if (!rc && !parent)
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  pair_sink sink = {.parent = parent, .ucount = ucount};
  pthread_mutex_init(&sink.mu, NULL);
  if (!rc) {
    for (size_t u = 0; u < nu; u++) {
      parent[u] = (uint32_t)u;
      sink.total += (uint64_t)ucount[u] * (ucount[u] - 1) / 2;
    }
    /* fewer than two distinct codes (an empty catalog, or every file failed):
     * no pair to search, whatever the threshold */
    if (nu >= 2)
      rc = fy_hamming_pairs_each(ucodes, nu, d->words, options, take_pairs, &sink);
    /* then what the hash misses: turned, mirrored, cropped copies (robust.c) */
    if (!rc && nu >= 2 && options->robust && (cat->options.kinds & FERRY_HASH_SIGNATURE)) {
      fy_robust_join join = {&sink.mu, parent};
      rc = fy_dupes_robust(d, urep, nu, options, &join, &d->robust_joined);
      /* and crops at any place (crops.c) */
      if (!rc)
        rc = fy_dupes_crops(d, urep, nu, options, &join, &d->robust_joined);
    }
  }
  pthread_mutex_destroy(&sink.mu);
  ferry_pair *pairs = sink.kept;
  size_t np = sink.nkept;
  uint64_t total = sink.total; /* pairs of entries within the threshold */
  /* groups: components holding two entries or more, numbered in order of
   * their smallest entry (catalog order), as before */
  uint32_t *group_of = rc ? NULL : malloc((n ? n : 1) * sizeof *group_of);
  uint32_t *gid = rc ? NULL : malloc((nu ? nu : 1) * sizeof *gid);
  uint32_t *csize = rc ? NULL : calloc(nu ? nu : 1, sizeof *csize);
  size_t ng = 0;
  if (!rc && (!group_of || !gid || !csize))
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  if (!rc) {
    for (size_t u = 0; u < nu; u++) {
      gid[u] = UINT32_MAX;
      csize[fy_uf_find(parent, (uint32_t)u)] += ucount[u];
    }
    for (size_t i = 0; i < n; i++) { /* index order: groups numbered by smallest member */
      uint32_t r = fy_uf_find(parent, uid[i]);
      if (csize[r] < 2) {
        group_of[i] = UINT32_MAX;
        continue;
      }
      if (gid[r] == UINT32_MAX)
        gid[r] = (uint32_t)ng++;
      group_of[i] = gid[r];
    }
  }
  free(gid);
  free(csize);
  free(parent);
  free(ord);
  if (rc) {
    ferry_pairs_free(pairs);
    free(group_of);
    free(uid);
    free(ucodes);
    free(urep);
    free(ucount);
    ferry_dupes_free(d);
    return rc;
  }
  for (size_t p = 0; p < np; p++) { /* to catalog indices: each code's first entry */
    uint32_t a = d->idx[urep[pairs[p].i]], b = d->idx[urep[pairs[p].j]];
    pairs[p].i = a < b ? a : b;
    pairs[p].j = a < b ? b : a;
  }
  if (np > 1)
    qsort(pairs, np, sizeof *pairs, fy_pair_cmp); /* in order, whatever the threads did */
  free(uid);
  free(ucodes);
  free(urep);
  free(ucount);
  d->pairs = pairs;
  d->npairs = np;
  d->pair_total = total;
  /* members grouped (counting sort by group), keeper first in each */
  d->ngroups = ng;
  d->gstart = calloc(ng + 1, sizeof *d->gstart);
  d->members = malloc((n ? n : 1) * sizeof *d->members);
  if (!d->gstart || !d->members) {
    free(group_of);
    ferry_dupes_free(d);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++)
    if (group_of[i] != UINT32_MAX)
      d->gstart[group_of[i] + 1]++;
  for (size_t g = 0; g < ng; g++)
    d->gstart[g + 1] += d->gstart[g];
  size_t *fill = calloc(ng + 1, sizeof *fill);
  if (!fill) {
    free(group_of);
    ferry_dupes_free(d);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  memcpy(fill, d->gstart, (ng + 1) * sizeof *fill);
  for (size_t i = 0; i < n; i++)
    if (group_of[i] != UINT32_MAX)
      d->members[fill[group_of[i]]++] = d->idx[i];
  free(fill);
  free(group_of);
  fy_dupes_parse_keep(NULL, d->order, &d->norder);
  fy_dupes_order_keepers(d);
  *out = d;
  return FERRY_OK;
}

size_t ferry_dupes_group_count(const ferry_dupes *d) { return d ? d->ngroups : 0; }

size_t ferry_dupes_group(const ferry_dupes *d, size_t g, const uint32_t **members) {
  if (!d || g >= d->ngroups) {
    if (members)
      *members = NULL;
    return 0;
  }
  fy_dupes_settle(d); /* the keepers first (keeper.c) */
  if (members)
    *members = d->members + d->gstart[g];
  return d->gstart[g + 1] - d->gstart[g];
}

uint64_t ferry_dupes_pair_count(const ferry_dupes *d) { return d ? d->pair_total : 0; }

size_t ferry_dupes_signature_joins(const ferry_dupes *d) { return d ? d->robust_joined : 0; }

size_t ferry_dupes_pairs(const ferry_dupes *d, const ferry_pair **pairs) {
  if (pairs)
    *pairs = d ? d->pairs : NULL;
  return d ? d->npairs : 0;
}

int ferry_dupes_distance(const ferry_dupes *d, uint32_t a, uint32_t b) {
  if (!d || a >= d->cat->count || b >= d->cat->count)
    return -1;
  return ferry_hash_distance(&d->cat->entries[a].hash[d->kind], &d->cat->entries[b].hash[d->kind]);
}

void ferry_dupes_free(ferry_dupes *d) {
  if (!d)
    return;
  free(d->idx);
  free(d->codes);
  ferry_pairs_free(d->pairs);
  free(d->gstart);
  free(d->members);
  free(d->ref);
  free(d->camera);
  free(d->decided);
  free(d->apart);
  free(d->apart_start);
  free(d);
}
