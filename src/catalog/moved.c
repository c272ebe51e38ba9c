/* moved.c — files a catalog already hashed under another path: a file new
 * to the catalog with the name, size and mtime (ns) of an entry whose file
 * is gone is that file moved (`mv` and most copy tools that keep times), and
 * keeps its hashes. A copy (the old file still there) is never taken. */
#include "catalog/catalog.h"

#include <stdlib.h>
#include <string.h>

static const char *base(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static int cmp_key(const fy_moved_key *a, uint64_t size, int64_t mtime, const char *name) {
  if (a->size != size)
    return a->size < size ? -1 : 1;
  if (a->mtime_ns != mtime)
    return a->mtime_ns < mtime ? -1 : 1;
  return strcmp(a->name, name);
}

static int by_key(const void *x, const void *y) {
  const fy_moved_key *a = x, *b = y;
  int c = cmp_key(a, b->size, b->mtime_ns, b->name);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

int fy_moved_init(fy_moved *m, const ferry_catalog *c) {
  memset(m, 0, sizeof *m);
  m->cat = c;
  if (!c || !c->count)
    return FERRY_OK;
  m->keys = malloc(c->count * sizeof *m->keys);
  m->taken = calloc(c->count, 1);
  if (!m->keys || !m->taken) {
    fy_moved_free(m);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < c->count; i++) {
    const ferry_catalog_entry *e = &c->entries[i];
    m->keys[i] = (fy_moved_key){e->size, e->mtime_ns, base(e->path), i};
  }
  qsort(m->keys, c->count, sizeof *m->keys, by_key);
  m->n = c->count;
  return FERRY_OK;
}

const ferry_catalog_entry *fy_moved_find(fy_moved *m, const char *path, uint64_t size,
                                         int64_t mtime_ns) {
  const char *name = base(path);
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_key(&m->keys[mid], size, mtime_ns, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (; lo < m->n; lo++) {
    size_t i = m->keys[lo].i;
    const ferry_catalog_entry *e = &m->cat->entries[i];
    if (cmp_key(&m->keys[lo], size, mtime_ns, name))
      break;
    if (m->taken[i] || e->status != FERRY_OK || !strcmp(e->path, path) || !fy_file_gone(e->path))
      continue;
    m->taken[i] = 1;
    return e;
  }
  return NULL;
}

int fy_moved_taken(const fy_moved *m, size_t i) { return m->taken && m->taken[i]; }

void fy_moved_free(fy_moved *m) {
  free(m->keys);
  free(m->taken);
  memset(m, 0, sizeof *m);
}
