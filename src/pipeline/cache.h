/* cache.h — the loader's memory cache: each sample as first made (the
 * loader's output, or the u8 staging image on a GPU), kept while the
 * budget allows, served in later epochs instead of being made again.
 *
 * Lock-free: every thread reads and fills it at once. An item is published
 * with a release store and read with an acquire load; the bytes held are
 * counted with relaxed atomics (a sample is counted before it is copied,
 * and uncounted when it does not fit). The geometry (items' size, budget)
 * is set by fy_cache_init before any thread starts and read-only after. */
#ifndef FY_CACHE_H
#define FY_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct fy_cache {
  uint8_t **items; /* per source index: the sample as stored, or NULL (atomic); NULL: off */
  int64_t count;   /* source indices */
  size_t item;     /* bytes of one cached sample */
  uint64_t budget; /* most bytes held */
  uint64_t used;   /* bytes held (atomic) */
} fy_cache;

/* Turns the cache on for count samples of item bytes each, within budget
 * bytes; FERRY_OK or FERRY_ENOMEM (error set). */
int fy_cache_init(fy_cache *c, int64_t count, size_t item, uint64_t budget);
/* Frees what it holds (no thread may use it any more); off: nothing. */
void fy_cache_free(fy_cache *c);
/* 1 when the cache is on. */
static inline int fy_cache_on(const fy_cache *c) { return c->items != NULL; }
/* Serves sample idx into dst (with streaming stores when `stream`): 1 if
 * it was there. */
int fy_cache_get(fy_cache *c, int64_t idx, void *dst, int stream);
/* Keeps a copy of a freshly made sample while the budget allows. */
void fy_cache_put(fy_cache *c, int64_t idx, const void *src);
/* With the cache on: 1 while its budget has room for a sample. */
int fy_cache_has_room(fy_cache *c);
/* With the cache on: 1 when sample idx is cached or the budget still has
 * room for it, i.e. the CPU path should make it (the JPEG engine's samples
 * never pass through host memory, so they cannot be kept). */
int fy_cache_wants(fy_cache *c, int64_t idx);

#endif
