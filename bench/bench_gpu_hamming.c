/* bench_gpu_hamming.c — all-pairs Hamming search, GPU against CPU, in one
 * run (issue 7's acceptance):
 *
 *   1. 64-bit, N random codes (default 2^20), threshold 8: pairs/s of the
 *      GPU kernels (both kernels: lower bound first, and exact), the CPU
 *      brute force and the CPU's automatic choice (multi-index hashing) on
 *      the same codes; the pair sets compared.
 *   2. 256-bit, N/2 random codes, threshold 72 (the catalog default): GPU
 *      and CPU brute force.
 *   3. top-k (k = 8) of 2^17 64-bit codes, GPU and CPU, compared.
 *   4. 10 million random 64-bit codes, all pairs within 8 bits, end to end
 *      through ferry_hamming_pairs(device = 0): upload, kernels, copies,
 *      sort (target: under two minutes). --cpu-10m also runs the CPU on them
 *      (slow) and compares.
 *
 * --multi LIST (alone: nothing else runs): several devices (issue 21's
 * search on several GPUs): --multi-n random 64-bit codes (default
 * 20,000,000), all pairs within 8 bits, end to end through
 * ferry_hamming_pairs on the list's first device alone, then on the list
 * (ferry_search_options.devices; "0,0": two threads on one GPU, "0,1,2,3"
 * four GPUs): pairs/s of each, whether the pairs are identical, the
 * speed-up; then the top-k (k = 8) of --multi-topk-n random 64-bit codes
 * (default 2^20) the same way: distances/s, whether the neighbours are
 * identical, the speed-up. N = 0 leaves either out. Exit 1 when they
 * differ.
 *
 * usage: bench_gpu_hamming [--n N] [--big N] [--cpu-10m] [--skip-cpu]
 *        bench_gpu_hamming --multi 0,1[,...] [--multi-n N] [--multi-topk-n N]
 * Needs a CUDA build and a GPU; prints why not otherwise (exit 0).
 *
 * Claims it proves (bench/CLAIMS.md): C32, C59. */
#include "bench_rng.h"
#include "tools_tier.h"
#include <ferry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t *random_codes(size_t n, int words) {
  uint64_t *c = malloc(n * words * sizeof *c);
  if (!c) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (size_t k = 0; k < n * (size_t)words; k++)
    c[k] = next64();
  return c;
}

static double all_pairs(size_t n) { return (double)n * (double)(n - 1) / 2.0; }

/* One GPU run through the internal entry (stats: kernel time). */
static int gpu(const char *label, const uint64_t *c, size_t n, int words, int t, int filter,
               ferry_pair **p, size_t *np) {
  /* The kernel choice forced through the test control FERRY_GPU_HAMMING_FILTER
   * (the environment is read once: set in-process; -1 leaves the choice). */
  fy_tc_set(FY_TC_GPU_HAMMING_FILTER, filter < 0 ? NULL : filter ? "1" : "0");
  fy_gpu_hamming_stats st;
  double t0 = fy_now();
  int rc = fy_gpu_hamming_pairs(0, c, n, words, t, 0, 0, p, np, &st);
  double dt = fy_now() - t0;
  fy_tc_set(FY_TC_GPU_HAMMING_FILTER, NULL);
  if (rc) {
    printf("%-34s FAILED: %s\n", label, ferry_last_error());
    return rc;
  }
  printf("%-34s n=%-9zu t=%-3d %8.3f s total, %8.3f s search: %9.3e pairs/s  [%s, %zu "
         "launches] %zu pairs\n",
         label, n, t, dt, st.search_s, all_pairs(n) / st.search_s,
         st.filter ? "bound first" : "exact", st.launches, *np);
  return 0;
}

static int cpu(const char *label, const uint64_t *c, size_t n, int words, int t,
               ferry_search_method m, ferry_pair **p, size_t *np) {
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = t;
  o.method = m;
  double t0 = fy_now();
  int rc = ferry_hamming_pairs(c, n, words, &o, p, np);
  double dt = fy_now() - t0;
  if (rc) {
    printf("%-34s FAILED: %s\n", label, ferry_last_error());
    return rc;
  }
  printf("%-34s n=%-9zu t=%-3d %8.3f s total: %9.3e pairs/s  [%s, %s, all cores] %zu pairs\n",
         label, n, t, dt, all_pairs(n) / dt, ferry_search_last_method(), ferry_search_isa(), *np);
  return 0;
}

static int same(const ferry_pair *a, size_t na, const ferry_pair *b, size_t nb) {
  return na == nb && (!na || !memcmp(a, b, na * sizeof *a));
}

/* "0,1,..." into devices[]; the count, or -1 naming the bad part. */
static int parse_list(const char *s, int *devices) {
  int nd = 0;
  for (const char *p = s;; p++) {
    char *end;
    long d = strtol(p, &end, 10);
    if (end == p || d < 0 || d > 255 || (*end && *end != ',') || nd == FERRY_MAX_SEARCH_DEVICES) {
      fprintf(stderr, "--multi: '%s' is not a list of 1..%d device numbers\n", s,
              FERRY_MAX_SEARCH_DEVICES);
      return -1;
    }
    devices[nd++] = (int)d;
    if (!*end)
      return nd;
    p = end;
  }
}

/* One end-to-end search of the multi-device comparison. */
static int multi_run(const char *label, const uint64_t *codes, size_t n, const int *devices, int nd,
                     ferry_pair **p, size_t *np, double *seconds) {
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = 8;
  o.ndevices = nd;
  memcpy(o.devices, devices, (size_t)nd * sizeof *devices);
  double t0 = fy_now();
  int rc = ferry_hamming_pairs(codes, n, 1, &o, p, np);
  *seconds = fy_now() - t0;
  if (rc) {
    printf("%-28s FAILED: %s\n", label, ferry_last_error());
    return rc;
  }
  printf("%-28s %8.2f s end to end: %9.3e pairs/s, %zu pairs\n", label, *seconds,
         all_pairs(n) / *seconds, *np);
  return 0;
}

/* --multi: the first device alone against the whole list. */
/* One top-k (k = 8) of the multi-device comparison. */
static int multi_topk_run(const char *label, const uint64_t *codes, size_t n, const int *devices,
                          int nd, ferry_neighbor *out, double *seconds) {
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.ndevices = nd;
  memcpy(o.devices, devices, (size_t)nd * sizeof *devices);
  double t0 = fy_now();
  int rc = ferry_hamming_topk(codes, n, 1, 8, &o, out);
  *seconds = fy_now() - t0;
  if (rc) {
    printf("%-28s FAILED: %s\n", label, ferry_last_error());
    return rc;
  }
  printf("%-28s %8.2f s end to end: %9.3e distances/s\n", label, *seconds,
         (double)n * (double)n / *seconds);
  return 0;
}

/* --multi's top-k: the first device alone against the whole list. */
static int multi_topk(const char *list, const int *devices, int nd, size_t n) {
  printf("== top-k (k = 8) of %zu random 64-bit codes (%.3e distances): cuda:%d alone, then "
         "devices %s (blocks of %zu queries)\n",
         n, (double)n * (double)n, devices[0], list, fy_topk_block(n, nd));
  uint64_t *codes = random_codes(n, 1);
  ferry_neighbor *one = malloc(n * 8 * sizeof *one), *many = malloc(n * 8 * sizeof *many);
  if (!one || !many) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  double s1 = 0, s2 = 0;
  char label[64];
  snprintf(label, sizeof label, "top-k, 1 device (cuda:%d)", devices[0]);
  int bad = multi_topk_run(label, codes, n, devices, 1, one, &s1);
  snprintf(label, sizeof label, "top-k, %d devices (%s)", nd, list);
  bad |= multi_topk_run(label, codes, n, devices, nd, many, &s2);
  if (!bad) {
    int ok = !memcmp(one, many, n * 8 * sizeof *one);
    printf("same neighbours, 1 device and %d: %s; speed-up %.2fx\n", nd, ok ? "yes" : "NO",
           s1 / s2);
    bad = !ok;
  }
  free(one);
  free(many);
  free(codes);
  return bad;
}

static int multi(const char *list, size_t n, size_t topk_n) {
  int devices[FERRY_MAX_SEARCH_DEVICES], nd = parse_list(list, devices);
  if (nd < 0)
    return 2;
  for (int d = 0; d < nd; d++)
    if (fy_gpu_hamming_available(devices[d]) != FERRY_OK) {
      printf("SKIPPED: GPU Hamming benchmark on cuda:%d: %s\n", devices[d], ferry_last_error());
      return 0;
    }
  { /* warm-up: each device's context and module load (both kernels) */
    uint64_t *w = random_codes(4096, 1);
    ferry_neighbor *nb = malloc(4096 * 8 * sizeof *nb);
    for (int d = 0; d < nd; d++) {
      ferry_pair *g = NULL;
      size_t ng = 0;
      if (fy_gpu_hamming_pairs(devices[d], w, 4096, 1, 8, 0, 0, &g, &ng, NULL) ||
          fy_gpu_hamming_topk(devices[d], w, 4096, 1, 8, nb)) {
        printf("GPU warm-up on cuda:%d failed: %s\n", devices[d], ferry_last_error());
        return 1;
      }
      free(g);
    }
    free(nb);
    free(w);
  }
  int bad = topk_n ? multi_topk(list, devices, nd, topk_n) : 0;
  if (!n)
    return bad ? 1 : 0;
  printf("== %zu random 64-bit codes, all pairs within 8 bits (%.3e pairs): cuda:%d alone, "
         "then devices %s\n",
         n, all_pairs(n), devices[0], list);
  uint64_t *codes = random_codes(n, 1);
  ferry_pair *one = NULL, *many = NULL;
  size_t none = 0, nmany = 0;
  double s1 = 0, s2 = 0;
  char label[64];
  snprintf(label, sizeof label, "1 device (cuda:%d)", devices[0]);
  int pbad = multi_run(label, codes, n, devices, 1, &one, &none, &s1);
  snprintf(label, sizeof label, "%d devices (%s)", nd, list);
  pbad |= multi_run(label, codes, n, devices, nd, &many, &nmany, &s2);
  if (!pbad) {
    int ok = same(one, none, many, nmany);
    printf("same pairs, 1 device and %d: %s; speed-up %.2fx\n", nd, ok ? "yes" : "NO", s1 / s2);
    pbad = !ok;
  }
  bad |= pbad;
  ferry_pairs_free(one);
  ferry_pairs_free(many);
  free(codes);
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  size_t n = (size_t)1 << 20, big = 10000000, multi_n = 20000000, multi_topk_n = (size_t)1 << 20;
  int cpu_big = 0, skip_cpu = 0;
  const char *multi_list = NULL;
  for (int k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "--n") && k + 1 < argc)
      n = strtoull(argv[++k], NULL, 10);
    else if (!strcmp(argv[k], "--big") && k + 1 < argc)
      big = strtoull(argv[++k], NULL, 10);
    else if (!strcmp(argv[k], "--cpu-10m"))
      cpu_big = 1;
    else if (!strcmp(argv[k], "--skip-cpu"))
      skip_cpu = 1;
    else if (!strcmp(argv[k], "--multi") && k + 1 < argc)
      multi_list = argv[++k];
    else if (!strcmp(argv[k], "--multi-n") && k + 1 < argc)
      multi_n = strtoull(argv[++k], NULL, 10);
    else if (!strcmp(argv[k], "--multi-topk-n") && k + 1 < argc)
      multi_topk_n = strtoull(argv[++k], NULL, 10);
    else {
      fprintf(stderr, "usage: bench_gpu_hamming [--n N] [--big N] [--cpu-10m] [--skip-cpu]\n"
                      "       bench_gpu_hamming --multi 0,1[,...] [--multi-n N] "
                      "[--multi-topk-n N]\n");
      return 2;
    }
  }
  if (multi_list)
    return multi(multi_list, multi_n, multi_topk_n);
  if (fy_gpu_hamming_available(0) != FERRY_OK) {
    printf("SKIPPED: GPU Hamming benchmark: %s\n", ferry_last_error());
    return 0;
  }
  int bad = 0;
  ferry_pair *g = NULL, *c = NULL;
  size_t ng = 0, nc = 0;
  { /* warm-up: the CUDA context and module load */
    uint64_t *w = random_codes(4096, 1);
    if (fy_gpu_hamming_pairs(0, w, 4096, 1, 8, 0, 0, &g, &ng, NULL)) {
      printf("GPU warm-up failed: %s\n", ferry_last_error());
      return 1;
    }
    free(g);
    free(w);
  }

  printf("== 64-bit all pairs (%.3e pairs)\n", all_pairs(n));
  uint64_t *codes = random_codes(n, 1);
  bad |= gpu("gpu 64-bit, automatic kernel", codes, n, 1, 8, -1, &g, &ng);
  free(g);
  bad |= gpu("gpu 64-bit, exact kernel", codes, n, 1, 8, 0, &g, &ng);
  if (!skip_cpu) {
    bad |= cpu("cpu 64-bit brute force", codes, n, 1, 8, FERRY_SEARCH_BRUTE, &c, &nc);
    printf("same pairs, GPU and CPU: %s\n", same(g, ng, c, nc) ? "yes" : "NO");
    bad |= !same(g, ng, c, nc);
    ferry_pairs_free(c);
    bad |= cpu("cpu 64-bit automatic", codes, n, 1, 8, FERRY_SEARCH_AUTO, &c, &nc);
    ferry_pairs_free(c);
  }
  free(g);
  free(codes);

  size_t n4 = n / 2;
  printf("== 256-bit all pairs (%.3e pairs)\n", all_pairs(n4));
  codes = random_codes(n4, 4);
  bad |= gpu("gpu 256-bit, automatic kernel", codes, n4, 4, 72, -1, &g, &ng);
  free(g);
  bad |= gpu("gpu 256-bit, exact kernel", codes, n4, 4, 72, 0, &g, &ng);
  if (!skip_cpu) {
    bad |= cpu("cpu 256-bit brute force", codes, n4, 4, 72, FERRY_SEARCH_BRUTE, &c, &nc);
    printf("same pairs, GPU and CPU: %s\n", same(g, ng, c, nc) ? "yes" : "NO");
    bad |= !same(g, ng, c, nc);
    ferry_pairs_free(c);
  }
  free(g);
  free(codes);

  { /* top-k: 2^17 codes, k = 8, GPU against CPU */
    size_t nk = (size_t)1 << 17;
    int k = 8;
    uint64_t *kc = random_codes(nk, 1);
    ferry_neighbor *a = malloc(nk * k * sizeof *a), *b = malloc(nk * k * sizeof *b);
    ferry_search_options o;
    ferry_search_options_default(&o);
    double t0 = fy_now();
    int rc = ferry_hamming_topk(kc, nk, 1, k, &o, a);
    double cpu_s = fy_now() - t0;
    o.device = 0;
    t0 = fy_now();
    rc |= ferry_hamming_topk(kc, nk, 1, k, &o, b);
    double gpu_s = fy_now() - t0;
    int ok = !rc && !memcmp(a, b, nk * k * sizeof *a);
    printf("== top-k, 64-bit, n=%zu k=%d: cpu %.3f s, gpu %.3f s (%.3e distances/s): %s\n", nk, k,
           cpu_s, gpu_s, (double)nk * (double)nk / gpu_s, ok ? "same neighbours" : "DIFFERENT");
    bad |= !ok;
    free(a);
    free(b);
    free(kc);
  }

  printf("== %zu random 64-bit codes, all pairs within 8 bits, end to end (%.3e pairs)\n", big,
         all_pairs(big));
  codes = random_codes(big, 1);
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = 8;
  o.device = 0;
  double t0 = fy_now();
  int rc = ferry_hamming_pairs(codes, big, 1, &o, &g, &ng);
  double dt = fy_now() - t0;
  if (rc) {
    printf("gpu end to end FAILED: %s\n", ferry_last_error());
    bad = 1;
  } else {
    printf("gpu end to end: %.2f s (target < 120 s), %.3e pairs/s, %zu pairs: %s\n", dt,
           all_pairs(big) / dt, ng, dt < 120 ? "PASS" : "FAIL");
  }
  if (cpu_big && !rc) {
    bad |= cpu("cpu 10M automatic", codes, big, 1, 8, FERRY_SEARCH_AUTO, &c, &nc);
    printf("same pairs, GPU and CPU: %s\n", same(g, ng, c, nc) ? "yes" : "NO");
    bad |= !same(g, ng, c, nc);
    ferry_pairs_free(c);
  }
  ferry_pairs_free(g);
  free(codes);
  return bad ? 1 : 0;
}
