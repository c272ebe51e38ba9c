/* dupes.h — the duplicate groups of a catalog (dupes.c) and their reports
 * (report.c, thumb.c). */
#ifndef FY_DUPES_H
#define FY_DUPES_H

#include "catalog/catalog.h"

#include <stdatomic.h>

#define FY_KEEP_MAX 8

struct ferry_dupes {
  const ferry_catalog *cat;
  ferry_hash_kind kind;
  int threshold, words;
  size_t robust_joined; /* joins made by signatures (robust.c) */
  uint32_t *idx;        /* search index -> catalog index */
  uint64_t *codes;      /* the searched codes */
  ferry_pair *pairs;    /* between distinct codes, as their first entries' catalog indices */
  size_t npairs;
  uint64_t pair_total; /* pairs of entries within the threshold, identical codes included */
  size_t ngroups;
  size_t *gstart;                   /* group g: members[gstart[g] .. gstart[g + 1]) */
  uint32_t *members;                /* catalog indices, keeper first in each group */
  unsigned char order[FY_KEEP_MAX]; /* keeper criteria (keeper.c) */
  int norder;
  unsigned char *ref;     /* per catalog entry: under a reference folder; NULL: none */
  signed char *camera;    /* per catalog entry: a camera's JPEG (keeper.c), -1 not read yet */
  atomic_int keepers_due; /* the keeper order not applied to members yet (keeper.c) */
  /* a decisions file applied (decisions.c): per catalog entry 1 a chosen
   * keeper, 2 never moved (NULL: none); its not_duplicates sets, as catalog
   * indices (set s: apart[apart_start[s] .. apart_start[s + 1])), for the
   * page to carry into the next file it saves */
  unsigned char *decided;
  uint32_t *apart;
  size_t *apart_start, napart_sets;
};

/* keeper.c: the criteria of `order` (NULL: FERRY_KEEP_DEFAULT) into out[]
 * and *n, or FERRY_EINVAL naming the bad one. fy_dupes_order_keepers makes
 * d's criteria due; fy_dupes_settle (every reader of the groups' members
 * calls it first: ferry_dupes_group; ferry_dupes_keep at once) applies them
 * once: each group's keeper put first (reference files first), the others
 * in path order. So ferry_dupes_find's default order is never applied when
 * a keep rule is set before the groups are read (no file read for a rule
 * that does not ask for it). */
int fy_dupes_parse_keep(const char *order, unsigned char *out, int *n);
void fy_dupes_order_keepers(ferry_dupes *d);
void fy_dupes_settle(const ferry_dupes *d);
/* d's keeper rules in words ("original, pixels, ..."), for the reports. */
const char *fy_dupes_keep_describe(const ferry_dupes *d, char *buf, size_t n);

/* robust.c: the union-find of ferry_dupes_find (over its distinct codes,
 * roots the smallest index of their component), guarded by mu. */
typedef struct fy_robust_join {
  pthread_mutex_t *mu;
  uint32_t *parent;
} fy_robust_join;
/* Joins the distinct codes (urep[u]: the search index of code u's first
 * entry) whose entries' signatures match turned, mirrored, cropped or
 * letterboxed and pass the verification; *joined gets how many joins. The
 * search runs with options' threads and device. */
int fy_dupes_robust(const ferry_dupes *d, const uint32_t *urep, size_t nu,
                    const ferry_search_options *options, const fy_robust_join *join,
                    size_t *joined);
/* The CPU's search across, on 64-bit codes: every pair (query i < nq,
 * target nq <= j < nq + nt) within `bits`, handed to sink from the
 * threads. */
int fy_robust_cross(const uint64_t *low, size_t nq, size_t nt, int bits, int threads,
                    void (*sink)(const ferry_pair *, size_t, void *), void *user);
/* crops.c: the same for crops at any place (a picture's whole within a
 * window of another's, aligned and verified); *joined adds its joins. */
int fy_dupes_crops(const ferry_dupes *d, const uint32_t *urep, size_t nu,
                   const ferry_search_options *options, const fy_robust_join *join, size_t *joined);

/* decisions.c: the decision of catalog entry i: 0 none, 1 a chosen
 * keeper, 2 never moved. */
int fy_dupes_decided(const ferry_dupes *d, uint32_t index);

/* A small JPEG of the picture in `path` (upright, at most `box` pixels on
 * its long side): *jpeg (malloc'd) and *size, or an error. */
int fy_thumbnail(const char *path, int box, uint8_t **jpeg, size_t *size);

#endif
