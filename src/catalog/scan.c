/* scan.c — finding the files of a catalog: roots (directories or files)
 * made absolute and canonical, directories walked (recursively by
 * default), image files kept by extension (or every regular file, to be
 * judged by content), symlinked directories not followed (no cycles). */
#include "catalog/catalog.h"
#include "io/walk.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int add(fy_found_list *l, const char *path, const struct stat *st) {
  fy_found *v = fy_grow(l->v, &l->cap, l->n + 1, sizeof *v, 1024);
  if (!v)
    return fy_error(FERRY_ENOMEM, "out of memory listing files");
  l->v = v;
  char *p = strdup(path);
  if (!p)
    return fy_error(FERRY_ENOMEM, "out of memory listing files");
  l->v[l->n++] = (fy_found){p, (uint64_t)st->st_size,
                            (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec};
  return FERRY_OK;
}

static int note_unread(fy_found_list *l, const char *path, int err) {
  if (l->nunread == l->unread_cap) {
    size_t cap = l->unread_cap ? l->unread_cap * 2 : 16;
    char **u = realloc(l->unread, cap * sizeof *u), **w = NULL;
    if (u)
      l->unread = u;
    w = u ? realloc(l->unread_why, cap * sizeof *w) : NULL;
    if (!u || !w)
      return fy_error(FERRY_ENOMEM, "out of memory listing files");
    l->unread_why = w;
    l->unread_cap = cap;
  }
  size_t n = strlen(path) + strlen(strerror(err)) + 3;
  char *p = strdup(path), *why = malloc(n);
  if (!p || !why) {
    free(p);
    free(why);
    return fy_error(FERRY_ENOMEM, "out of memory listing files");
  }
  snprintf(why, n, "%s: %s", path, strerror(err));
  l->unread[l->nunread] = p;
  l->unread_why[l->nunread++] = why;
  return FERRY_OK;
}

static int walk(const char *dir, int recursive, int all_files, int is_root, fy_found_list *out) {
  char **names;
  size_t nn;
  int err = fy_dir_names(dir, &names, &nn);
  if (err == ENOMEM) {
    fy_dir_names_free(names, nn);
    return fy_error(FERRY_ENOMEM, "out of memory listing files");
  }
  if (err) { /* said, and the old entries of this folder kept: never silent */
    int rc = note_unread(out, dir, err);
    if (rc || !nn) {
      fy_dir_names_free(names, nn);
      return rc;
    }
  }
  for (size_t i = 0; !is_root && i < nn; i++)
    if (!strcmp(names[i], FY_MOVES_LOG)) { /* a move destination: not hashed again */
      out->skipped_moves++;
      fy_dir_names_free(names, nn);
      return FERRY_OK;
    }
  size_t dl = strlen(dir);
  int rc = FERRY_OK;
  for (size_t i = 0; i < nn && rc == FERRY_OK; i++) {
    size_t n = dl + strlen(names[i]) + 2;
    char *path = malloc(n);
    if (!path) {
      rc = fy_error(FERRY_ENOMEM, "out of memory listing files");
      break;
    }
    snprintf(path, n, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", names[i]);
    struct stat lst, st;
    if (lstat(path, &lst) != 0) {
      if (errno != ENOENT) /* gone meanwhile: nothing to say */
        rc = note_unread(out, path, errno);
    } else if (S_ISDIR(lst.st_mode)) {
      if (recursive)
        rc = walk(path, recursive, all_files, 0, out);
    } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      int k;
      if (all_files || fy_is_image_name(names[i]))
        rc = add(out, path, &st); /* symlinks to files are followed */
      else if ((k = fy_not_read_format(names[i])) >= 0)
        out->not_read[k]++; /* for the "no image files" message */
    }
    free(path);
  }
  fy_dir_names_free(names, nn);
  return rc;
}

static int by_path(const void *a, const void *b) {
  return strcmp(((const fy_found *)a)->path, ((const fy_found *)b)->path);
}

int fy_path_under(const char *path, const char *root) {
  size_t n = strlen(root);
  if (strncmp(path, root, n))
    return 0;
  return path[n] == '\0' || path[n] == '/' || (n && root[n - 1] == '/');
}

int fy_scan(const char *const *roots, int nroots, int recursive, int all_files, fy_found_list *out,
            char ***canon) {
  memset(out, 0, sizeof *out);
  *canon = calloc((size_t)(nroots > 0 ? nroots : 1), sizeof **canon);
  if (!*canon)
    return fy_error(FERRY_ENOMEM, "out of memory");
  int rc = FERRY_OK;
  for (int i = 0; i < nroots && rc == FERRY_OK; i++) {
    char *real = realpath(roots[i], NULL);
    struct stat st;
    if (!real || stat(real, &st) != 0) {
      rc = fy_error(FERRY_EIO, "%s: %s", roots[i], strerror(errno));
      free(real);
      break;
    }
    (*canon)[i] = real;
    if (S_ISDIR(st.st_mode))
      rc = walk(real, recursive, all_files, 1, out);
    else if (S_ISREG(st.st_mode))
      rc = add(out, real, &st); /* a file named on the command line: always */
    else
      rc = fy_error(FERRY_EINVAL, "%s: not a file or directory", roots[i]);
  }
  if (rc == FERRY_OK && out->n > 1) { /* sorted, overlapping roots merged */
    qsort(out->v, out->n, sizeof *out->v, by_path);
    size_t k = 1;
    for (size_t i = 1; i < out->n; i++) {
      if (!strcmp(out->v[i].path, out->v[k - 1].path))
        free(out->v[i].path);
      else
        out->v[k++] = out->v[i];
    }
    out->n = k;
  }
  if (rc) {
    fy_found_free(out);
    for (int i = 0; i < nroots; i++)
      free((*canon)[i]);
    free(*canon);
    *canon = NULL;
  }
  return rc;
}

void fy_found_free(fy_found_list *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i].path);
  free(l->v);
  for (size_t i = 0; i < l->nunread; i++) {
    free(l->unread[i]);
    free(l->unread_why[i]);
  }
  free(l->unread);
  free(l->unread_why);
  memset(l, 0, sizeof *l);
}
