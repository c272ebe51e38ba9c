/* bench_dupes_robust.c — what the signatures cost `ferry dupes` (issue 19):
 * ferry_dupes_find over an in-memory catalog of N entries, with
 * ferry_search_options.robust 0 (the 256-bit pHash within 72 bits alone)
 * and 1 (plus the 13 codes per entry of robust.c), on the same entries.
 *
 * The entries are random: pHash codes and signature codes uniform (a
 * catalog of unrelated pictures, where the searches do all their work and
 * find almost nothing), thumbnails random. Real catalogs have clusters of
 * near-duplicates, which cost a verification per group merge.
 *
 * usage: bench_dupes_robust [--n N[,N...]] [--threads T] [--device D]
 *
 * Claims it proves (bench/CLAIMS.md): C65. */
#define _POSIX_C_SOURCE 200809L

#include <ferry.h>
#include "bench_rng.h"
#include "tools_tier.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int run(size_t n, int threads, int device) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.hash_size = 16;
  o.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH) | FERRY_HASH_SIGNATURE;
  ferry_catalog *c = NULL;
  if (ferry_catalog_new(&o, &c)) {
    fprintf(stderr, "bench_dupes_robust: %s\n", ferry_last_error());
    return 1;
  }
  ferry_signature sig;
  char path[64];
  for (size_t i = 0; i < n; i++) {
    ferry_catalog_entry e = {.path = path, .size = 1000, .width = 640, .height = 480,
                             .format = FERRY_FORMAT_JPEG, .kinds = o.kinds, .error = ""};
    snprintf(path, sizeof path, "/bench/%09zu.jpg", i);
    e.hash[FERRY_HASH_PHASH].bits = 256;
    for (int w = 0; w < 4; w++)
      e.hash[FERRY_HASH_PHASH].w[w] = next64();
    for (int p = 0; p < FERRY_SIGNATURE_PARTS; p++)
      for (int w = 0; w < 4; w++)
        sig.code[p][w] = next64();
    for (size_t k = 0; k < sizeof sig.thumb; k += 8) {
      uint64_t v = next64();
      memcpy(sig.thumb + k, &v, 8);
    }
    e.signature = &sig;
    if (ferry_catalog_add(c, &e)) {
      fprintf(stderr, "bench_dupes_robust: %s\n", ferry_last_error());
      ferry_catalog_free(c);
      return 1;
    }
  }
  double t[2] = {0, 0};
  size_t groups[2] = {0, 0}, joins = 0;
  for (int robust = 0; robust <= 1; robust++) {
    ferry_search_options so;
    ferry_search_options_default(&so);
    so.threshold = ferry_dupes_default_threshold(FERRY_HASH_PHASH, 16);
    so.threads = threads;
    so.device = device;
    so.robust = robust;
    ferry_dupes *d = NULL;
    double t0 = fy_now();
    if (ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d)) {
      fprintf(stderr, "bench_dupes_robust: %s\n", ferry_last_error());
      ferry_catalog_free(c);
      return 1;
    }
    t[robust] = fy_now() - t0;
    groups[robust] = ferry_dupes_group_count(d);
    if (robust)
      joins = ferry_dupes_signature_joins(d);
    ferry_dupes_free(d);
  }
  printf("%zu entries, %s: pHash alone %.2f s (%zu groups), with signatures %.2f s (%zu groups, "
         "%zu joins): %.1fx\n",
         n, device >= 0 ? "GPU" : ferry_search_isa(), t[0], groups[0], t[1], groups[1], joins,
         t[1] / (t[0] > 0 ? t[0] : 1e-9));
  ferry_catalog_free(c);
  return 0;
}

int main(int argc, char **argv) {
  const char *ns = "10000,40000";
  int threads = 0, device = -1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--n") && i + 1 < argc)
      ns = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_dupes_robust [--n N[,N...]] [--threads T] [--device D]\n");
      return 2;
    }
  }
  char *copy = strdup(ns), *save = NULL;
  int rc = 0;
  for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save))
    rc = run((size_t)strtoull(t, NULL, 10), threads, device);
  free(copy);
  return rc;
}
