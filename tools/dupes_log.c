/* dupes_log.c — the undo log of `ferry dupes` moves: opened once, locked,
 * read, upgraded from the two-column form, appended row by row (the format
 * and the lock: dupes_log.h). */
#include "dupes_log.h"

#include "cli.h"
#include "dupes_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char header[] = "from,to,run\n";

/* The whole file read by pread (no second fd: its close would drop the
 * lock); NULL-terminated, *len bytes. */
static char *read_all(int fd, size_t *len) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return NULL;
  size_t cap = (size_t)st.st_size + 1, n = 0;
  char *b = malloc(cap);
  while (b) {
    ssize_t r = pread(fd, b + n, cap - 1 - n, (off_t)n);
    if (r < 0) {
      free(b);
      return NULL;
    }
    n += (size_t)r;
    if (r == 0 || n < cap - 1)
      break;
    char *g = realloc(b, cap *= 2); /* it grew meanwhile */
    if (!g)
      free(b);
    b = g;
  }
  if (b) {
    b[n] = '\0';
    *len = n;
  }
  return b;
}

static size_t hash_of(const char *s) { /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  return (size_t)h;
}

/* Move row i into its bucket (by `to`), in front of the older ones. */
static void chain_in(mlog *l, size_t i) {
  size_t b = hash_of(l->rows[i].to) & (l->nbucket - 1);
  l->chain[i] = l->bucket[b];
  l->bucket[b] = i + 1;
}

/* Room for row n: rows, chains, and buckets (rebuilt at twice the rows). */
static int grow(mlog *l) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    mlog_row *r = realloc(l->rows, cap * sizeof *r);
    if (r)
      l->rows = r;
    size_t *c = r ? realloc(l->chain, cap * sizeof *c) : NULL;
    if (!c)
      return -1;
    l->chain = c;
    l->cap = cap;
  }
  if (l->n * 2 < l->nbucket)
    return 0;
  size_t nb = l->nbucket ? l->nbucket * 4 : 256, *b = calloc(nb, sizeof *b);
  if (!b)
    return -1;
  free(l->bucket);
  l->bucket = b;
  l->nbucket = nb;
  for (size_t i = 0; i < l->n; i++)
    if (!l->rows[i].undo)
      chain_in(l, i);
  return 0;
}

/* Undo row u marks the move it put back: the latest one before it of the
 * run it names, from and to swapped, not marked yet. */
static void mark_undone(mlog *l, size_t u) {
  const mlog_row *x = &l->rows[u];
  const char *run = x->run + strlen(MLOG_UNDO);
  for (size_t i = l->bucket[hash_of(x->from) & (l->nbucket - 1)]; i; i = l->chain[i - 1]) {
    mlog_row *m = &l->rows[i - 1];
    if (i - 1 < u && !m->undone && !strcmp(m->to, x->from) && !strcmp(m->from, x->to) &&
        !strcmp(m->run, run)) {
      m->undone = 1;
      return;
    }
  }
}

static int add_row(mlog *l, const char *from, const char *to, const char *run) {
  if (grow(l) != 0)
    return -1;
  mlog_row *r = &l->rows[l->n];
  r->from = strdup(from);
  r->to = strdup(to);
  r->run = strdup(run && *run ? run : MLOG_UNMARKED);
  if (!r->from || !r->to || !r->run) {
    free(r->from), free(r->to), free(r->run);
    return -1;
  }
  r->undo = !strncmp(r->run, MLOG_UNDO, strlen(MLOG_UNDO));
  r->undone = 0;
  size_t i = l->n++;
  if (r->undo)
    mark_undone(l, i);
  else
    chain_in(l, i);
  return 0;
}

/* Rows of the text; 0, or -1 with the message printed. *old: the header
 * has no run column. */
static int parse(mlog *l, char *text, size_t len, int *old) {
  *old = 0;
  if (!len)
    return 0;
  FILE *f = fmemopen(text, len, "r");
  if (!f) {
    fprintf(stderr, "ferry dupes: %s: %s\n", l->path, strerror(errno));
    return -1;
  }
  char **row = NULL;
  size_t n = 0, line = 1;
  int r = fy_csv_row(f, &row, &n), rc = 0;
  const char *h0 = r == 1 && n ? row[0] : "";
  if (!strncmp(h0, "\xef\xbb\xbf", 3)) /* a spreadsheet's byte order mark */
    h0 += 3;
  int ok = r == 1 && (n == 2 || n == 3) && !strcmp(h0, "from") && !strcmp(row[1], "to") &&
           (n == 2 || !strcmp(row[2], "run"));
  *old = ok && n == 2;
  fy_csv_free(row, n);
  if (!ok) {
    fprintf(stderr,
            "ferry dupes: %s: not ferry's undo log (its first line is not from,to,run): "
            "left alone, nothing done\n",
            l->path);
    fclose(f);
    return -1;
  }
  while (!rc && (r = fy_csv_row(f, &row, &n)) != 0) {
    line++;
    if (r < 0) {
      fprintf(stderr, "ferry dupes: %s: line %zu: %s (the log is damaged: nothing done)\n", l->path,
              line, ferry_last_error());
      rc = -1;
      break;
    }
    if (n >= 2 && row[0][0] && row[1][0]) {
      if (add_row(l, row[0], row[1], n >= 3 ? row[2] : NULL) != 0)
        rc = -1, fprintf(stderr, "ferry dupes: out of memory\n");
    } else if (!(n == 1 && !row[0][0])) {
      fprintf(stderr, "ferry dupes: %s: line %zu: not a row of from,to,run: left out\n", l->path,
              line);
    }
    fy_csv_free(row, n);
  }
  fclose(f);
  return rc;
}

/* One row as CSV text (malloc'd, *len bytes). */
static char *row_text(const char *from, const char *to, const char *run, size_t *len) {
  char *buf = NULL;
  FILE *m = open_memstream(&buf, len);
  if (!m)
    return NULL;
  fy_csv_field(m, from); /* quoted where needed: no crafted name forges a row */
  fputc(',', m);
  fy_csv_field(m, to);
  fputc(',', m);
  fy_csv_field(m, run);
  fputc('\n', m);
  if (fclose(m) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static int write_all(int fd, const char *b, size_t n) {
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The exclusive lock, at once or not at all; -1 with the message. */
static int take_lock(mlog *l) {
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (fcntl(l->fd, F_SETLK, &fl) == 0)
    return 0;
  int e = errno;
  struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  char pid[32] = "";
  if ((e == EACCES || e == EAGAIN) && fcntl(l->fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK)
    snprintf(pid, sizeof pid, " (pid %ld)", (long)who.l_pid);
  if (e == EACCES || e == EAGAIN)
    fprintf(stderr,
            "ferry dupes: %s: another apply is running%s (`ferry dupes --move-dupes-to %s "
            "--apply` or `--undo`): nothing done; run again once it has finished\n",
            l->path, pid, l->path);
  else
    fprintf(stderr, "ferry dupes: %s: cannot lock: %s\n", l->path, strerror(e));
  return -1;
}

/* The log's fd, opened without following a link, never waiting on a FIFO;
 * -1 with the message; -2 (nothing said) when it is missing and missing_ok. */
static int open_log(mlog *l, int rootfd, int lock, int missing_ok) {
  int fd, fl = O_NOFOLLOW | (lock ? O_RDWR | O_CREAT | O_APPEND : O_RDONLY);
  if (fy_openat_regular(rootfd, FY_MOVES_LOG, l->path, fl, NULL, &fd) == FERRY_OK)
    return fd;
  int e = errno;
  if (e == ENOENT && missing_ok)
    return -2;
  if (e == ELOOP || e == ENOENT)
    fprintf(stderr, "ferry dupes: %s: %s\n", l->path,
            e == ELOOP ? "a symbolic link: refused (the undo log is a file of its own)"
                       : "no undo log here (nothing was moved into this folder)");
  else
    fprintf(stderr, "ferry dupes: %s\n", ferry_last_error());
  return -1;
}

/* Whether fd is still the file the log's name names (not replaced between
 * its open and its lock by an upgrade). */
static int still_named(int fd, int rootfd) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && fstatat(rootfd, FY_MOVES_LOG, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A two-column log rewritten with the run column (a temporary, synced,
 * renamed over it), then opened and locked in its place. */
static int upgrade(mlog *l, int rootfd) {
  char part[NAME_MAX + 1];
  dfs_part_name(FY_MOVES_LOG, part);
  unlinkat(rootfd, part, 0); /* an interrupted upgrade's */
  int fd = openat(rootfd, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  int ok = fd >= 0 && write_all(fd, header, strlen(header)) == 0;
  for (size_t i = 0; ok && i < l->n; i++) {
    size_t len;
    char *t = row_text(l->rows[i].from, l->rows[i].to, l->rows[i].run, &len);
    ok = t && write_all(fd, t, len) == 0;
    free(t);
  }
  ok = ok && fsync(fd) == 0;
  if (fd >= 0 && close(fd) != 0)
    ok = 0;
  ok = ok && renameat(rootfd, part, rootfd, FY_MOVES_LOG) == 0;
  if (!ok) {
    fprintf(stderr, "ferry dupes: %s: cannot add the run column: %s (nothing done)\n", l->path,
            strerror(errno));
    unlinkat(rootfd, part, 0);
    return -1;
  }
  fsync(rootfd);
  int old = l->fd;
  l->fd = open_log(l, rootfd, 1, 0);
  if (l->fd < 0 || take_lock(l) != 0) {
    if (l->fd >= 0)
      close(l->fd);
    l->fd = old;
    return -1;
  }
  close(old);
  fprintf(stderr, "ferry dupes: %s: an older log: its %zu moves are now run '%s'\n", l->path, l->n,
          MLOG_UNMARKED);
  return 0;
}

int mlog_open(mlog *l, int rootfd, const char *root, int lock, int missing_ok) {
  memset(l, 0, sizeof *l);
  l->fd = -1;
  size_t pn = strlen(root) + sizeof FY_MOVES_LOG + 2;
  l->path = malloc(pn);
  if (!l->path) {
    fprintf(stderr, "ferry dupes: out of memory\n");
    return -1;
  }
  snprintf(l->path, pn, "%s%s%s", root, strcmp(root, "/") ? "/" : "", FY_MOVES_LOG);
  for (int tries = 0;; tries++) {
    l->fd = open_log(l, rootfd, lock, missing_ok);
    if (l->fd == -2) { /* no log yet: no rows */
      l->fd = -1;
      return 0;
    }
    if (l->fd < 0) {
      mlog_close(l);
      return -1;
    }
    if (!lock || (take_lock(l) == 0 && still_named(l->fd, rootfd)))
      break;
    int refused = still_named(l->fd, rootfd); /* else: replaced meanwhile, try again */
    close(l->fd);
    l->fd = -1;
    if (refused || tries == 8) {
      mlog_close(l);
      return -1;
    }
  }
  size_t len = 0;
  char *text = read_all(l->fd, &len);
  int old = 0;
  if (!text) {
    fprintf(stderr, "ferry dupes: %s: cannot read: %s\n", l->path, strerror(errno));
    mlog_close(l);
    return -1;
  }
  int rc = parse(l, text, len, &old);
  if (!rc && lock && len && text[len - 1] != '\n') /* a row cut short: the next starts anew */
    rc = write_all(l->fd, "\n", 1);
  free(text);
  if (!rc && lock && !len && (write_all(l->fd, header, strlen(header)) || fsync(l->fd))) {
    fprintf(stderr, "ferry dupes: %s: write failed: %s (nothing moved)\n", l->path,
            strerror(errno));
    rc = -1;
  }
  if (!rc && lock && old)
    rc = upgrade(l, rootfd);
  if (rc) {
    mlog_close(l);
    return -1;
  }
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
  snprintf(l->run, sizeof l->run, "%s-%ld", when, (long)getpid());
  return 0;
}

int mlog_append(mlog *l, const char *from, const char *to, const char *run) {
  size_t len;
  char *t = row_text(from, to, run, &len);
  int rc = t && write_all(l->fd, t, len) == 0 && fdatasync(l->fd) == 0 ? 0 : -1;
  free(t);
  if (rc) {
    fprintf(stderr, "ferry dupes: %s: write failed: %s\n", l->path, strerror(errno));
    return -1;
  }
  if (add_row(l, from, to, run) != 0) {
    fprintf(stderr, "ferry dupes: out of memory\n");
    return -1;
  }
  return 0;
}

int mlog_has_move(const mlog *l, const char *from, const char *to) {
  if (!l->nbucket)
    return 0;
  for (size_t i = l->bucket[hash_of(to) & (l->nbucket - 1)]; i; i = l->chain[i - 1]) {
    const mlog_row *m = &l->rows[i - 1];
    if (!m->undone && !strcmp(m->to, to) && !strcmp(m->from, from))
      return 1;
  }
  return 0;
}

void mlog_close(mlog *l) {
  if (l->fd >= 0)
    close(l->fd);
  for (size_t i = 0; i < l->n; i++) {
    free(l->rows[i].from);
    free(l->rows[i].to);
    free(l->rows[i].run);
  }
  free(l->rows);
  free(l->chain);
  free(l->bucket);
  free(l->path);
  memset(l, 0, sizeof *l);
  l->fd = -1;
}
