/* dupes.c — near-duplicate groups of a catalog: the entries that have the
 * chosen hash go through the Hamming search, the pairs through union-find,
 * and each group gets its keeper: the largest picture (pixels), then the
 * largest file, then the first path. */
#include "catalog/dupes.h"

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

static int keeper_first(const ferry_catalog_entry *a, const ferry_catalog_entry *b) {
  uint64_t pa = (uint64_t)a->width * a->height, pb = (uint64_t)b->width * b->height;
  if (pa != pb)
    return pa > pb ? -1 : 1;
  if (a->size != b->size)
    return a->size > b->size ? -1 : 1;
  return strcmp(a->path, b->path);
}

int ferry_dupes_find(const ferry_catalog *cat, ferry_hash_kind kind,
                     const ferry_search_options *options, ferry_dupes **out) {
  if (!cat || !out || (unsigned)kind >= FERRY_HASH_KIND_COUNT)
    return fy_error(FERRY_EINVAL, "ferry_dupes_find: bad argument");
  *out = NULL;
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
  ferry_pair *pairs = NULL;
  size_t np = 0;
  int rc = ferry_hamming_pairs(d->codes, n, d->words, options, &pairs, &np);
  uint32_t *group_of = malloc((n ? n : 1) * sizeof *group_of);
  size_t ng = 0;
  if (!rc && !group_of)
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  if (!rc)
    rc = ferry_group_pairs(n, pairs, np, group_of, &ng);
  if (rc) {
    ferry_pairs_free(pairs);
    free(group_of);
    ferry_dupes_free(d);
    return rc;
  }
  for (size_t p = 0; p < np; p++) { /* to catalog indices */
    pairs[p].i = d->idx[pairs[p].i];
    pairs[p].j = d->idx[pairs[p].j];
  }
  d->pairs = pairs;
  d->npairs = np;
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
  for (size_t g = 0; g < ng; g++) {
    uint32_t *m = d->members + d->gstart[g];
    size_t cnt = d->gstart[g + 1] - d->gstart[g];
    size_t best = 0;
    for (size_t k = 1; k < cnt; k++)
      if (keeper_first(&cat->entries[m[k]], &cat->entries[m[best]]) < 0)
        best = k;
    uint32_t t = m[0]; /* keeper first, the others in path order */
    m[0] = m[best];
    m[best] = t;
    for (size_t a = 2; a < cnt; a++) /* insertion sort: index order is path order */
      for (size_t b = a; b > 1 && m[b - 1] > m[b]; b--) {
        uint32_t x = m[b];
        m[b] = m[b - 1];
        m[b - 1] = x;
      }
  }
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
  if (members)
    *members = d->members + d->gstart[g];
  return d->gstart[g + 1] - d->gstart[g];
}

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
  free(d);
}
