/* catalog_update.c — ferry_index_update: find the files, decide which need hashing,
 * hash them on the hashing driver (hash/run.h: every core, and on a GPU its
 * hash queue or JPEG engine), journal each result as it arrives, then
 * write the new index atomically and drop the journal.
 *
 * The driver's threads hand each result to a queue; the calling thread
 * alone writes the journal, reports progress and errors, and syncs the
 * journal every checkpoint_s. */
#include "catalog/catalog.h"
#include "core/user_file.h"
#include "cuda/hash_gpu.h"
#include "hash/hash.h"
#include "hash/run.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void ferry_index_options_default(ferry_index_options *o) {
  memset(o, 0, sizeof *o);
  ferry_hash_options_default(&o->hash);
  /* 256-bit hashes: on the duplicate ground truth, pHash-256 separates the
   * groups far better than pHash-64 (pair F1 0.99 against 0.93, see
   * docs/DEDUP.md) for a few more bytes per file */
  o->hash.hash_size = 16;
  /* and the signatures that `ferry dupes` finds turned, mirrored, cropped
   * and letterboxed copies with (768 bytes per file) */
  o->hash.kinds |= FERRY_HASH_SIGNATURE;
  o->recursive = 1;
  o->checkpoint_s = 1.0;
  o->device = -1;
  o->rank = 0;
  o->world_size = 1;
  o->engine_min_s = FY_ENGINE_MIN_S_DEFAULT;
}

/* Keeps in `l` only the files that fall to `rank`; returns how many left. */
static size_t keep_share(fy_found_list *l, char *const *roots, int nroots, int rank, int world) {
  size_t kept = 0, n = l->n;
  for (size_t i = 0; i < n; i++) {
    if (fy_share_rank(l->v[i].path, (const char *const *)roots, nroots, world) == rank)
      l->v[kept++] = l->v[i];
    else
      free(l->v[i].path);
  }
  l->n = kept;
  return n - kept;
}

/* A result handed from a worker to the calling thread. */
typedef struct result {
  ferry_catalog_entry e;
  char *error;          /* owned; e.error points here */
  ferry_signature *sig; /* owned; e.signature points here */
  int exact;            /* the hash result's exact (compatible mode: Pillow's pixels) */
} result;

typedef struct run {
  const fy_found *files;
  const size_t *todo;
  result *res;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t *queue, qn; /* finished slots, in order of completion */
} run;

static void fill_entry(ferry_catalog_entry *e, const fy_found *f) {
  memset(e, 0, sizeof *e);
  e->path = f->path;
  e->size = f->size;
  e->mtime_ns = f->mtime_ns;
  e->error = "";
}

/* The outcome of one file: its hashes, or its error (only the format kept). */
static void settle(result *res, int rc, const ferry_hash_result *hr, const char *msg) {
  ferry_catalog_entry *e = &res->e;
  e->format = hr->format;
  res->exact = hr->exact;
  if (rc == FERRY_OK) {
    e->width = hr->width;
    e->height = hr->height;
    e->kinds = hr->kinds;
    memcpy(e->hash, hr->hash, sizeof hr->hash);
    if (hr->kinds & FERRY_HASH_SIGNATURE) {
      if (!(res->sig = malloc(sizeof *res->sig))) {
        rc = fy_error(FERRY_ENOMEM, "%s: out of memory", e->path);
        msg = ferry_last_error();
      } else {
        memcpy(res->sig, &hr->signature, sizeof *res->sig);
        e->signature = res->sig;
        return;
      }
    } else {
      return;
    }
  }
  e->width = e->height = 0;
  e->kinds = 0;
  memset(e->hash, 0, sizeof e->hash);
  e->status = rc;
  res->error = strdup(msg ? msg : "error");
  e->error = res->error ? res->error : "error";
}

static const char *run_path(void *user, size_t k) {
  run *r = user;
  return r->files[r->todo[k]].path;
}

/* From the driver's threads: slot k is done, to the calling thread. */
static void run_done(void *user, size_t k, int status, const ferry_hash_result *hr,
                     const char *error) {
  run *r = user;
  result *res = &r->res[k];
  fill_entry(&res->e, &r->files[r->todo[k]]);
  settle(res, status, hr, error);
  pthread_mutex_lock(&r->mu);
  r->queue[r->qn++] = k;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static void default_error(void *user, const char *path, int status, const char *msg) {
  (void)user;
  (void)path;
  (void)status;
  fy_log(FERRY_LOG_WARNING, "%s", msg);
}

/* Failures worth another try next time (the file itself may be fine). */
static int transient(int status) {
  return status == FERRY_EIO || status == FERRY_ENOMEM || status == FERRY_EINTERNAL;
}

/* Hashes files[todo[...]]; every result goes to the journal and into `into`. */
static int hash_all(const fy_found *files, const size_t *todo, size_t ntodo,
                    const ferry_index_options *o, fy_journal *jn, ferry_catalog *into,
                    ferry_index_stats *st, ferry_index_progress *pg, double t0) {
  run r;
  memset(&r, 0, sizeof r);
  r.files = files;
  r.todo = todo;
  r.res = calloc(ntodo ? ntodo : 1, sizeof *r.res);
  r.queue = malloc((ntodo ? ntodo : 1) * sizeof *r.queue);
  if (!r.res || !r.queue) {
    free(r.res);
    free(r.queue);
    return fy_error(FERRY_ENOMEM, "out of memory for %zu files", ntodo);
  }
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.cv, NULL);
  fy_hash_sink sink = {run_path, run_done, &r};
  fy_hash_run *hr = NULL;
  int rc = fy_hash_run_start(&o->hash, ntodo, o->threads, o->device, o->engine_min_s, &sink, &hr);
  if (rc) {
    free(r.res);
    free(r.queue);
    pthread_mutex_destroy(&r.mu);
    pthread_cond_destroy(&r.cv);
    return rc;
  }
  void (*on_error)(void *, const char *, int, const char *) =
      o->on_error ? o->on_error : default_error;
  size_t taken = 0;
  double last_progress = 0;
  while (taken < ntodo) {
    pthread_mutex_lock(&r.mu);
    while (taken == r.qn && !fy_hash_run_idle(hr)) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 100000000;
      if (ts.tv_nsec >= 1000000000)
        ts.tv_sec++, ts.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&r.cv, &r.mu, &ts);
      if (o->progress && fy_now() - last_progress >= 0.1)
        break;
    }
    size_t upto = r.qn;
    int alive = !fy_hash_run_idle(hr);
    pthread_mutex_unlock(&r.mu);
    for (; taken < upto; taken++) {
      result *res = &r.res[r.queue[taken]];
      if (rc == FERRY_OK)
        rc = fy_journal_append(jn, &res->e);
      int add = fy_catalog_add(into, &res->e);
      if (add && rc == FERRY_OK)
        rc = add;
      if (res->e.status) {
        st->failed++;
        pg->failed++;
        on_error(o->error_user, res->e.path, res->e.status, res->e.error);
      }
      if (!res->e.status && !res->exact && o->hash.mode == FERRY_HASH_COMPATIBLE)
        st->inexact++;
      st->hashed++;
      pg->hashed++;
      pg->done++;
      free(res->error);
      res->error = NULL;
      free(res->sig);
      res->sig = NULL;
      res->e.signature = NULL;
    }
    if (rc == FERRY_OK && fy_now() - jn->last_sync >= o->checkpoint_s)
      rc = fy_journal_sync(jn);
    if (o->progress && fy_now() - last_progress >= 0.1) {
      last_progress = fy_now();
      pg->elapsed_s = last_progress - t0;
      o->progress(o->progress_user, pg);
    }
    if (!alive && taken == upto && taken < ntodo) {
      rc = fy_error(FERRY_EINTERNAL, "hashing threads stopped early");
      break;
    }
  }
  fy_hash_run_report rr;
  fy_hash_run_finish(hr, &rr); /* every file answered: its errors are in the entries */
  st->engine_files += rr.engine_files;
  if (rr.note[0])
    fy_log(FERRY_LOG_WARNING, "%s: hashing on the CPU", rr.note);
  for (size_t k = 0; k < ntodo; k++)
    free(r.res[k].error), free(r.res[k].sig);
  free(r.res);
  free(r.queue);
  pthread_mutex_destroy(&r.mu);
  pthread_cond_destroy(&r.cv);
  return rc;
}

/* The entry of `c` for path p (c sorted by path), or NULL. */
static const ferry_catalog_entry *lookup(const ferry_catalog *c, const char *p) {
  if (!c)
    return NULL;
  size_t lo = 0, hi = c->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = strcmp(c->entries[mid].path, p);
    if (!cmp)
      return &c->entries[mid];
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* Whether path is among the files found (sorted). */
static int in_found(const fy_found_list *l, const char *path) {
  size_t lo = 0, hi = l->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(l->v[mid].path, path) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < l->n && !strcmp(l->v[lo].path, path);
}

static int unchanged(const ferry_catalog_entry *e, const fy_found *f) {
  return e && e->size == f->size && e->mtime_ns == f->mtime_ns;
}

int ferry_index_update(const char *index_path, const char *const *roots, int nroots,
                       const ferry_index_options *options, ferry_index_stats *stats) {
  ferry_index_options def;
  ferry_index_stats st_local;
  if (!options) {
    ferry_index_options_default(&def);
    options = &def;
  }
  ferry_index_stats *st = stats ? stats : &st_local;
  memset(st, 0, sizeof *st);
  if (!index_path || (!roots && nroots) || nroots < 1)
    return fy_error(FERRY_EINVAL, "ferry_index_update: needs an index path and roots");
  int world = options->world_size < 1 ? 1 : options->world_size;
  if (options->world_size < 0 || options->world_size > FY_MAX_WORLD || options->rank < 0 ||
      options->rank >= world)
    return fy_error(FERRY_EINVAL,
                    "ferry_index_update: rank %d of world size %d (a rank is 0 .. world size - 1, "
                    "the world size at most %d)",
                    options->rank, options->world_size, FY_MAX_WORLD);
  int rc = fy_hash_options_check(&options->hash);
  if (!rc)
    rc = fy_hash_engine_min_s_check(options->engine_min_s);
  if (rc)
    return rc;
  /* a GPU that cannot do the job is said before anything is read */
  if (options->device >= 0 && (rc = fy_hash_device_check(options->device, options->hash.mode)))
    return rc;
  /* no output over an input: the catalog (and its journal and temporary
   * beside it) is neither a file hashed nor inside a folder walked */
  for (int r = 0; r < nroots; r++)
    if ((rc = fy_out_guard(index_path, roots[r])) != FERRY_OK)
      return rc;
  double t0 = fy_now();
  const ferry_hash_options *ho = &options->hash;

  fy_journal jn;
  rc = fy_journal_open(&jn, index_path, ho, 1); /* locks, keeps a resumable journal */
  if (rc)
    return rc;
  ferry_catalog *old = NULL, *resumed = NULL, *fresh = NULL, *out = NULL;
  fy_found_list found = {0};
  char **canon = NULL;
  size_t *todo = NULL;
  fy_catalog_remove_stale(index_path); /* under the lock: a killed save's leftovers */
  rc = fy_journal_load(index_path, ho, &resumed);
  if (!rc && access(index_path, F_OK) == 0) {
    rc = ferry_catalog_load(index_path, &old);
    if (!rc && !fy_options_same(&old->options, ho)) {
      /* other hash settings: keep nothing, hash everything again */
      ferry_catalog_free(old);
      old = NULL;
    }
  }
  if (resumed)
    fy_catalog_sort(resumed);
  if (!rc)
    rc = fy_scan(roots, nroots, options->recursive, options->all_files, &found, &canon);
  fresh = fy_catalog_new(ho);
  out = fy_catalog_new(ho);
  if (!rc && out)
    rc = fy_catalog_set_share(out, options->rank, world, (const char *const *)canon, nroots);
  if (!rc && out && access(index_path, F_OK) == 0) {
    /* a partial catalog is updated by its own share only: another share
     * would drop its files as gone, or mix two runs in one part */
    ferry_catalog *was = old;
    if (!was && ferry_catalog_load(index_path, &was) != FERRY_OK)
      was = NULL; /* unreadable: refused above already, or other settings */
    if (was && !fy_share_same(was, out)) {
      char a[1024], b[1024];
      fy_share_describe(was, a, sizeof a);
      fy_share_describe(out, b, sizeof b);
      rc = fy_error(FERRY_EINVAL,
                    "%s: the catalog is %s; this run is %s: hash into a catalog of its own "
                    "(partial catalogs are combined by ferry index merge)",
                    index_path, a, b);
    }
    if (was != old)
      ferry_catalog_free(was);
  }
  if (!rc && world > 1)
    st->other_ranks = keep_share(&found, canon, nroots, options->rank, world);
  todo = malloc((found.n ? found.n : 1) * sizeof *todo);
  if (!rc && (!fresh || !out || !todo))
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  ferry_index_progress pg = {0};
  size_t ntodo = 0;
  fy_moved moved = {0};
  if (!rc)
    rc = fy_moved_init(&moved, old);
  if (!rc) {
    st->unread = found.nunread;
    st->skipped_moves = found.skipped_moves;
    for (size_t u = 0; u < found.nunread; u++) {
      char msg[4400];
      snprintf(msg, sizeof msg, "%s (not hashed; its catalog entries are kept)",
               found.unread_why[u]);
      (options->on_error ? options->on_error : default_error)(options->error_user, found.unread[u],
                                                              FERRY_EIO, msg);
    }
    for (size_t i = 0; i < found.n && !rc; i++) {
      const fy_found *f = &found.v[i];
      const ferry_catalog_entry *j = lookup(resumed, f->path), *e = lookup(old, f->path), *m;
      if (unchanged(j, f)) {
        rc = fy_catalog_add(out, j);
        st->resumed++;
        st->failed += j->status != FERRY_OK;
      } else if (unchanged(e, f) &&
                 (e->status == FERRY_OK || (!options->retry_failed && !transient(e->status)))) {
        rc = fy_catalog_add(out, e);
        st->reused++;
        st->failed += e->status != FERRY_OK;
      } else if (!e && (m = fy_moved_find(&moved, f->path, f->size, f->mtime_ns)) != NULL) {
        ferry_catalog_entry copy = *m; /* the same file, moved: its hashes */
        copy.path = f->path;
        rc = fy_catalog_add(out, &copy);
        st->moved++;
      } else {
        todo[ntodo++] = i;
      }
    }
    /* entries outside the roots stay as they are; so do those under a
     * folder that could not be read this time (never dropped as removed) */
    for (size_t i = 0; old && i < old->count && !rc; i++) {
      const char *p = old->entries[i].path;
      int under = 0, unread = 0;
      for (int r = 0; r < nroots && !under; r++)
        under = fy_path_under(p, canon[r]);
      for (size_t u = 0; under && u < found.nunread && !unread; u++)
        unread = fy_path_under(p, found.unread[u]) && !in_found(&found, p);
      if (fy_moved_taken(&moved, i))
        continue; /* its file was found under another path */
      if (!under && options->prune && fy_file_gone(p)) {
        st->pruned++;
        continue;
      }
      if (!under || unread) {
        rc = fy_catalog_add(out, &old->entries[i]);
        if (unread)
          st->unread_kept++;
        else
          st->kept++;
      }
    }
    if (old) /* entries under the roots whose file is gone */
      for (size_t i = 0; i < old->count; i++) {
        int under = 0;
        for (int r = 0; r < nroots && !under; r++)
          under = fy_path_under(old->entries[i].path, canon[r]);
        int unread = 0;
        for (size_t u = 0; under && u < found.nunread && !unread; u++)
          unread = fy_path_under(old->entries[i].path, found.unread[u]);
        if (under && !unread && !in_found(&found, old->entries[i].path) &&
            !fy_moved_taken(&moved, i))
          st->removed++;
      }
    pg.total = found.n;
    pg.done = st->resumed + st->reused + st->moved;
    pg.reused = st->reused + st->resumed + st->moved;
    pg.failed = st->failed;
  }
  if (!rc)
    rc = hash_all(found.v, todo, ntodo, options, &jn, fresh, st, &pg, t0);
  if (!rc) {
    for (size_t i = 0; i < fresh->count && !rc; i++)
      rc = fy_catalog_add(out, &fresh->entries[i]);
    fy_catalog_sort(out);
  }
  if (!rc)
    rc = fy_catalog_save(out, index_path);
  if (!rc) {
    fy_journal_remove(index_path); /* still under the lock */
    st->files = found.n;
    st->seconds = fy_now() - t0;
    if (options->progress) {
      pg.elapsed_s = st->seconds;
      options->progress(options->progress_user, &pg);
    }
  } else {
    fy_journal_sync(&jn); /* what was hashed is kept for the next run */
  }
  fy_journal_close(&jn);
  for (int r = 0; canon && r < nroots; r++)
    free(canon[r]);
  free(canon);
  free(todo);
  fy_found_free(&found);
  fy_moved_free(&moved);
  ferry_catalog_free(old);
  ferry_catalog_free(resumed);
  ferry_catalog_free(fresh);
  ferry_catalog_free(out);
  return rc;
}
