/* dupes_fs.c — the file operations of `ferry dupes` moves and undo: folders
 * below a destination opened without following links, moves that never
 * replace a file, copies across file systems through a temporary name
 * (dupes_fs.h). */
#include "dupes_fs.h"

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dfs_open_below(int root, const char *root_shown, const char *rel, int make, const char **leaf,
                   char *why, size_t n) {
  int cur = root;
  const char *p = rel;
  for (;;) {
    while (*p == '/')
      p++;
    const char *slash = strchr(p, '/');
    if (!slash) {
      if (!*p || !strcmp(p, ".") || !strcmp(p, "..")) {
        snprintf(why, n, "%s/%s: not a file's name", root_shown, rel);
        break;
      }
      *leaf = p;
      return cur != root ? cur : fcntl(root, F_DUPFD_CLOEXEC, 0);
    }
    size_t len = (size_t)(slash - p);
    char name[NAME_MAX + 1];
    if (len > NAME_MAX || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
      snprintf(why, n, "%s/%.*s: %s", root_shown, (int)(slash - rel), rel,
               len > NAME_MAX ? strerror(ENAMETOOLONG) : "a '.' or '..' in the path: refused");
      break;
    }
    memcpy(name, p, len);
    name[len] = '\0';
    if (make && mkdirat(cur, name, 0755) != 0 && errno != EEXIST) {
      snprintf(why, n, "%s/%.*s: cannot make the folder: %s", root_shown, (int)(slash - rel), rel,
               strerror(errno));
      break;
    }
    int next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      int e = errno;
      struct stat ls;
      int link =
          e == ELOOP || (fstatat(cur, name, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode));
      snprintf(why, n, "%s/%.*s: %s", root_shown, (int)(slash - rel), rel,
               link           ? "a symbolic link inside the move destination: not followed"
               : e == ENOTDIR ? "not a folder"
                              : strerror(e));
      break;
    }
    if (cur != root)
      close(cur);
    cur = next;
    p = slash + 1;
  }
  if (cur != root)
    close(cur);
  return -1;
}

void dfs_part_name(const char *name, char *out) {
  static const char tail[] = ".ferry-part";
  if (strlen(name) + sizeof tail + 1 <= NAME_MAX + 1) {
    snprintf(out, NAME_MAX + 1, ".%s%s", name, tail);
    return;
  }
  uint64_t h = 1469598103934665603ull; /* FNV-1a: the same long name, the same temporary */
  for (const unsigned char *s = (const unsigned char *)name; *s; s++)
    h = (h ^ *s) * 1099511628211ull;
  snprintf(out, NAME_MAX + 1, "%s-%016llx", tail, (unsigned long long)h);
}

/* renameat that never replaces: renameat2's RENAME_NOREPLACE, else (file
 * systems without it) a hard link and an unlink, else a check and a rename
 * (only one apply runs at a time in a destination: its log is locked). */
static int rename_noreplace(int sd, const char *sn, int dd, const char *dn) {
  if (renameat2(sd, sn, dd, dn, RENAME_NOREPLACE) == 0)
    return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    return -1;
  if (linkat(sd, sn, dd, dn, 0) == 0)
    return unlinkat(sd, sn, 0) == 0 ? 0 : (unlinkat(dd, dn, 0), -1);
  if (errno == EEXIST || errno == EXDEV)
    return -1;
  struct stat st;
  if (fstatat(dd, dn, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    errno = EEXIST;
    return -1;
  }
  return renameat(sd, sn, dd, dn);
}

/* The source opened for a copy: a regular file (through a link when
 * `follow`), never waited on (O_NONBLOCK until it is known not to be a
 * FIFO). -1 with `why`. */
static int open_source(dfs_at src, int follow, struct stat *st, char *why, size_t n) {
  int fd;
  if (fy_openat_regular(src.dir, src.name, src.shown, O_RDONLY | (follow ? 0 : O_NOFOLLOW), st,
                        &fd) != FERRY_OK) {
    snprintf(why, n, "%s: not copied", ferry_last_error());
    return -1;
  }
  return fd;
}

/* in's bytes into out, synced, with in's times; 0, or -1 with errno (the
 * first error; ENOSPC for a short write: the disk is full). */
static int copy_bytes(int in, int out, const struct stat *st) {
  char buf[1 << 16];
  ssize_t r;
  while ((r = read(in, buf, sizeof buf)) > 0) {
    fy_fault_stall(); /* tests: a copy that takes its time (a kill -9 inside it) */
    size_t part = (size_t)r;
    int fault = fy_fail_bytes_due(FY_FAULT_WRITE, part, &part); /* tests: the disk fills */
    ssize_t w = part ? write(out, buf, part) : 0;
    if (fault && w >= 0)
      w = -1, errno = ENOSPC;
    if (w != r) {
      if (w >= 0)
        errno = ENOSPC;
      return -1;
    }
  }
  struct timespec times[2] = {st->st_atim, st->st_mtim};
  return r < 0 || fsync(out) != 0 || futimens(out, times) != 0 ? -1 : 0;
}

/* The move of dfs_move between file systems. */
static int copy_move(dfs_at src, dfs_at dst, int follow, int (*done)(void *), void *arg, char *why,
                     size_t n) {
  struct stat st, ps;
  int in = open_source(src, follow, &st, why, n);
  if (in < 0)
    return DFS_FAIL;
  char part[NAME_MAX + 1];
  dfs_part_name(dst.name, part);
  if (fstatat(dst.dir, part, &ps, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISREG(ps.st_mode) || unlinkat(dst.dir, part, 0) != 0) {
      snprintf(why, n, "%s: the temporary name %s is taken (%s): not moved", dst.shown, part,
               S_ISREG(ps.st_mode) ? strerror(errno) : fy_file_kind(ps.st_mode));
      close(in);
      return DFS_FAIL;
    }
    fprintf(stderr, "ferry dupes: %s: removed %s, a partial copy an interrupted run left\n",
            dst.shown, part);
  }
  int out = openat(dst.dir, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   st.st_mode & 0777);
  int err = out < 0 ? errno : 0;
  if (out >= 0 && copy_bytes(in, out, &st) != 0)
    err = errno;
  if (out >= 0 && close(out) != 0 && !err)
    err = errno;
  close(in);
  int exists = 0;
  if (!err && rename_noreplace(dst.dir, part, dst.dir, dst.name) != 0)
    err = errno, exists = errno == EEXIST;
  if (err) {
    if (out >= 0)
      unlinkat(dst.dir, part, 0);
    if (exists)
      return DFS_EXISTS;
    snprintf(why, n, "cannot move %s to %s: %s", src.shown, dst.shown, strerror(err));
    return DFS_FAIL;
  }
  fsync(dst.dir);
  if (done(arg) != 0) { /* not recorded: the copy goes, the source stays */
    unlinkat(dst.dir, dst.name, 0);
    snprintf(why, n, "%s: not moved (the undo log could not be written)", src.shown);
    return DFS_FAIL;
  }
  if (unlinkat(src.dir, src.name, 0) != 0) {
    snprintf(why, n, "%s: copied to %s (recorded), but the original could not be removed: %s",
             src.shown, dst.shown, strerror(errno));
    return DFS_FAIL;
  }
  return DFS_OK;
}

int dfs_move(dfs_at src, dfs_at dst, int follow, int (*done)(void *), void *arg, char *why,
             size_t n) {
  if (rename_noreplace(src.dir, src.name, dst.dir, dst.name) == 0) {
    fsync(dst.dir);
    if (done(arg) == 0)
      return DFS_OK;
    int back = rename_noreplace(dst.dir, dst.name, src.dir, src.name) == 0;
    snprintf(why, n, "%s: %s (the undo log could not be written)", src.shown,
             back ? "not moved" : "moved but not recorded, and it could not be moved back");
    if (!back)
      snprintf(why + strlen(why), n - strlen(why), ": it is %s", dst.shown);
    return DFS_FAIL;
  }
  if (errno == EEXIST)
    return DFS_EXISTS;
  if (errno != EXDEV) {
    snprintf(why, n, "cannot move %s to %s: %s", src.shown, dst.shown, strerror(errno));
    return DFS_FAIL;
  }
  return copy_move(src, dst, follow, done, arg, why, n);
}

int dfs_same_bytes(dfs_at a, dfs_at b) {
  char why[64];
  struct stat sa, sb;
  int fa = open_source(a, 1, &sa, why, sizeof why),
      fb = fa < 0 ? -1 : open_source(b, 0, &sb, why, sizeof why);
  int same = fa >= 0 && fb >= 0 && sa.st_size == sb.st_size;
  static char x[1 << 16], y[1 << 16];
  while (same) {
    ssize_t r = read(fa, x, sizeof x), s = r > 0 ? read(fb, y, (size_t)r) : 0;
    if (r <= 0) {
      same = r == 0;
      break;
    }
    same = s == r && !memcmp(x, y, (size_t)r);
  }
  if (fa >= 0)
    close(fa);
  if (fb >= 0)
    close(fb);
  return same;
}

int dfs_remove(dfs_at a, char *why, size_t n) {
  if (unlinkat(a.dir, a.name, 0) == 0)
    return 0;
  snprintf(why, n, "%s: cannot remove: %s", a.shown, strerror(errno));
  return -1;
}
