/* groups.c — union-find (path halving, union by size) over the pairs:
 * each connected set of items is one group of near-duplicates. */
#include "search/search.h"

#include <string.h>

int ferry_group_pairs(size_t n, const ferry_pair *pairs, size_t npairs, uint32_t *group_of,
                      size_t *groups) {
  if ((!pairs && npairs) || (!group_of && n) || !groups)
    return fy_error(FERRY_EINVAL, "ferry_group_pairs: NULL argument");
  *groups = 0;
  if (n >= UINT32_MAX)
    return fy_error(FERRY_ETOO_LARGE, "ferry_group_pairs: %zu items", n);
  uint32_t *parent = malloc((n ? n : 1) * sizeof *parent);
  uint32_t *size = malloc((n ? n : 1) * sizeof *size);
  if (!parent || !size) {
    free(parent);
    free(size);
    return fy_error(FERRY_ENOMEM, "ferry_group_pairs: out of memory for %zu items", n);
  }
  for (size_t i = 0; i < n; i++) {
    parent[i] = (uint32_t)i;
    size[i] = 1;
  }
  for (size_t p = 0; p < npairs; p++) {
    if (pairs[p].i >= n || pairs[p].j >= n) {
      free(parent);
      free(size);
      return fy_error(FERRY_EINVAL, "ferry_group_pairs: pair %zu (%u, %u) out of range %zu", p,
                      pairs[p].i, pairs[p].j, n);
    }
    uint32_t a = fy_uf_find(parent, pairs[p].i), b = fy_uf_find(parent, pairs[p].j);
    if (a == b)
      continue;
    if (size[a] < size[b]) {
      uint32_t t = a;
      a = b;
      b = t;
    }
    parent[b] = a;
    size[a] += size[b];
  }
  /* number groups in order of their smallest member; reuse `size` as the
   * root -> group map */
  for (size_t i = 0; i < n; i++) {
    uint32_t r = fy_uf_find(parent, (uint32_t)i);
    if (size[r] < 2) {
      group_of[i] = UINT32_MAX;
      continue;
    }
    if (size[r] != UINT32_MAX && !(size[r] & 0x80000000u)) {
      size[r] = 0x80000000u | (uint32_t)(*groups)++;
    }
    group_of[i] = size[r] & 0x7FFFFFFFu;
  }
  free(parent);
  free(size);
  return FERRY_OK;
}
