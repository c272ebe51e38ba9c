/* user_file.c — a user's paths: inputs opened as regular files only, and no
 * output over an input (the rules: user_file.h). */
#include "core/user_file.h"
#include "core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *fy_file_kind(mode_t mode) {
  return S_ISREG(mode)    ? "a regular file"
         : S_ISDIR(mode)  ? "a folder"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
         : S_ISLNK(mode)  ? "a symbolic link"
                          : "an unknown kind of file";
}

int fy_openat_regular(int dir, const char *name, const char *shown, int flags, struct stat *st,
                      int *fdp) {
  *fdp = -1;
  shown = shown ? shown : name;
  /* O_NONBLOCK: open() of a FIFO would otherwise wait for a writer (and of
   * some devices for a carrier); the kind is known only once it is open. */
  int fd = openat(dir, name, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
  if (fd < 0) {
    int e = errno;
    fy_error(FERRY_EIO, "%s: cannot open: %s", shown, strerror(e));
    errno = e;
    return FERRY_EIO;
  }
  struct stat own;
  struct stat *s = st ? st : &own;
  if (fstat(fd, s) != 0) {
    int e = errno;
    close(fd);
    fy_error(FERRY_EIO, "%s: cannot stat: %s", shown, strerror(e));
    errno = e;
    return FERRY_EIO;
  }
  if (!S_ISREG(s->st_mode)) {
    close(fd);
    fy_error(FERRY_EINVAL, "%s: %s, not a regular file (refused: ferry reads files only)", shown,
             fy_file_kind(s->st_mode));
    errno = EINVAL;
    return FERRY_EINVAL;
  }
  /* blocking reads again: some file systems (FUSE) pass the flag on */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *fdp = fd;
  return FERRY_OK;
}

int fy_open_regular(const char *path, struct stat *st, int *fd) {
  return fy_openat_regular(AT_FDCWD, path, NULL, O_RDONLY, st, fd);
}

FILE *fy_fopen_regular(const char *path) {
  int fd;
  if (fy_open_regular(path, NULL, &fd) != FERRY_OK)
    return NULL;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    fy_error(FERRY_ENOMEM, "%s: cannot open: %s", path, strerror(e));
  }
  return f;
}

/* The absolute, link-free form of `path`, which need not exist: the
 * nearest existing folder above it resolved, the names below it appended
 * as they are ("." and ".." among them folded lexically). NULL when no
 * part can be resolved or it is too long. Caller frees. */
static char *resolve_loose(const char *path) {
  char *real = realpath(path, NULL);
  if (real)
    return real;
  size_t n = strlen(path);
  if (!n || n >= PATH_MAX)
    return NULL;
  char *head = strdup(path);
  if (!head)
    return NULL;
  const char *tail = NULL; /* the part below the folder that exists */
  for (;;) {
    char *slash = strrchr(head, '/');
    while (slash && slash > head && slash[1] == '\0') { /* "a/b/" */
      *slash = '\0';
      slash = strrchr(head, '/');
    }
    if (!slash) {
      tail = path;
      real = realpath(".", NULL);
      break;
    }
    if (slash == head) { /* "/name" */
      tail = path + 1;
      real = strdup("/");
      break;
    }
    *slash = '\0';
    tail = path + (slash - head) + 1;
    real = realpath(head, NULL);
    if (real)
      break;
  }
  free(head);
  if (!real)
    return NULL;
  size_t cap = strlen(real) + strlen(tail) + 2;
  char *out = malloc(cap);
  if (!out) {
    free(real);
    return NULL;
  }
  strcpy(out, real);
  free(real);
  /* the tail's names, one by one: ".." climbs, "." and "" vanish */
  const char *p = tail;
  while (*p) {
    const char *e = strchr(p, '/');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.') {
      char *up = strrchr(out, '/');
      if (up == out)
        out[1] = '\0';
      else if (up)
        *up = '\0';
    } else if (len && !(len == 1 && p[0] == '.')) {
      size_t at = strlen(out);
      if (at > 1 || out[0] != '/')
        out[at++] = '/';
      memcpy(out + at, p, len);
      out[at + len] = '\0';
    }
    p += len;
    if (*p == '/')
      p++;
  }
  return out;
}

int fy_path_under(const char *path, const char *root) {
  size_t n = strlen(root);
  if (strncmp(path, root, n))
    return 0;
  return path[n] == '\0' || path[n] == '/' || (n && root[n - 1] == '/');
}

int fy_out_guard(const char *out, const char *input) {
  if (!out || !input || !*out || !*input)
    return FERRY_OK;
  struct stat si, so;
  if (stat(input, &si) != 0)
    return FERRY_OK; /* its reader names it */
  int exists = stat(out, &so) == 0;
  if (exists && !S_ISREG(so.st_mode) && !S_ISDIR(so.st_mode))
    return FERRY_OK; /* a device, FIFO or socket: written into, never replaced */
  if (exists && so.st_dev == si.st_dev && so.st_ino == si.st_ino)
    return fy_error(FERRY_EINVAL,
                    "%s: is the input %s (refusing to overwrite it: write the output "
                    "elsewhere)",
                    out, input);
  if (!S_ISDIR(si.st_mode))
    return FERRY_OK;
  char *ro = resolve_loose(out), *ri = realpath(input, NULL);
  int inside = ro && ri && fy_path_under(ro, ri);
  free(ro);
  free(ri);
  if (inside)
    return fy_error(FERRY_EINVAL,
                    "%s: inside the input folder %s (refusing to write among the files the "
                    "command reads: write the output elsewhere)",
                    out, input);
  return FERRY_OK;
}
