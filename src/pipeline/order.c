/* order.c — shuffling and sharding of an epoch. */
#include "pipeline/pipeline.h"

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
