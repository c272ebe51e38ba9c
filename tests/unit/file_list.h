/* file_list.h — the tests' list of file paths: a directory walked
 * recursively (dot files left out), with a name filter, sorted on demand. */
#ifndef FY_TEST_FILE_LIST_H
#define FY_TEST_FILE_LIST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct list {
  char **v;
  size_t n, cap;
} list;

static inline void list_add(list *l, const char *s) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
  }
  l->v[l->n++] = strdup(s);
}

static inline void list_free(list *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static inline int list_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline void list_sort(list *l) { qsort(l->v, l->n, sizeof *l->v, list_cmp_str); }

/* Regular files under dir whose name `keep` accepts (NULL: all). */
static inline void list_walk(const char *dir, int (*keep)(const char *name), list *out) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path || stat(path, &st))
      continue;
    if (S_ISDIR(st.st_mode))
      list_walk(path, keep, out);
    else if (S_ISREG(st.st_mode) && (!keep || keep(e->d_name)))
      list_add(out, path);
  }
  closedir(d);
}

#endif
