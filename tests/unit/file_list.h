/* file_list.h — the tests' list of file paths: a directory walked
 * recursively (dot files left out), with a name filter, sorted on demand. */
#ifndef FY_TEST_FILE_LIST_H
#define FY_TEST_FILE_LIST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

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

/* The corpus files under corpus/<sub> for each of subs whose name `keep`
 * accepts: every one in the full tier (check_full), else those of the quick
 * tier's sample (tests/fixtures/corpus_sample.txt). Returns how many were
 * added; says which on stdout. */
static inline size_t list_corpus(const char *corpus, const char *const *subs, int nsubs,
                                 int (*keep)(const char *name), list *out) {
  size_t before = out->n;
  char path[4096], line[1024];
  if (check_full()) {
    for (int k = 0; k < nsubs; k++) {
      snprintf(path, sizeof path, "%s/%s", corpus, subs[k]);
      list_walk(path, keep, out);
    }
    printf("  the whole corpus (%zu files)\n", out->n - before);
    return out->n - before;
  }
  snprintf(path, sizeof path, "%s/corpus_sample.txt", check_fixtures());
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: cannot be read\n", path);
    return 0;
  }
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    const char *slash = strchr(line, '/');
    if (!*line || *line == '#' || !slash)
      continue;
    int in = 0;
    for (int k = 0; k < nsubs && !in; k++)
      in = strlen(subs[k]) == (size_t)(slash - line) && !strncmp(line, subs[k], slash - line);
    struct stat st;
    if (in && (!keep || keep(slash + 1)) &&
        snprintf(path, sizeof path, "%s/%s", corpus, line) < (int)sizeof path && !stat(path, &st))
      list_add(out, path);
  }
  fclose(f);
  printf("  the corpus sample of tests/fixtures/corpus_sample.txt (%zu files; every one in "
         "make test-full)\n",
         out->n - before);
  return out->n - before;
}

#endif
