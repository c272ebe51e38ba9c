/* merge.c — ferry_index_merge: partial catalogs (a sharded `ferry hash
 * --rank R --world-size W`) or whole ones into one catalog. Every part is
 * loaded and checked before anything is written: the same hash settings,
 * one run's shares (world size, roots, each rank once), each part's entries
 * of its own share alone (fy_share_check: a part holding another rank's
 * files, or files under none of its roots, is refused whole); a rank no
 * part holds is named (each run of missing ranks once, never a line per
 * rank). The merged catalog is saved atomically under its lock. */
#include "catalog/catalog.h"
#include "core/user_file.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct pick {
  const ferry_catalog_entry *e;
  int part;
} pick;

static int by_path_then_newer(const void *a, const void *b) {
  const pick *x = a, *y = b;
  int c = strcmp(x->e->path, y->e->path);
  if (c)
    return c;
  /* the entry that wins comes first: the newer mtime, then the later part */
  if (x->e->mtime_ns != y->e->mtime_ns)
    return x->e->mtime_ns > y->e->mtime_ns ? -1 : 1;
  return (x->part < y->part) - (x->part > y->part);
}

/* How many runs of missing ranks the log names one by one (the rest: one
 * line counting them). */
#define LOG_RUNS 8

/* Each run of consecutive missing ranks to on_missing, or to the log: the
 * first LOG_RUNS, then one line for the rest. Never a line per rank: one
 * part of a world of 2^20 is two runs. */
static void say_missing(const ferry_merge_options *o, const int *seen, int world,
                        const char *out_path) {
  int runs = 0, rest_runs = 0, rest_ranks = 0;
  for (int r = 0; r < world;) {
    if (seen[r] >= 0) {
      r++;
      continue;
    }
    int first = r;
    while (r < world && seen[r] < 0)
      r++;
    int n = r - first;
    char msg[4200];
    if (n == 1)
      snprintf(msg, sizeof msg, "rank %d of %d missing: its files are not in %s", first, world,
               out_path);
    else
      snprintf(msg, sizeof msg, "ranks %d..%d of %d missing (%d ranks): their files are not in %s",
               first, r - 1, world, n, out_path);
    if (o->on_missing) {
      o->on_missing(o->user, first, n, world, msg);
    } else if (runs++ < LOG_RUNS) {
      fy_log(FERRY_LOG_WARNING, "%s", msg);
    } else {
      rest_runs++;
      rest_ranks += n;
    }
  }
  if (rest_runs)
    fy_log(FERRY_LOG_WARNING,
           "... and %d more runs of missing ranks (%d ranks): their files are not in %s", rest_runs,
           rest_ranks, out_path);
}

/* The parts agree (settings, one run's shares, no rank twice); FERRY_EINVAL
 * naming the two parts otherwise. seen[r]: the part holding rank r. */
static int check_parts(ferry_catalog **cat, const char *const *parts, int nparts, int *seen) {
  const ferry_catalog *first = cat[0];
  for (int i = 1; i < nparts; i++) {
    const ferry_catalog *c = cat[i];
    if (!fy_options_same(&c->options, &first->options))
      return fy_error(FERRY_EINVAL,
                      "%s: hashed with other settings than %s (mode, hash size, hashes): "
                      "parts to merge are made with the same ones",
                      parts[i], parts[0]);
    char a[1024], b[1024];
    fy_share_describe(first, a, sizeof a);
    fy_share_describe(c, b, sizeof b);
    if (c->share_world != first->share_world)
      return fy_error(FERRY_EINVAL,
                      "%s is %s, %s is %s: parts of runs of different world sizes are not "
                      "merged",
                      parts[0], a, parts[i], b);
    int same_roots = c->share_nroots == first->share_nroots;
    for (int r = 0; same_roots && r < c->share_nroots; r++)
      same_roots = !strcmp(c->share_roots[r], first->share_roots[r]);
    if (!same_roots)
      return fy_error(FERRY_EINVAL,
                      "%s is %s, %s is %s: parts of runs over different roots are not merged",
                      parts[0], a, parts[i], b);
  }
  for (int i = 0; i < nparts; i++) { /* a part holds its own share only */
    int rc = fy_share_check(cat[i], parts[i]);
    if (rc)
      return rc;
  }
  for (int i = 0; first->share_world > 1 && i < nparts; i++) {
    int r = cat[i]->share_rank;
    if (seen[r] >= 0)
      return fy_error(FERRY_EINVAL, "%s and %s are both rank %d of %d", parts[seen[r]], parts[i], r,
                      first->share_world);
    seen[r] = i;
  }
  return FERRY_OK;
}

/* OUT named among the parts is the update in place (every part is read
 * before the atomic replace); any other way to a part (a hard or symbolic
 * link) is refused by the outputs rule (fy_out_guard). An existing OUT is
 * replaced only when it is a whole catalog: a partial catalog named as OUT
 * by mistake (the parts shifted by one) is never overwritten, nor anything
 * that is no catalog. */
static int check_out(const char *out_path, const char *const *parts, int nparts) {
  for (int i = 0; i < nparts; i++)
    if (!strcmp(out_path, parts[i]))
      return FERRY_OK;
  for (int i = 0; i < nparts; i++) {
    int rc = fy_out_guard(out_path, parts[i]);
    if (rc)
      return rc;
  }
  struct stat so;
  if (stat(out_path, &so) != 0)
    return FERRY_OK; /* made new (an unwritable place fails at the save) */
  ferry_catalog *c = NULL;
  if (ferry_catalog_load(out_path, &c) != FERRY_OK) {
    char why[1024];
    snprintf(why, sizeof why, "%s", ferry_last_error());
    return fy_error(FERRY_EINVAL, "%s exists and is not a catalog to replace (%s)", out_path, why);
  }
  char a[1024];
  fy_share_describe(c, a, sizeof a);
  int partial = c->share_world > 1;
  ferry_catalog_free(c);
  if (partial)
    return fy_error(FERRY_EINVAL,
                    "%s is a partial catalog (%s) and not among the parts: it is not overwritten "
                    "(OUT comes first: ferry index merge OUT.fidx PART...)",
                    out_path, a);
  return FERRY_OK;
}

int ferry_index_merge(const char *out_path, const char *const *parts, int nparts,
                      const ferry_merge_options *options, ferry_merge_stats *stats) {
  ferry_merge_stats st_local;
  ferry_merge_stats *st = stats ? stats : &st_local;
  memset(st, 0, sizeof *st);
  st->world_size = 1;
  if (!out_path || !*out_path || !parts || nparts < 1)
    return fy_error(FERRY_EINVAL, "ferry_index_merge: needs an output path and at least one part");
  for (int i = 0; i < nparts; i++)
    if (!parts[i] || !*parts[i])
      return fy_error(FERRY_EINVAL, "ferry_index_merge: part %d has no path", i);
  ferry_merge_options def = {0, NULL, NULL};
  if (!options)
    options = &def;
  ferry_catalog **cat = calloc((size_t)nparts, sizeof *cat);
  if (!cat)
    return fy_error(FERRY_ENOMEM, "ferry_index_merge: out of memory");
  int rc = FERRY_OK;
  size_t total = 0;
  for (int i = 0; i < nparts && !rc; i++)
    if ((rc = ferry_catalog_load(parts[i], &cat[i])) == FERRY_OK)
      total += cat[i]->count;
  int world = rc ? 1 : cat[0]->share_world;
  int *seen = rc ? NULL : malloc((size_t)world * sizeof *seen);
  if (!rc && !seen)
    rc = fy_error(FERRY_ENOMEM, "ferry_index_merge: out of memory");
  for (int r = 0; !rc && r < world; r++)
    seen[r] = -1;
  if (!rc)
    rc = check_parts(cat, parts, nparts, seen);
  if (!rc)
    rc = check_out(out_path, parts, nparts);
  if (!rc && world > 1) {
    st->world_size = world;
    for (int r = 0; r < world; r++)
      st->missing += seen[r] < 0;
    if (st->missing && options->strict) {
      int r = 0;
      while (seen[r] >= 0)
        r++;
      rc = fy_error(FERRY_ESTATE,
                    "%s: rank %d of %d missing (%d missing in all): nothing written (strict)",
                    out_path, r, world, st->missing);
    }
  }
  pick *v = rc ? NULL : malloc((total ? total : 1) * sizeof *v);
  if (!rc && !v)
    rc = fy_error(FERRY_ENOMEM, "ferry_index_merge: out of memory for %zu entries", total);
  ferry_catalog *out = rc ? NULL : fy_catalog_new(&cat[0]->options);
  if (!rc && !out)
    rc = fy_error(FERRY_ENOMEM, "ferry_index_merge: out of memory");
  if (!rc) {
    size_t n = 0;
    for (int i = 0; i < nparts; i++) {
      fy_catalog_ready(cat[i]);
      for (size_t k = 0; k < cat[i]->count; k++)
        v[n++] = (pick){&cat[i]->entries[k], i};
    }
    qsort(v, n, sizeof *v, by_path_then_newer);
    for (size_t k = 0; k < n && !rc; k++) {
      if (k && !strcmp(v[k].e->path, v[k - 1].e->path))
        continue; /* the first of a path is the one kept */
      if (k + 1 < n && !strcmp(v[k].e->path, v[k + 1].e->path))
        st->conflicts++;
      rc = fy_catalog_add(out, v[k].e);
    }
    st->entries = out->count;
  }
  if (!rc) {
    fy_catalog_lock_t lock;
    rc = fy_catalog_lock(out_path, &lock);
    if (!rc) {
      fy_catalog_remove_stale(out_path);
      rc = fy_catalog_save(out, out_path);
      fy_catalog_unlock(&lock);
    }
  }
  if (!rc && st->missing)
    say_missing(options, seen, world, out_path);
  for (int i = 0; i < nparts; i++)
    ferry_catalog_free(cat[i]);
  free(cat);
  free(seen);
  free(v);
  ferry_catalog_free(out);
  return rc;
}
