/* dupes_move.c — `ferry dupes --move-dupes-to DIR [--apply]`: moves every
 * group's non-keepers under DIR, mirroring their absolute path (so nothing
 * collides and every move can be undone), listing each move in
 * DIR/ferry-moves.csv. A dry run unless --apply. ferry never deletes. */
#include "dupes_move.h"

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p of the directory part of `path`. */
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

/* Copy then unlink, for a move across file systems: the copy keeps the
 * file's mode and times; on failure the partial copy is removed and errno
 * is the first error (ENOSPC when the destination fills up). */
static int copy_move(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, ok = 0, err = 0;
  struct stat st;
  if (in >= 0 && fstat(in, &st) == 0)
    out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777);
  if (out < 0)
    err = errno;
  if (out >= 0) {
    char buf[1 << 16];
    ssize_t n = 0;
    ok = 1;
    while (ok && (n = read(in, buf, sizeof buf)) > 0) {
      size_t part = (size_t)n;
      int fault = fy_fail_bytes_due(FY_FAULT_WRITE, part, &part); /* tests: the disk fills */
      ssize_t w = part ? write(out, buf, part) : 0;
      if (fault && w >= 0)
        w = -1, errno = ENOSPC;
      ok = w == n;
      if (!ok)
        err = w < 0 ? errno : ENOSPC; /* a short write: the disk is full */
    }
    if (ok && n < 0)
      ok = 0, err = errno;
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    if (ok && (fsync(out) != 0 || futimens(out, times) != 0))
      ok = 0, err = errno;
    if (close(out) != 0 && ok)
      ok = 0, err = errno;
    if (!ok)
      unlink(dst);
  }
  if (in >= 0)
    close(in);
  if (ok && unlink(src) != 0)
    ok = 0, err = errno;
  errno = err;
  return ok ? 0 : -1;
}

/* The path with its directory resolved (symbolic links, "..", "."), the
 * last name kept as it is (a link among the duplicates is moved as a link,
 * never its target). NULL when the directory does not exist. */
static char *canonical(const char *path) {
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

/* Moves one file (src, canonical) to dst once the keeper is checked again;
 * 0, or -1 with a message printed. */
static int move_one(const char *src, const ferry_catalog_entry *e, const char *keeper,
                    const ferry_catalog_entry *ke, const char *dst, FILE *log) {
  struct stat st, ks;
  if (!unchanged(keeper, ke, &ks)) {
    fprintf(stderr,
            "ferry dupes: %s: the keeper of its group is gone or changed since it was hashed "
            "(%s not moved; run `ferry hash` again)\n",
            keeper, src);
    return -1;
  }
  if (!unchanged(src, e, &st)) {
    fprintf(stderr,
            "ferry dupes: %s: gone or changed since it was hashed (not moved; run `ferry hash` "
            "again)\n",
            src);
    return -1;
  }
  if (st.st_dev == ks.st_dev && st.st_ino == ks.st_ino) {
    fprintf(stderr,
            "ferry dupes: %s: the same file as the keeper %s (a link or a second name: "
            "not moved)\n",
            src, keeper);
    return 1;
  }
  if (lstat(dst, &st) == 0) {
    fprintf(stderr, "ferry dupes: %s: already exists (not moved)\n", dst);
    return -1;
  }
  char *d = strdup(dst);
  int rc = d ? make_parents(d) : -1;
  free(d);
  if (rc == 0 && rename(src, dst) != 0)
    rc = errno == EXDEV ? copy_move(src, dst) : -1;
  if (rc != 0) {
    fprintf(stderr, "ferry dupes: cannot move %s to %s: %s\n", src, dst, strerror(errno));
    return -1;
  }
  /* quoted where needed: a name with a comma, quote or newline stays one
   * field, so no crafted name can forge an undo row */
  fy_csv_field(log, src);
  fputc(',', log);
  fy_csv_field(log, dst);
  fputc('\n', log);
  fflush(log);
  return 0;
}

/* The group's keeper: the first member (the catalog's keeper first) that
 * is not inside the move destination, canonical; NULL if none. */
static char *pick_keeper(const ferry_catalog *c, const uint32_t *m, size_t n, const char *root,
                         size_t *which) {
  for (size_t k = 0; k < n; k++) {
    char *p = canonical(ferry_catalog_get(c, m[k])->path);
    if (p && !fy_path_under(p, root)) {
      *which = k;
      return p;
    }
    free(p);
  }
  return NULL;
}

int cli_move_dupes(const ferry_catalog *c, const ferry_dupes *d, const char *dir, int apply,
                   int quiet) {
  char *root = NULL;
  if (apply) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "ferry dupes: %s: %s\n", dir, strerror(errno));
      return CLI_FAIL;
    }
    root = realpath(dir, NULL);
  } else {
    root = realpath(dir, NULL);
    if (!root)
      root = canonical(dir);
  }
  if (!root) {
    fprintf(stderr, "ferry dupes: %s: %s\n", dir, strerror(errno));
    return CLI_FAIL;
  }
  FILE *log = NULL;
  if (apply) {
    size_t n = strlen(root) + 32;
    char *lp = malloc(n);
    snprintf(lp, n, "%s/%s", root, FY_MOVES_LOG);
    int fresh = access(lp, F_OK) != 0;
    log = fopen(lp, "a");
    if (log && fresh)
      fputs("from,to\n", log);
    if (!log)
      fprintf(stderr, "ferry dupes: %s: %s\n", lp, strerror(errno));
    free(lp);
    if (!log) {
      free(root);
      return CLI_FAIL;
    }
  }
  size_t moved = 0, failed = 0, same = 0, inside_root = 0, refs_kept = 0;
  for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
    const uint32_t *m;
    size_t n = ferry_dupes_group(d, g, &m), kk = 0;
    /* Files already inside the destination (moved there by an earlier
     * run, then hashed) neither keep nor move. */
    char *keeper = pick_keeper(c, m, n, root, &kk);
    if (!keeper) {
      inside_root += n;
      continue;
    }
    const ferry_catalog_entry *ke = ferry_catalog_get(c, m[kk]);
    for (size_t k = 0; k < n; k++) {
      if (k == kk)
        continue;
      if (ferry_dupes_is_reference(d, m[k])) { /* never moved */
        refs_kept++;
        continue;
      }
      const ferry_catalog_entry *e = ferry_catalog_get(c, m[k]);
      char *src = canonical(e->path);
      if (!src) {
        fprintf(stderr, "ferry dupes: %s: its folder is gone (not moved)\n", e->path);
        failed++;
        continue;
      }
      if (fy_path_under(src, root)) {
        inside_root++;
        free(src);
        continue;
      }
      /* the canonical path has no "." or ".." parts: dst stays below root */
      size_t len = strlen(root) + strlen(src) + 2;
      char *dst = malloc(len);
      snprintf(dst, len, "%s%s", root, src);
      if (!apply) {
        if (!quiet) /* a message, not data: stdout keeps the report alone */
          fprintf(stderr, "ferry dupes: would move %s -> %s\n", src, dst);
        moved++;
      } else {
        int r = move_one(src, e, keeper, ke, dst, log);
        moved += r == 0;
        same += r == 1;
        failed += r < 0;
      }
      free(dst);
      free(src);
    }
    free(keeper);
  }
  int log_bad = 0;
  if (log) { /* the undo log is data: a write error is a failure (exit 1) */
    int err = ferror(log);
    log_bad = (fclose(log) != 0) || err;
    if (log_bad)
      fprintf(stderr, "ferry dupes: %s/%s: write failed: the undo log is incomplete\n", root,
              FY_MOVES_LOG);
  }
  fprintf(stderr, "ferry dupes: %s %zu files to %s%s\n", apply ? "moved" : "would move", moved,
          root, apply ? "" : " (dry run: add --apply to move them)");
  if (inside_root)
    fprintf(stderr, "ferry dupes: %zu files already inside %s left where they are\n", inside_root,
            root);
  if (same)
    fprintf(stderr, "ferry dupes: %zu files are other names of their keeper: not moved\n", same);
  if (refs_kept && !quiet)
    fprintf(stderr, "ferry dupes: %zu files under --reference folders: not moved\n", refs_kept);
  if (failed)
    fprintf(stderr, "ferry dupes: %zu files not moved\n", failed);
  free(root);
  return log_bad ? CLI_FAIL : failed ? CLI_PARTIAL : CLI_OK;
}
