/* shard_fd.c — a WebDataset shard's members read through an fd the reading
 * thread keeps open: one pread() per member, not open + lseek + read +
 * close (on NFS, Lustre or GPFS, where shards are kept, each open is a
 * round trip to the metadata server).
 *
 * Per thread, because readers (loader workers, GPU decoder threads, pack
 * builders) call fy_source_read at once: each thread's own few fds need no
 * lock, and pread() leaves the file position alone (one fd could even be
 * shared). A per-source table would need a lock on every read and one fd
 * per shard (thousands), or an eviction that must not close an fd another
 * thread is reading.
 *
 * Bounded whatever the number of shards: FY_SHARD_FDS fds per thread (the
 * least recently used replaced: a shuffle window across a few shards still
 * hits), and in the whole process at most a quarter of RLIMIT_NOFILE's soft
 * limit (read once), 1024 at most; past that a thread reads uncached (open,
 * pread, close), as before.
 *
 * Keyed by (source id, shard index): the id is given once per source when it
 * gets its shards (fy_shard_fd_new_id) and never again, so a source freed and
 * another made at the same address, or another shard, never reads through
 * a wrong fd.
 *
 * Closed: when its thread exits (a pthread key's destructor); in the thread
 * that frees its source, at once (fy_shard_fd_forget); in other threads at
 * their next shard read after any source is freed (an atomic count of frees:
 * a thread that sees it move closes its fds of sources other than the one it
 * reads). A read error (an error from that shard, or one that ends early)
 * closes the fd: the next read opens the shard again.
 *
 * Fork: the fds are O_CLOEXEC (an exec'd child gets none); a forked child
 * keeps the forking thread's fds, which pread() can share with the parent
 * (no file position involved), and holds the other threads' until it exits
 * (within the process's bound, which counts them).
 * A shard replaced on disk (renamed over, or deleted) while its fd is open
 * is still read as the old file until the fd is closed; one rewritten in
 * place is read as it is now (docs/PYTHON.md, WebDataset shards). */
#include "io/shard_fd.h"
#include "core/user_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define FY_SHARD_FDS 4

typedef struct entry {
  uint64_t id; /* 0: empty */
  int32_t shard;
  int fd;
  uint64_t used; /* the thread's tick when last read */
} entry;

typedef struct fd_cache {
  entry e[FY_SHARD_FDS];
  uint64_t tick, frees_seen;
  int keyed; /* the thread-exit destructor is set */
} fd_cache;

static _Thread_local fd_cache mine;

static atomic_ullong last_id, frees;
static atomic_int cached; /* fds kept, all threads */
static int most;          /* at most that many */
static pthread_key_t key;
static int key_ok;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void drop(entry *e) {
  close(e->fd);
  e->id = 0;
  atomic_fetch_sub(&cached, 1);
}

static void thread_exit(void *p) {
  fd_cache *c = p;
  for (int k = 0; k < FY_SHARD_FDS; k++)
    if (c->e[k].id)
      drop(&c->e[k]);
  c->keyed = 0;
}

static void init(void) {
  key_ok = pthread_key_create(&key, thread_exit) == 0;
  struct rlimit r;
  rlim_t n = getrlimit(RLIMIT_NOFILE, &r) == 0 ? r.rlim_cur : 1024;
  most = n == RLIM_INFINITY || n / 4 > 1024 ? 1024 : (int)(n / 4);
}

uint64_t fy_shard_fd_new_id(void) { return atomic_fetch_add(&last_id, 1) + 1; }

void fy_shard_fd_forget(uint64_t id) {
  for (int k = 0; k < FY_SHARD_FDS; k++)
    if (mine.e[k].id == id)
      drop(&mine.e[k]);
  atomic_fetch_add(&frees, 1);
}

/* The thread's entry of (id, shard), or NULL; after a free anywhere, the
 * entries of other sources closed first. */
static entry *find(fd_cache *c, uint64_t id, int32_t shard) {
  uint64_t f = atomic_load_explicit(&frees, memory_order_relaxed);
  if (f != c->frees_seen) {
    c->frees_seen = f;
    for (int k = 0; k < FY_SHARD_FDS; k++)
      if (c->e[k].id && c->e[k].id != id)
        drop(&c->e[k]);
  }
  for (int k = 0; k < FY_SHARD_FDS; k++)
    if (c->e[k].id == id && c->e[k].shard == shard) {
      c->e[k].used = ++c->tick;
      return &c->e[k];
    }
  return NULL;
}

/* Keeps fd as (id, shard) in an empty or the least recently used entry;
 * NULL when it cannot be kept (the process's bound, no destructor). */
static entry *keep(fd_cache *c, uint64_t id, int32_t shard, int fd) {
  pthread_once(&once, init);
  if (!key_ok)
    return NULL;
  entry *e = &c->e[0];
  for (int k = 1; k < FY_SHARD_FDS && e->id; k++)
    if (!c->e[k].id || c->e[k].used < e->used)
      e = &c->e[k];
  if (e->id)
    drop(e);
  if (atomic_fetch_add(&cached, 1) >= most) {
    atomic_fetch_sub(&cached, 1);
    return NULL;
  }
  if (!c->keyed && pthread_setspecific(key, c) != 0) {
    atomic_fetch_sub(&cached, 1);
    return NULL;
  }
  c->keyed = 1;
  *e = (entry){id, shard, fd, ++c->tick};
  return e;
}

int fy_shard_fd_read(uint64_t id, int32_t shard, const char *path, const char *name, uint64_t off,
                     uint64_t len, uint64_t max_bytes, fy_buf *buf, size_t *size) {
  int rc = fy_read_range_check(name, off, len, max_bytes);
  if (rc)
    return rc;
  entry *e = find(&mine, id, shard);
  int fd = e ? e->fd : -1;
  if (!e && (rc = fy_open_regular(path, NULL, &fd)) != FERRY_OK)
    return rc; /* a shard replaced by a FIFO since it was listed: refused, never waited on */
  if (!e)
    e = keep(&mine, id, shard, fd);
  rc = fy_read_range_fd(fd, name, off, len, buf, size);
  if (!e)
    close(fd);
  else if (rc)
    drop(e);
  return rc;
}
