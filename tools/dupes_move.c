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

/* A run of moves into one destination. */
typedef struct mover {
  char *root; /* the destination, canonical */
  FILE *log;  /* root/ferry-moves.csv (apply) */
  int apply, quiet;
  size_t moved, failed, same, inside_root, refs_kept;
} mover;

static int mover_open(mover *mv, const char *dir, int apply, int quiet) {
  memset(mv, 0, sizeof *mv);
  mv->apply = apply;
  mv->quiet = quiet;
  if (apply) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "ferry dupes: %s: %s\n", dir, strerror(errno));
      return CLI_FAIL;
    }
    mv->root = realpath(dir, NULL);
  } else {
    mv->root = realpath(dir, NULL);
    if (!mv->root)
      mv->root = canonical(dir);
  }
  if (!mv->root) {
    fprintf(stderr, "ferry dupes: %s: %s\n", dir, strerror(errno));
    return CLI_FAIL;
  }
  if (apply) {
    size_t n = strlen(mv->root) + 32;
    char *lp = malloc(n);
    snprintf(lp, n, "%s/%s", mv->root, FY_MOVES_LOG);
    int fresh = access(lp, F_OK) != 0;
    mv->log = fopen(lp, "a");
    if (mv->log && fresh)
      fputs("from,to\n", mv->log);
    if (!mv->log)
      fprintf(stderr, "ferry dupes: %s: %s\n", lp, strerror(errno));
    free(lp);
    if (!mv->log) {
      free(mv->root);
      return CLI_FAIL;
    }
  }
  return CLI_OK;
}

/* Moves (or lists) entry e, a duplicate of `keeper` (canonical) / ke. */
static void mover_file(mover *mv, const ferry_catalog_entry *e, const char *keeper,
                       const ferry_catalog_entry *ke) {
  char *src = canonical(e->path);
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
  /* the canonical path has no "." or ".." parts: dst stays below root */
  size_t len = strlen(mv->root) + strlen(src) + 2;
  char *dst = malloc(len);
  snprintf(dst, len, "%s%s", mv->root, src);
  if (!mv->apply) {
    if (!mv->quiet) /* a message, not data: stdout keeps the report alone */
      fprintf(stderr, "ferry dupes: would move %s -> %s\n", src, dst);
    mv->moved++;
  } else {
    int r = move_one(src, e, keeper, ke, dst, mv->log);
    mv->moved += r == 0;
    mv->same += r == 1;
    mv->failed += r < 0;
  }
  free(dst);
  free(src);
}

/* The summary; the exit code. */
static int mover_close(mover *mv) {
  int log_bad = 0;
  if (mv->log) { /* the undo log is data: a write error is a failure (exit 1) */
    int err = ferror(mv->log);
    log_bad = (fclose(mv->log) != 0) || err;
    if (log_bad)
      fprintf(stderr, "ferry dupes: %s/%s: write failed: the undo log is incomplete\n", mv->root,
              FY_MOVES_LOG);
  }
  fprintf(stderr, "ferry dupes: %s %zu files to %s%s\n", mv->apply ? "moved" : "would move",
          mv->moved, mv->root, mv->apply ? "" : " (dry run: add --apply to move them)");
  if (mv->inside_root)
    fprintf(stderr, "ferry dupes: %zu files already inside %s left where they are\n",
            mv->inside_root, mv->root);
  if (mv->same)
    fprintf(stderr, "ferry dupes: %zu files are other names of their keeper: not moved\n",
            mv->same);
  if (mv->refs_kept && !mv->quiet)
    fprintf(stderr, "ferry dupes: %zu files under --reference folders: not moved\n", mv->refs_kept);
  if (mv->failed)
    fprintf(stderr, "ferry dupes: %zu files not moved\n", mv->failed);
  free(mv->root);
  return log_bad ? CLI_FAIL : mv->failed ? CLI_PARTIAL : CLI_OK;
}

int cli_move_dupes(const ferry_catalog *c, const ferry_dupes *d, const char *dir, int apply,
                   int quiet) {
  mover mv;
  int rc = mover_open(&mv, dir, apply, quiet);
  if (rc)
    return rc;
  for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
    const uint32_t *m;
    size_t n = ferry_dupes_group(d, g, &m), kk = 0;
    /* Files already inside the destination (moved there by an earlier
     * run, then hashed) neither keep nor move. */
    char *keeper = pick_keeper(c, m, n, mv.root, &kk);
    if (!keeper) {
      mv.inside_root += n;
      continue;
    }
    const ferry_catalog_entry *ke = ferry_catalog_get(c, m[kk]);
    for (size_t k = 0; k < n; k++) {
      if (k == kk)
        continue;
      if (ferry_dupes_is_reference(d, m[k])) { /* never moved */
        mv.refs_kept++;
        continue;
      }
      mover_file(&mv, ferry_catalog_get(c, m[k]), keeper, ke);
    }
    free(keeper);
  }
  return mover_close(&mv);
}

/* --------------------------------------------------- --apply-list FILE */

/* The catalog index of `path` (entries are sorted by path), or -1. */
static long find_entry(const ferry_catalog *c, const char *path) {
  size_t lo = 0, hi = ferry_catalog_size(c);
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = strcmp(ferry_catalog_get(c, mid)->path, path);
    if (!cmp)
      return (long)mid;
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Field `col` of a row as a path: base64 columns decoded (exact bytes),
 * text columns as they are. NULL (and a message) when it is not one. */
static char *row_path(const char *list, size_t line, char **row, size_t n, int col, int b64) {
  if (col < 0 || (size_t)col >= n || !row[col][0]) {
    fprintf(stderr, "ferry dupes: %s: line %zu: a field is missing\n", list, line);
    return NULL;
  }
  if (!b64)
    return strdup(row[col]);
  size_t len = 0;
  uint8_t *bytes = NULL;
  if (fy_base64_decode(row[col], &bytes, &len) != FERRY_OK || memchr(bytes, 0, len)) {
    fprintf(stderr, "ferry dupes: %s: line %zu: not a path in base64: %s\n", list, line, row[col]);
    free(bytes);
    return NULL;
  }
  char *p = realloc(bytes, len + 1);
  if (p)
    p[len] = '\0';
  return p;
}

int cli_move_list(const ferry_catalog *c, const ferry_dupes *d, const char *list, const char *dir,
                  int apply, int quiet) {
  FILE *f = fopen(list, "r");
  if (!f) {
    fprintf(stderr, "ferry dupes: --apply-list %s: %s\n", list, strerror(errno));
    return CLI_FAIL;
  }
  /* the header names the columns: path,keeper (text) and/or path_b64,
   * keeper_b64 (exact bytes, preferred) */
  char **row = NULL;
  size_t n = 0, line = 1;
  int cp = -1, ck = -1, cpb = -1, ckb = -1;
  if (fy_csv_row(f, &row, &n) == 1)
    for (size_t i = 0; i < n; i++) {
      cp = !strcmp(row[i], "path") ? (int)i : cp;
      ck = !strcmp(row[i], "keeper") ? (int)i : ck;
      cpb = !strcmp(row[i], "path_b64") ? (int)i : cpb;
      ckb = !strcmp(row[i], "keeper_b64") ? (int)i : ckb;
    }
  fy_csv_free(row, n);
  if ((cp < 0 && cpb < 0) || (ck < 0 && ckb < 0)) {
    fclose(f);
    fprintf(stderr,
            "ferry dupes: %s: not a move list (its first line must name the columns path,keeper "
            "or path_b64,keeper_b64: the HTML report's \"Save the move list\" writes one)\n",
            list);
    return CLI_USAGE;
  }
  /* each entry's group in this run, to check that a keeper is one of its file's */
  size_t total = ferry_catalog_size(c);
  uint32_t *group_of = malloc((total ? total : 1) * sizeof *group_of);
  uint8_t *role = calloc(total ? total : 1, 1); /* 1 moved, 2 keeper */
  if (!group_of || !role) {
    fclose(f);
    free(group_of), free(role);
    fprintf(stderr, "ferry dupes: out of memory\n");
    return CLI_FAIL;
  }
  for (size_t i = 0; i < total; i++)
    group_of[i] = UINT32_MAX;
  for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
    const uint32_t *m;
    size_t k = ferry_dupes_group(d, g, &m);
    for (size_t i = 0; i < k; i++)
      group_of[m[i]] = (uint32_t)g;
  }
  mover mv;
  int rc = mover_open(&mv, dir, apply, quiet), r;
  size_t refused = 0;
  while (!rc && (r = fy_csv_row(f, &row, &n)) != 0) {
    line++;
    if (r < 0) {
      fprintf(stderr, "ferry dupes: %s: line %zu: %s\n", list, line, ferry_last_error());
      refused++;
      break;
    }
    if (n == 1 && !row[0][0]) { /* an empty line */
      fy_csv_free(row, n);
      continue;
    }
    char *path = row_path(list, line, row, n, cpb >= 0 ? cpb : cp, cpb >= 0);
    char *keeper = path ? row_path(list, line, row, n, ckb >= 0 ? ckb : ck, ckb >= 0) : NULL;
    fy_csv_free(row, n);
    long pi = path ? find_entry(c, path) : -1, ki = keeper ? find_entry(c, keeper) : -1;
    const char *why = !path || !keeper ? NULL
                      : pi < 0         ? "not in the catalog"
                      : ki < 0         ? "its keeper is not in the catalog"
                      : pi == ki       ? "its own keeper"
                      : group_of[pi] == UINT32_MAX || group_of[pi] != group_of[ki]
                          ? "not in its keeper's group here"
                      : ferry_dupes_is_reference(d, (uint32_t)pi) ? "under a --reference folder"
                      : role[pi] == 2 || role[ki] == 1 ? "listed both to keep and to move"
                                                       : "";
    if (why && *why)
      fprintf(stderr, "ferry dupes: %s: line %zu: %s: %s (not moved)\n", list, line, path, why);
    if (!why || *why) {
      refused++;
    } else if (!role[pi]) { /* a file listed twice moves once */
      role[pi] = 1, role[ki] = 2;
      char *kc = canonical(keeper);
      if (!kc) {
        fprintf(stderr, "ferry dupes: %s: the keeper's folder is gone (%s not moved)\n", keeper,
                path);
        mv.failed++;
      } else {
        mover_file(&mv, ferry_catalog_get(c, (size_t)pi), kc, ferry_catalog_get(c, (size_t)ki));
      }
      free(kc);
    }
    free(path);
    free(keeper);
  }
  fclose(f);
  free(group_of);
  free(role);
  if (rc)
    return rc;
  if (refused)
    fprintf(stderr, "ferry dupes: %zu lines of %s refused\n", refused, list);
  mv.failed += refused;
  return mover_close(&mv);
}
