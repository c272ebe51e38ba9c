/* catalog_check.h — what the GPU hashing tests do with catalogs: build one
 * of a directory with ferry_index_update (errors kept quiet: they are in
 * the catalog), and read its CSV export back. */
#ifndef FY_TEST_CATALOG_CHECK_H
#define FY_TEST_CATALOG_CHECK_H

#include <ferry.h>
#include <stdio.h>
#include <stdlib.h>

static inline void quiet_error(void *user, const char *path, int status, const char *msg) {
  (void)user, (void)path, (void)status, (void)msg;
}

/* ferry_index_update of dir into idx with `mode` and `kinds` on `device`. */
static inline int index_dir(const char *idx, const char *dir, int device, ferry_hash_mode mode,
                            unsigned kinds, ferry_index_stats *st) {
  ferry_index_options o;
  ferry_index_options_default(&o);
  o.hash.mode = mode;
  o.hash.kinds = kinds;
  o.device = device;
  o.on_error = quiet_error;
  return ferry_index_update(idx, &dir, 1, &o, st);
}

/* A whole file as a string, or NULL. */
static inline char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  size_t got = s ? fread(s, 1, (size_t)n, f) : 0;
  fclose(f);
  if (s)
    s[got] = 0;
  return s;
}

/* The catalog's CSV export (ferry index export), or NULL. */
static inline char *export_csv(const char *idx, const char *csv) {
  ferry_catalog *c = NULL;
  if (ferry_catalog_load(idx, &c) || ferry_catalog_export(c, csv, "csv")) {
    fprintf(stderr, "  %s: %s\n", idx, ferry_last_error());
    ferry_catalog_free(c);
    return NULL;
  }
  ferry_catalog_free(c);
  return slurp(csv);
}

#endif
