/* dupes_undo.c — `ferry dupes --undo DIR [--run ID | --list-runs] [--apply]`:
 * the files a run moved into DIR put back where they were, the last run by
 * default (one already put back whole is passed over), a dry run unless
 * --apply. Nothing is ever overwritten: a file whose old place is taken is
 * named and stays in DIR (exit 3). Each file put back is a row of the log
 * (run "undo:ID"), so a second undo never repeats it. The same locks as an
 * apply; the same moves (dupes_fs.c: no link inside DIR followed, copies
 * across file systems through a temporary name). */
#include "dupes_move.h"

#include "cli.h"
#include "dupes_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A run of the log: its id, files, files put back since. */
typedef struct run_info {
  const char *id;
  size_t files, put_back;
} run_info;

/* The runs of moves in the order they began; *n of them (malloc'd). */
static run_info *runs_of(const mlog *l, size_t *n) {
  run_info *r = malloc((l->n ? l->n : 1) * sizeof *r);
  *n = 0;
  for (size_t i = 0; r && i < l->n; i++) {
    const mlog_row *x = &l->rows[i];
    if (x->undo)
      continue;
    size_t k = *n; /* the latest runs first: a run's rows are usually together */
    while (k > 0 && strcmp(r[k - 1].id, x->run))
      k--;
    if (k)
      k--;
    else
      r[k = (*n)++] = (run_info){x->run, 0, 0};
    r[k].files++;
    r[k].put_back += (size_t)x->undone;
  }
  return r;
}

/* mkdir -p of the folder part of `path` (the user's library: its links are
 * the user's). */
static int make_parents(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    int ok = mkdir(path, 0755) == 0 || errno == EEXIST;
    *p = '/';
    if (!ok)
      return -1;
  }
  return 0;
}

typedef struct undo {
  const char *root;
  int rootfd, apply;
  mlog *log;
  const char *run;
  size_t back, failed;
} undo;

typedef struct undo_row {
  undo *u;
  const mlog_row *row;
} undo_row;

static int log_undo(void *arg) {
  undo_row *a = arg;
  char run[128];
  snprintf(run, sizeof run, "%s%s", MLOG_UNDO, a->row->run);
  /* from and to as the move wrote them: the row it undoes is found by them */
  return mlog_append(a->u->log, a->row->to, a->row->from, run);
}

/* Where the file of `to` lies below DIR now: the mirrored path (`from`,
 * also when DIR was renamed since), else `to` below DIR; NULL (said) when
 * the row points outside DIR. */
static const char *below(const undo *u, const mlog_row *x) {
  size_t nt = strlen(x->to), nf = strlen(x->from), nr = strlen(u->root);
  const char *rel = NULL;
  if (x->from[0] == '/' && nt > nf && !strcmp(x->to + nt - nf, x->from))
    rel = x->from + 1;
  else if (fy_path_under(x->to, u->root) && nt > nr + 1)
    rel = x->to + nr + 1;
  if (!rel || !strcmp(rel, FY_MOVES_LOG)) {
    fprintf(stderr,
            "ferry dupes: %s: not inside %s (a log row ferry did not write: not put back)\n", x->to,
            u->root);
    return NULL;
  }
  return rel;
}

/* Puts back (or lists) one row; 0, or -1 (said). */
static int put_back(undo *u, const mlog_row *x) {
  if (x->from[0] != '/') {
    fprintf(stderr, "ferry dupes: %s: not an absolute path (a log row ferry did not write)\n",
            x->from);
    return -1;
  }
  const char *rel = below(u, x), *leaf = NULL;
  char why[PATH_MAX + 256] = "", shown[PATH_MAX + 8];
  if (!rel)
    return -1;
  snprintf(shown, sizeof shown, "%s/%s", u->root, rel);
  int sdir = dfs_open_below(u->rootfd, u->root, rel, 0, &leaf, why, sizeof why);
  struct stat st;
  if (sdir >= 0 && fstatat(sdir, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0)
    snprintf(why, sizeof why, "%s: %s", shown, strerror(errno));
  else if (sdir >= 0 && S_ISDIR(st.st_mode))
    snprintf(why, sizeof why, "%s: a folder, not what ferry moved here", shown);
  if (why[0]) {
    fprintf(stderr, "ferry dupes: %s (not put back)\n", why);
    if (sdir >= 0)
      close(sdir);
    return -1;
  }
  struct stat ds;
  if (lstat(x->from, &ds) == 0) {
    fprintf(stderr,
            "ferry dupes: %s: exists (%s not put back: ferry never overwrites a file; move it "
            "away, then undo again)\n",
            x->from, shown);
    close(sdir);
    return -1;
  }
  if (!u->apply) {
    fprintf(stderr, "ferry dupes: would put back %s -> %s\n", shown, x->from);
    close(sdir);
    return 0;
  }
  char *parent = strdup(x->from);
  char *slash = parent ? strrchr(parent, '/') : NULL;
  int pdir = -1;
  if (slash && make_parents(parent) == 0) {
    *slash = '\0';
    pdir = open(slash == parent ? "/" : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  int r = DFS_FAIL;
  if (pdir < 0) {
    snprintf(why, sizeof why, "%s: its folder cannot be made or opened: %s", x->from,
             strerror(errno));
  } else {
    undo_row a = {u, x};
    dfs_at from = {sdir, leaf, shown}, to = {pdir, strrchr(x->from, '/') + 1, x->from};
    r = dfs_move(from, to, 0, log_undo, &a, why, sizeof why);
    if (r == DFS_EXISTS)
      snprintf(why, sizeof why, "%s: exists (%s not put back: ferry never overwrites a file)",
               x->from, shown);
    close(pdir);
  }
  if (r != DFS_OK)
    fprintf(stderr, "ferry dupes: %s\n", why);
  free(parent);
  close(sdir);
  return r == DFS_OK ? 0 : -1;
}

/* The run to put back: the one named, else the last one not wholly put
 * back; NULL when there is none (said; *rc the exit code). */
static const char *choose(const mlog *l, const run_info *r, size_t n, const char *named, int *rc) {
  if (named) {
    for (size_t k = 0; k < n; k++)
      if (!strcmp(r[k].id, named))
        return r[k].id;
    fprintf(stderr,
            "ferry dupes: --run %s: no such run in %s (`ferry dupes --undo DIR --list-runs` "
            "lists them)\n",
            named, l->path);
    *rc = CLI_USAGE;
    return NULL;
  }
  for (size_t k = n; k-- > 0;)
    if (r[k].put_back < r[k].files)
      return r[k].id;
  fprintf(stderr, "ferry dupes: %s: nothing to put back (%s)\n", l->path,
          n ? "every run is put back already" : "no moves listed");
  *rc = CLI_OK;
  return NULL;
}

static int undo_run(undo *u) {
  size_t nruns = 0;
  run_info *runs = runs_of(u->log, &nruns);
  int rc = CLI_OK;
  const char *run = runs ? choose(u->log, runs, nruns, u->run, &rc) : NULL;
  if (!runs)
    fprintf(stderr, "ferry dupes: out of memory\n"), rc = CLI_FAIL;
  if (run) {
    size_t rows = u->log->n; /* rows this undo appends are not visited */
    for (size_t i = rows; i-- > 0;) {
      const mlog_row *x = &u->log->rows[i];
      if (!x->undo && !x->undone && !strcmp(x->run, run)) {
        if (put_back(u, &u->log->rows[i]) == 0)
          u->back++;
        else
          u->failed++;
      }
    }
    fprintf(stderr, "ferry dupes: %s %zu files of run %s from %s%s\n",
            u->apply ? "put back" : "would put back", u->back, run, u->root,
            u->apply ? "" : " (dry run: add --apply to put them back)");
    if (u->failed)
      fprintf(stderr, "ferry dupes: %zu files not put back (named above)\n", u->failed);
    rc = u->failed ? CLI_PARTIAL : CLI_OK;
  }
  free(runs);
  return rc;
}

static int list_runs(const mlog *l) {
  size_t n = 0;
  run_info *r = runs_of(l, &n);
  if (!r) {
    fprintf(stderr, "ferry dupes: out of memory\n");
    return CLI_FAIL;
  }
  printf("run,files,put_back\n");
  for (size_t k = 0; k < n; k++) {
    fy_csv_field(stdout, r[k].id);
    printf(",%zu,%zu\n", r[k].files, r[k].put_back);
  }
  free(r);
  return fflush(stdout) == 0 && !ferror(stdout) ? CLI_OK : CLI_FAIL;
}

int cli_undo(const char *dir, const char *run, int list, int apply, int quiet,
             const char *catalog) {
  (void)quiet;
  char *root = realpath(dir, NULL);
  int rootfd = root ? open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  struct stat st;
  if (rootfd < 0 || fstatat(rootfd, FY_MOVES_LOG, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    fprintf(stderr, "ferry dupes: --undo %s: %s\n", dir,
            rootfd >= 0 && errno == ENOENT
                ? "no ferry-moves.csv here (nothing was moved into this folder)"
                : strerror(errno));
    if (rootfd >= 0)
      close(rootfd);
    free(root);
    return CLI_FAIL;
  }
  int lock = apply && !list, rc = CLI_FAIL;
  fy_catalog_lock_t cl = {.fd = -1};
  mlog log;
  log.fd = -1;
  if (lock && catalog && fy_catalog_lock(catalog, &cl) != FERRY_OK)
    fprintf(stderr, "ferry dupes: %s (nothing put back)\n", ferry_last_error());
  else if (mlog_open(&log, rootfd, root, lock, 0) == 0) {
    undo u = {root, rootfd, apply, &log, run, 0, 0};
    rc = list ? list_runs(&log) : undo_run(&u);
    mlog_close(&log);
  }
  if (cl.fd >= 0)
    fy_catalog_unlock(&cl);
  close(rootfd);
  free(root);
  return rc;
}
