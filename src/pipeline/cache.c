/* cache.c — the loader's memory cache (cache.h). */
#include "pipeline/cache.h"

#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

int fy_cache_init(fy_cache *c, int64_t count, size_t item, uint64_t budget) {
  c->item = item;
  c->budget = budget;
  c->count = count;
  c->items = calloc((size_t)count, sizeof *c->items);
  if (!c->items)
    return fy_error(FERRY_ENOMEM, "loader: out of memory");
  return FERRY_OK;
}

void fy_cache_free(fy_cache *c) {
  for (int64_t i = 0; c->items && i < c->count; i++)
    free(c->items[i]);
  free(c->items);
  c->items = NULL;
}

int fy_cache_get(fy_cache *c, int64_t idx, void *dst, int stream) {
  const uint8_t *p = c->items ? __atomic_load_n(&c->items[idx], __ATOMIC_ACQUIRE) : NULL;
  if (!p)
    return 0;
  if (stream)
    fy_copy_stream(dst, p, c->item);
  else
    memcpy(dst, p, c->item);
  return 1;
}

int fy_cache_has_room(fy_cache *c) {
  return c->items && __atomic_load_n(&c->used, __ATOMIC_RELAXED) + c->item <= c->budget;
}

int fy_cache_wants(fy_cache *c, int64_t idx) {
  return c->items &&
         (__atomic_load_n(&c->items[idx], __ATOMIC_ACQUIRE) != NULL || fy_cache_has_room(c));
}

void fy_cache_put(fy_cache *c, int64_t idx, const void *src) {
  if (!c->items || __atomic_load_n(&c->items[idx], __ATOMIC_ACQUIRE))
    return;
  uint64_t n = c->item;
  if (__atomic_add_fetch(&c->used, n, __ATOMIC_RELAXED) > c->budget) {
    __atomic_sub_fetch(&c->used, n, __ATOMIC_RELAXED);
    return; /* full: later samples are made each epoch */
  }
  uint8_t *p = malloc(n);
  if (!p) {
    __atomic_sub_fetch(&c->used, n, __ATOMIC_RELAXED);
    return;
  }
  memcpy(p, src, n);
  __atomic_store_n(&c->items[idx], p, __ATOMIC_RELEASE);
}
