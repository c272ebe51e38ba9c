/* dupes_move.c — `ferry dupes --move-dupes-to DIR [--apply]`: moves every
 * group's non-keepers under DIR, mirroring their absolute path (so nothing
 * collides and every move can be undone), listing each move in
 * DIR/ferry-moves.csv. A dry run unless --apply. ferry never deletes. */
#include "dupes_move.h"

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
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

/* Copy then unlink, for a move across file systems. */
static int copy_move(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, ok = 0;
  struct stat st;
  if (in >= 0 && fstat(in, &st) == 0)
    out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777);
  if (out >= 0) {
    char buf[1 << 16];
    ssize_t n;
    ok = 1;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
      ok = write(out, buf, (size_t)n) == n;
    ok = ok && n == 0 && fsync(out) == 0;
    ok = close(out) == 0 && ok;
    if (!ok)
      unlink(dst);
  }
  if (in >= 0)
    close(in);
  return ok && unlink(src) == 0 ? 0 : -1;
}

/* Moves one file; 0, or -1 with a message printed. */
static int move_one(const ferry_catalog_entry *e, const char *dst, FILE *log) {
  struct stat st;
  if (stat(e->path, &st) != 0) {
    fprintf(stderr, "ferry dupes: %s: %s (not moved)\n", e->path, strerror(errno));
    return -1;
  }
  int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  if ((uint64_t)st.st_size != e->size || mtime != e->mtime_ns) {
    fprintf(stderr,
            "ferry dupes: %s: changed since it was hashed (not moved; run `ferry hash` "
            "again)\n",
            e->path);
    return -1;
  }
  if (lstat(dst, &st) == 0) {
    fprintf(stderr, "ferry dupes: %s: already exists (not moved)\n", dst);
    return -1;
  }
  char *d = strdup(dst);
  int rc = d ? make_parents(d) : -1;
  free(d);
  if (rc == 0 && rename(e->path, dst) != 0)
    rc = errno == EXDEV ? copy_move(e->path, dst) : -1;
  if (rc != 0) {
    fprintf(stderr, "ferry dupes: cannot move %s to %s: %s\n", e->path, dst, strerror(errno));
    return -1;
  }
  fprintf(log, "\"%s\",\"%s\"\n", e->path, dst);
  fflush(log);
  return 0;
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
      root = strdup(dir);
  }
  if (!root) {
    fprintf(stderr, "ferry dupes: %s: %s\n", dir, strerror(errno));
    return CLI_FAIL;
  }
  FILE *log = NULL;
  if (apply) {
    size_t n = strlen(root) + 32;
    char *lp = malloc(n);
    snprintf(lp, n, "%s/ferry-moves.csv", root);
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
  size_t moved = 0, failed = 0;
  for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
    const uint32_t *m;
    size_t n = ferry_dupes_group(d, g, &m);
    for (size_t k = 1; k < n; k++) { /* members[0] is the keeper */
      const ferry_catalog_entry *e = ferry_catalog_get(c, m[k]);
      size_t len = strlen(root) + strlen(e->path) + 2;
      char *dst = malloc(len);
      snprintf(dst, len, "%s%s%s", root, e->path[0] == '/' ? "" : "/", e->path);
      if (!apply) {
        if (!quiet)
          printf("would move %s -> %s\n", e->path, dst);
        moved++;
      } else if (move_one(e, dst, log) == 0) {
        moved++;
      } else {
        failed++;
      }
      free(dst);
    }
  }
  if (log)
    fclose(log);
  fprintf(stderr, "ferry dupes: %s %zu files to %s%s\n", apply ? "moved" : "would move", moved,
          root, apply ? "" : " (dry run: add --apply to move them)");
  if (failed)
    fprintf(stderr, "ferry dupes: %zu files not moved\n", failed);
  free(root);
  return failed ? CLI_PARTIAL : CLI_OK;
}
