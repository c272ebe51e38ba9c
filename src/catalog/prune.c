/* prune.c — entries whose file is gone: dropped from a catalog in memory
 * (`ferry dupes` never lists them) or from the catalog file (`ferry index
 * prune`, rewritten atomically under the catalog's lock); entries a user
 * excludes (`ferry dupes --exclude`), in memory. */
#include "catalog/catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int fy_file_gone(const char *path) {
  struct stat st;
  return lstat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
}

/* Entries for which drop(entry, arg) holds leave the catalog in memory. */
static void drop_if(ferry_catalog *c, int (*drop)(const ferry_catalog_entry *, const void *),
                    const void *arg, size_t *removed) {
  size_t w = 0;
  for (size_t i = 0; i < c->count; i++)
    if (!drop(&c->entries[i], arg))
      c->entries[w++] = c->entries[i]; /* strings stay in the arena */
  if (removed)
    *removed = c->count - w;
  c->count = w;
}

static int gone(const ferry_catalog_entry *e, const void *arg) {
  (void)arg;
  return fy_file_gone(e->path);
}

int ferry_catalog_drop_missing(ferry_catalog *c, size_t *removed) {
  if (removed)
    *removed = 0;
  if (!c)
    return fy_error(FERRY_EINVAL, "ferry_catalog_drop_missing: NULL catalog");
  drop_if(c, gone, NULL, removed);
  return FERRY_OK;
}

typedef struct patterns {
  const char *const *p;
  size_t n;
} patterns;

static int excluded(const ferry_catalog_entry *e, const void *arg) {
  const patterns *ps = arg;
  for (size_t i = 0; i < ps->n; i++)
    if (fnmatch(ps->p[i], e->path, 0) == 0 || fy_path_under(e->path, ps->p[i]))
      return 1;
  return 0;
}

int ferry_catalog_drop_matching(ferry_catalog *c, const char *const *pattern, size_t n,
                                size_t *removed) {
  if (removed)
    *removed = 0;
  if (!c || (n && !pattern))
    return fy_error(FERRY_EINVAL, "ferry_catalog_drop_matching: bad argument");
  for (size_t i = 0; i < n; i++)
    if (!pattern[i] || !pattern[i][0])
      return fy_error(FERRY_EINVAL, "ferry_catalog_drop_matching: an empty pattern");
  patterns ps = {pattern, n};
  drop_if(c, excluded, &ps, removed);
  return FERRY_OK;
}

int fy_catalog_lock(const char *index_path, fy_catalog_lock_t *lock) {
  size_t n = strlen(index_path) + 9;
  lock->path = malloc(n);
  lock->fd = -1;
  lock->created = 0;
  if (!lock->path)
    return fy_error(FERRY_ENOMEM, "out of memory");
  snprintf(lock->path, n, "%s.journal", index_path); /* the lock ferry hash takes */
  lock->created = access(lock->path, F_OK) != 0;
  lock->fd = fy_journal_open_fd(lock->path);
  int rc = FERRY_OK;
  if (lock->fd < 0)
    rc = fy_journal_open_error(lock->path, "the journal (the catalog's lock)");
  else if (flock(lock->fd, LOCK_EX | LOCK_NB) != 0)
    rc = fy_error(FERRY_ESTATE, "%s: another ferry is updating this catalog", index_path);
  if (rc) {
    if (lock->fd >= 0)
      close(lock->fd);
    free(lock->path);
    lock->path = NULL;
    lock->fd = -1;
  }
  return rc;
}

void fy_catalog_unlock(fy_catalog_lock_t *lock) {
  if (lock->fd < 0)
    return;
  struct stat st;
  /* the empty journal made only to lock is not left behind; a run's
   * journal (records to resume) is never touched */
  if (lock->created && fstat(lock->fd, &st) == 0 && st.st_size == 0)
    unlink(lock->path);
  close(lock->fd);
  free(lock->path);
  lock->path = NULL;
  lock->fd = -1;
}

int ferry_index_prune(const char *index_path, size_t *removed) {
  if (removed)
    *removed = 0;
  if (!index_path)
    return fy_error(FERRY_EINVAL, "ferry_index_prune: NULL path");
  fy_catalog_lock_t lock;
  int rc = fy_catalog_lock(index_path, &lock);
  if (rc)
    return rc;
  ferry_catalog *c = NULL;
  size_t gone = 0;
  rc = ferry_catalog_load(index_path, &c);
  if (!rc)
    rc = ferry_catalog_drop_missing(c, &gone);
  if (!rc && gone)
    rc = fy_catalog_save(c, index_path);
  if (!rc && removed)
    *removed = gone;
  ferry_catalog_free(c);
  fy_catalog_unlock(&lock);
  return rc;
}
