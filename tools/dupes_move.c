/* dupes_move.c — `ferry dupes --move-dupes-to DIR [--apply]`: moves every
 * group's non-keepers under DIR, mirroring their absolute path (so nothing
 * collides and every move can be undone: `--undo`, dupes_undo.c), listing
 * each move in DIR/ferry-moves.csv (dupes_log.c). A dry run unless --apply.
 * ferry never deletes. An apply holds the catalog's lock and DIR's for the
 * whole run; each level of DIR is opened without following links and each
 * move never replaces a file (dupes_fs.c). */
#include "dupes_move.h"

#include "cli.h"
#include "dupes_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *cli_canonical(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
  if (dir && !dir[0]) { /* "/name" */
    free(dir);
    dir = strdup("/");
  }
  char *real = dir ? realpath(dir, NULL) : NULL;
  free(dir);
  if (!real)
    return NULL;
  const char *name = slash ? slash + 1 : path;
  if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
    free(real);
    return NULL;
  }
  size_t n = strlen(real) + strlen(name) + 2;
  char *out = malloc(n);
  if (out)
    snprintf(out, n, "%s%s%s", real, strcmp(real, "/") ? "/" : "", name);
  free(real);
  return out;
}

/* Whether the file at `path` is still what the catalog hashed: a regular
 * file (through links) of the same size and mtime; its identity in *st. */
static int unchanged(const char *path, const ferry_catalog_entry *e, struct stat *st) {
  if (stat(path, st) != 0 || !S_ISREG(st->st_mode))
    return 0;
  int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  return (uint64_t)st->st_size == e->size && mtime == e->mtime_ns;
}

int cli_keeper_outside(const char *keeper, const char *root) {
  if (fy_path_under(keeper, root))
    return 0;
  char *real = realpath(keeper, NULL);
  int out = !real || !fy_path_under(real, root); /* gone: said when it is checked */
  free(real);
  return out;
}

/* The undo log's row of one move (dfs_move's `done`). */
typedef struct row_arg {
  mover *mv;
  const char *from, *to;
} row_arg;

static int log_row(void *arg) {
  row_arg *a = arg;
  int rc = mlog_append(&a->mv->log, a->from, a->to, a->mv->log.run);
  a->mv->log_bad |= rc != 0; /* the undo log is data: its write error fails the run */
  return rc;
}

/* A destination that already exists: an identical copy (a run killed after
 * its copy was in place, before its source went) finishes the move; else
 * it is left alone. 0 moved, -1 not. */
static int finish_or_refuse(mover *mv, dfs_at from, dfs_at to) {
  char why[PATH_MAX + 256] = "";
  if (!dfs_same_bytes(from, to)) {
    fprintf(stderr, "ferry dupes: %s: already exists (%s not moved)\n", to.shown, from.shown);
    return -1;
  }
  row_arg a = {mv, from.shown, to.shown};
  if ((!mlog_has_move(&mv->log, from.shown, to.shown) && log_row(&a) != 0) ||
      dfs_remove(from, why, sizeof why) != 0) {
    if (why[0])
      fprintf(stderr, "ferry dupes: %s\n", why);
    return -1;
  }
  fprintf(stderr,
          "ferry dupes: %s: an identical copy of %s (an interrupted move): finished, the "
          "original removed\n",
          to.shown, from.shown);
  mv->finished++;
  return 0;
}

/* Moves one file (src, canonical) to root/src once it and its keeper are
 * checked again; 0 moved, 1 not (another name of the keeper), -1 not (said). */
static int move_one(mover *mv, const char *src, const ferry_catalog_entry *e, const char *keeper,
                    const ferry_catalog_entry *ke, const char *dst) {
  struct stat st, ks;
  if (!unchanged(keeper, ke, &ks)) {
    fprintf(stderr,
            "ferry dupes: %s: the keeper of its group is gone or changed since it was hashed "
            "(%s not moved; run `ferry hash` again)\n",
            keeper, src);
    return -1;
  }
  if (lstat(src, &st) == 0 && S_ISLNK(st.st_mode)) { /* a catalog of an older ferry */
    fprintf(stderr,
            "ferry dupes: %s: a symbolic link (not moved: another name of a file, and never "
            "its target through it; run `ferry hash` again)\n",
            src);
    return -1;
  }
  if (!unchanged(src, e, &st)) {
    fprintf(stderr,
            "ferry dupes: %s: gone or changed since it was hashed (not moved; run `ferry hash` "
            "again)\n",
            src);
    return -1;
  }
  if (st.st_nlink > 1 && !(st.st_dev == ks.st_dev && st.st_ino == ks.st_ino)) {
    fprintf(stderr,
            "ferry dupes: %s: has %ju names (hard links): moving one frees nothing (not moved)\n",
            src, (uintmax_t)st.st_nlink);
    return -1;
  }
  if (st.st_dev == ks.st_dev && st.st_ino == ks.st_ino) {
    fprintf(stderr,
            "ferry dupes: %s: the same file as the keeper %s (a link or a second name: "
            "not moved)\n",
            src, keeper);
    return 1;
  }
  char why[PATH_MAX + 256] = "";
  const char *leaf = NULL;
  if (!strcmp(src + 1, FY_MOVES_LOG)) { /* root/ferry-moves.csv is the log */
    fprintf(stderr, "ferry dupes: %s: would land on the undo log (not moved)\n", src);
    return -1;
  }
  int dir = dfs_open_below(mv->rootfd, mv->root, src + 1, 1, &leaf, why, sizeof why);
  if (dir < 0) {
    fprintf(stderr, "ferry dupes: %s (%s not moved)\n", why, src);
    return -1;
  }
  dfs_at from = {AT_FDCWD, src, src}, to = {dir, leaf, dst};
  row_arg a = {mv, src, dst};
  int r = dfs_move(from, to, 1, log_row, &a, why, sizeof why);
  if (r == DFS_EXISTS)
    r = finish_or_refuse(mv, from, to);
  else if (r != DFS_OK)
    fprintf(stderr, "ferry dupes: %s\n", why);
  close(dir);
  return r == DFS_OK ? 0 : -1;
}

int cli_mover_open(mover *mv, const char *dir, const char *catalog, int apply, int quiet) {
  memset(mv, 0, sizeof *mv);
  mv->rootfd = -1;
  mv->log.fd = -1;
  mv->cat_lock.fd = -1;
  mv->apply = apply;
  mv->quiet = quiet;
  if (!apply) {
    mv->root = realpath(dir, NULL);
    if (!mv->root)
      mv->root = cli_canonical(dir);
    if (!mv->root) {
      fprintf(stderr, "ferry dupes: %s: %s\n", dir, strerror(errno));
      return CLI_FAIL;
    }
    return CLI_OK;
  }
  if (catalog && fy_catalog_lock(catalog, &mv->cat_lock) != FERRY_OK) {
    fprintf(stderr, "ferry dupes: %s (nothing moved)\n", ferry_last_error());
    return CLI_FAIL;
  }
  mv->locked_catalog = catalog != NULL;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "ferry dupes: %s: %s\n", dir, strerror(errno));
  } else if (!(mv->root = realpath(dir, NULL))) {
    fprintf(stderr, "ferry dupes: %s: %s\n", dir, strerror(errno));
  } else if ((mv->rootfd = open(mv->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    fprintf(stderr, "ferry dupes: %s: %s\n", mv->root, strerror(errno));
  } else if (mlog_open(&mv->log, mv->rootfd, mv->root, 1, 0) == 0) {
    return CLI_OK;
  }
  cli_mover_close(mv);
  return CLI_FAIL;
}

/* The group's keeper: the first member (the catalog's keeper first) that
 * is outside the move destination, canonical; NULL if none. */
static char *pick_keeper(const ferry_catalog *c, const uint32_t *m, size_t n, const char *root,
                         size_t *which) {
  for (size_t k = 0; k < n; k++) {
    char *p = cli_canonical(ferry_catalog_get(c, m[k])->path);
    if (p && cli_keeper_outside(p, root)) {
      *which = k;
      return p;
    }
    free(p);
  }
  return NULL;
}

void cli_mover_file(mover *mv, const ferry_catalog_entry *e, const char *keeper,
                    const ferry_catalog_entry *ke) {
  char *src = cli_canonical(e->path);
  if (!src) {
    fprintf(stderr, "ferry dupes: %s: its folder is gone (not moved)\n", e->path);
    mv->failed++;
    return;
  }
  if (fy_path_under(src, mv->root)) {
    mv->inside_root++;
    free(src);
    return;
  }
  if (!cli_keeper_outside(keeper, mv->root)) {
    fprintf(stderr,
            "ferry dupes: %s: its keeper %s is inside the move destination %s (not moved: the "
            "library would keep no copy)\n",
            src, keeper, mv->root);
    mv->failed++;
    free(src);
    return;
  }
  /* the canonical path has no "." or ".." parts: dst stays below root */
  size_t len = strlen(mv->root) + strlen(src) + 2;
  char *dst = malloc(len);
  snprintf(dst, len, "%s%s", strcmp(mv->root, "/") ? mv->root : "", src);
  if (!mv->apply) {
    if (!mv->quiet) /* a message, not data: stdout keeps the report alone */
      fprintf(stderr, "ferry dupes: would move %s -> %s\n", src, dst);
    mv->moved++;
  } else {
    int r = move_one(mv, src, e, keeper, ke, dst);
    mv->moved += r == 0;
    mv->same += r == 1;
    mv->failed += r < 0;
  }
  free(dst);
  free(src);
}

int cli_mover_close(mover *mv) {
  int opened = mv->root && (!mv->apply || mv->log.path) && !mv->stopped;
  if (opened) {
    fprintf(stderr, "ferry dupes: %s %zu files to %s%s\n", mv->apply ? "moved" : "would move",
            mv->moved, mv->root, mv->apply ? "" : " (dry run: add --apply to move them)");
    if (mv->finished)
      fprintf(stderr, "ferry dupes: %zu of them finished moves an interrupted run began\n",
              mv->finished);
    if (mv->inside_root)
      fprintf(stderr, "ferry dupes: %zu files already inside %s left where they are\n",
              mv->inside_root, mv->root);
    if (mv->same)
      fprintf(stderr, "ferry dupes: %zu files are other names of their keeper: not moved\n",
              mv->same);
    if (mv->refs_kept && !mv->quiet)
      fprintf(stderr, "ferry dupes: %zu files under --reference folders: not moved\n",
              mv->refs_kept);
    if (mv->decided_kept && !mv->quiet)
      fprintf(stderr, "ferry dupes: %zu files the --decisions keep or leave in place: not moved\n",
              mv->decided_kept);
    if (mv->failed)
      fprintf(stderr, "ferry dupes: %zu files not moved\n", mv->failed);
    if (mv->apply && mv->moved && !mv->quiet)
      fprintf(stderr, "ferry dupes: run %s; `ferry dupes --undo %s --apply` puts it back\n",
              mv->log.run, mv->root);
  }
  mlog_close(&mv->log);
  if (mv->rootfd >= 0)
    close(mv->rootfd);
  if (mv->locked_catalog)
    fy_catalog_unlock(&mv->cat_lock);
  free(mv->root);
  int rc = !opened || mv->log_bad ? CLI_FAIL : mv->failed ? CLI_PARTIAL : CLI_OK;
  memset(mv, 0, sizeof *mv);
  mv->rootfd = mv->log.fd = mv->cat_lock.fd = -1;
  return rc;
}

void cli_move_dupes(mover *mv, const ferry_catalog *c, const ferry_dupes *d) {
  for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
    const uint32_t *m;
    size_t n = ferry_dupes_group(d, g, &m), kk = 0;
    /* Files already inside the destination (moved there by an earlier
     * run, then hashed) neither keep nor move. */
    char *keeper = pick_keeper(c, m, n, mv->root, &kk);
    if (!keeper) {
      mv->inside_root += n;
      continue;
    }
    const ferry_catalog_entry *ke = ferry_catalog_get(c, m[kk]);
    for (size_t k = 0; k < n; k++) {
      if (k == kk)
        continue;
      if (ferry_dupes_is_reference(d, m[k])) { /* never moved */
        mv->refs_kept++;
        continue;
      }
      if (ferry_dupes_stays(d, m[k])) { /* --decisions: a keeper chosen, or to stay */
        mv->decided_kept++;
        continue;
      }
      cli_mover_file(mv, ferry_catalog_get(c, m[k]), keeper, ke);
    }
    free(keeper);
  }
}
