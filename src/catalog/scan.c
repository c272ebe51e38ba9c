/* scan.c — finding the files of a catalog: roots (directories or files)
 * made absolute and canonical, directories walked (recursively by
 * default), image files kept by extension (or every regular file, to be
 * judged by content), symlinked directories not followed (no cycles),
 * one name kept per file: symbolic links to files left out and, of the
 * hard links of one file, the first path only (docs/DEDUP.md), and
 * the files `ferry dupes` moved into a destination below a root left out
 * (those its ferry-moves.csv lists, never the folder's other files). */
#include "catalog/catalog.h"
#include "catalog/text.h"
#include "core/user_file.h"
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
                            (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
                            (uint64_t)st->st_dev, (uint64_t)st->st_ino};
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

/* The paths ferry moved into the destinations met so far, sorted. */
typedef struct moved_here {
  char **v;
  size_t n, cap;
} moved_here;

static int by_string(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int hidden(const moved_here *h, const char *path) {
  return h->n && bsearch(&path, h->v, h->n, sizeof *h->v, by_string) != NULL;
}

static int hide(moved_here *h, const char *dir, const char *from, const char *to) {
  size_t nt = strlen(to), nf = strlen(from);
  char *p = NULL;
  if (fy_path_under(to, dir) && strlen(to) > strlen(dir))
    p = strdup(to); /* moved here */
  else if (from[0] == '/' && nt > nf && !strcmp(to + nt - nf, from) &&
           (p = malloc(strlen(dir) + nf + 1)))
    sprintf(p, "%s%s", dir, from); /* moved into this folder under its old name */
  else
    return FERRY_OK; /* a row naming a place outside the folder hides nothing */
  char **v = p ? fy_grow(h->v, &h->cap, h->n + 1, sizeof *v, 64) : NULL;
  if (!v) {
    free(p);
    return fy_error(FERRY_ENOMEM, "out of memory listing files");
  }
  h->v = v;
  h->v[h->n++] = p;
  return FERRY_OK;
}

/* The files dir/ferry-moves.csv lists as moved into dir (its rows' `to`;
 * `from` below dir when the folder was renamed since) added to h. A log
 * that cannot be read hides nothing (said). */
static int read_moved_here(moved_here *h, const char *dir) {
  size_t n = strlen(dir) + sizeof FY_MOVES_LOG + 2;
  char *lp = malloc(n);
  if (!lp)
    return fy_error(FERRY_ENOMEM, "out of memory listing files");
  snprintf(lp, n, "%s/%s", dir, FY_MOVES_LOG);
  FILE *f = fy_fopen_regular(lp);
  if (!f) {
    fy_log(FERRY_LOG_WARNING, "%s (the files moved there are hashed as any others)",
           ferry_last_error());
    free(lp);
    return FERRY_OK;
  }
  char **row = NULL;
  size_t nf = 0;
  int cf = -1, ct = -1, r = fy_csv_row(f, &row, &nf), rc = FERRY_OK;
  for (size_t i = 0; r == 1 && i < nf; i++) {
    const char *name = row[i] + (!i && !strncmp(row[i], "\xef\xbb\xbf", 3) ? 3 : 0);
    cf = !strcmp(name, "from") ? (int)i : cf;
    ct = !strcmp(name, "to") ? (int)i : ct;
  }
  if (r == 1)
    fy_csv_free(row, nf);
  while (cf >= 0 && ct >= 0 && !rc && (r = fy_csv_row(f, &row, &nf)) == 1) {
    if ((size_t)cf < nf && (size_t)ct < nf)
      rc = hide(h, dir, row[cf], row[ct]);
    fy_csv_free(row, nf);
  }
  if (r < 0)
    fy_log(FERRY_LOG_WARNING, "%s: %s (the rows after it hide nothing)", lp, ferry_last_error());
  fclose(f);
  free(lp);
  if (h->n > 1)
    qsort(h->v, h->n, sizeof *h->v, by_string);
  return rc;
}

static int walk(const char *dir, int recursive, int all_files, int is_root, moved_here *moved,
                fy_found_list *out) {
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
  int rc = FERRY_OK;
  for (size_t i = 0; !is_root && i < nn; i++)
    if (!strcmp(names[i], FY_THUMBS_MARK)) { /* a review page's thumbnails: not pictures */
      fy_dir_names_free(names, nn);
      return FERRY_OK;
    }
  for (size_t i = 0; !is_root && i < nn && !rc; i++)
    if (!strcmp(names[i], FY_MOVES_LOG)) { /* a move destination: what ferry moved here stays out */
      out->skipped_moves++;
      rc = read_moved_here(moved, dir);
    }
  size_t dl = strlen(dir);
  for (size_t i = 0; i < nn && rc == FERRY_OK; i++) {
    size_t n = dl + strlen(names[i]) + 2;
    char *path = malloc(n);
    if (!path) {
      rc = fy_error(FERRY_ENOMEM, "out of memory listing files");
      break;
    }
    snprintf(path, n, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", names[i]);
    struct stat lst;
    if (lstat(path, &lst) != 0) {
      if (errno != ENOENT) /* gone meanwhile: nothing to say */
        rc = note_unread(out, path, errno);
    } else if (S_ISDIR(lst.st_mode)) {
      if (recursive)
        rc = walk(path, recursive, all_files, 0, moved, out);
    } else if (S_ISLNK(lst.st_mode)) {
      out->skipped_links++; /* another name of a file: never a duplicate of it */
    } else if (hidden(moved, path)) {
      /* moved here by ferry dupes: not hashed back in */
    } else if (S_ISREG(lst.st_mode)) {
      int k;
      if (all_files || fy_is_image_name(names[i]))
        rc = add(out, path, &lst);
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

static const fy_found *by_id_base;

static int by_id(const void *a, const void *b) { /* (dev, ino), then walk order */
  const fy_found *x = &by_id_base[*(const size_t *)a], *y = &by_id_base[*(const size_t *)b];
  if (x->dev != y->dev)
    return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino)
    return x->ino < y->ino ? -1 : 1;
  return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* One name per file (st_dev, st_ino) of the sorted list: the first; the
 * other hard links of it are left out (counted). */
static int one_name_per_file(fy_found_list *l) {
  size_t *ix = malloc(l->n * sizeof *ix);
  if (!ix)
    return fy_error(FERRY_ENOMEM, "out of memory listing files");
  for (size_t i = 0; i < l->n; i++)
    ix[i] = i;
  by_id_base = l->v;
  qsort(ix, l->n, sizeof *ix, by_id);
  for (size_t i = 1; i < l->n; i++)
    if (l->v[ix[i]].dev == l->v[ix[i - 1]].dev && l->v[ix[i]].ino == l->v[ix[i - 1]].ino) {
      free(l->v[ix[i]].path);
      l->v[ix[i]].path = NULL;
      l->skipped_links++;
    }
  free(ix);
  size_t k = 0;
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].path)
      l->v[k++] = l->v[i];
  l->n = k;
  return FERRY_OK;
}

int fy_scan(const char *const *roots, int nroots, int recursive, int all_files, fy_found_list *out,
            char ***canon) {
  memset(out, 0, sizeof *out);
  *canon = calloc((size_t)(nroots > 0 ? nroots : 1), sizeof **canon);
  if (!*canon)
    return fy_error(FERRY_ENOMEM, "out of memory");
  int rc = FERRY_OK;
  moved_here moved = {0};
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
      rc = walk(real, recursive, all_files, 1, &moved, out);
    else if (S_ISREG(st.st_mode))
      rc = add(out, real, &st); /* a file named on the command line: always */
    else
      rc = fy_error(FERRY_EINVAL, "%s: not a file or directory", roots[i]);
    for (size_t k = 0; k < moved.n; k++) /* each root's own: a root is walked whole */
      free(moved.v[k]);
    moved.n = 0;
  }
  free(moved.v);
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
    rc = one_name_per_file(out);
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
