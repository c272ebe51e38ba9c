/* order.c — shuffling and sharding of an epoch. */
#include "pipeline/pipeline.h"

#include <string.h>

int64_t fy_epoch_order(int64_t n, int shuffle, uint64_t seed, int epoch, int rank, int world,
                       int drop_last, int64_t *order) {
  for (int64_t i = 0; i < n; i++)
    order[i] = i;
  if (shuffle) {
    /* Fisher-Yates, every draw keyed by (seed, epoch, step): the same on
     * every rank, so ranks agree on the permutation without talking. */
    uint64_t key = ((uint64_t)(uint32_t)epoch << 8) | FY_STREAM_SHUFFLE;
    for (int64_t i = n - 1; i > 0; i--) {
      uint64_t r = fy_rand_u64(seed, key, (uint64_t)i);
      int64_t j = (int64_t)(r % (uint64_t)(i + 1));
      int64_t t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
  }
  int64_t per = drop_last ? n / world : (n - rank + world - 1) / world;
  if (per < 0)
    per = 0;
  for (int64_t k = 0; k < per; k++)
    order[k] = order[rank + k * world];
  return per;
}

/* Shards: the source's samples shard by shard (the shards' order shuffled
 * per epoch), this rank's contiguous run of them (the same counts as
 * fy_epoch_order gives), then a Fisher-Yates whose draws stay within a
 * window of `buffer` positions ahead: sample p comes from input positions
 * p..p+buffer-1, as a WebDataset shuffle buffer of that size yields them. */
int64_t fy_epoch_order_shards(const fy_source *src, int shuffle, int buffer, uint64_t seed,
                              int epoch, int rank, int world, int drop_last, int64_t *order,
                              int64_t *scratch) {
  int64_t n = src->count;
  int32_t ns = src->nshards;
  /* scratch: the shards' order (ns), then where each shard's samples start (ns + 1) */
  int64_t *perm = scratch, *first = scratch + ns;
  for (int32_t k = 0; k <= ns; k++)
    first[k] = 0;
  for (int64_t i = 0; i < n; i++)
    first[src->shard[i] + 1]++;
  for (int32_t k = 0; k < ns; k++)
    first[k + 1] += first[k];
  for (int32_t k = 0; k < ns; k++)
    perm[k] = k;
  uint64_t key = ((uint64_t)(uint32_t)epoch << 8) | FY_STREAM_SHUFFLE;
  if (shuffle)
    for (int32_t k = ns - 1; k > 0; k--) {
      int32_t j = (int32_t)(fy_rand_u64(seed, key | (1ull << 40), (uint64_t)k) % (uint64_t)(k + 1));
      int64_t t = perm[k];
      perm[k] = perm[j];
      perm[j] = t;
    }
  /* samples of a shard are contiguous in the source (listed shard by shard) */
  int64_t at = 0;
  for (int32_t k = 0; k < ns; k++)
    for (int64_t i = first[perm[k]]; i < first[perm[k] + 1]; i++)
      order[at++] = i;
  int64_t per = drop_last ? n / world : (n - rank + world - 1) / world, start = 0;
  if (per < 0)
    per = 0;
  for (int r = 0; r < rank; r++)
    start += drop_last ? n / world : (n - r + world - 1) / world;
  memmove(order, order + start, (size_t)per * sizeof *order);
  if (shuffle && per > 1) {
    int64_t b = buffer > 0 ? buffer : 1000;
    uint64_t rkey = key | ((uint64_t)(uint32_t)(rank + 1) << 41);
    for (int64_t p = 0; p + 1 < per; p++) {
      int64_t w = per - p < b ? per - p : b;
      int64_t j = p + (int64_t)(fy_rand_u64(seed, rkey, (uint64_t)p) % (uint64_t)w);
      int64_t t = order[p];
      order[p] = order[j];
      order[j] = t;
    }
  }
  return per;
}
