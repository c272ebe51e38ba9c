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
 * usage: bench_gpu_hamming [--n N] [--big N] [--cpu-10m] [--skip-cpu]
 * Needs a CUDA build and a GPU; prints why not otherwise (exit 0). */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include <ferry.h>
#include "bench_rng.h"
#include "tools_tier.h"
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
  if (filter >= 0)
    setenv("FERRY_GPU_HAMMING_FILTER", filter ? "1" : "0", 1);
  else
    unsetenv("FERRY_GPU_HAMMING_FILTER");
  fy_gpu_hamming_stats st;
  double t0 = fy_now();
  int rc = fy_gpu_hamming_pairs(0, c, n, words, t, 0, 0, p, np, &st);
  double dt = fy_now() - t0;
  unsetenv("FERRY_GPU_HAMMING_FILTER");
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
         label, n, t, dt, all_pairs(n) / dt, ferry_search_last_method(), ferry_search_isa(),
         *np);
  return 0;
}

static int same(const ferry_pair *a, size_t na, const ferry_pair *b, size_t nb) {
  return na == nb && (!na || !memcmp(a, b, na * sizeof *a));
}

int main(int argc, char **argv) {
  size_t n = (size_t)1 << 20, big = 10000000;
  int cpu_big = 0, skip_cpu = 0;
  for (int k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "--n") && k + 1 < argc)
      n = strtoull(argv[++k], NULL, 10);
    else if (!strcmp(argv[k], "--big") && k + 1 < argc)
      big = strtoull(argv[++k], NULL, 10);
    else if (!strcmp(argv[k], "--cpu-10m"))
      cpu_big = 1;
    else if (!strcmp(argv[k], "--skip-cpu"))
      skip_cpu = 1;
    else {
      fprintf(stderr, "usage: bench_gpu_hamming [--n N] [--big N] [--cpu-10m] [--skip-cpu]\n");
      return 2;
    }
  }
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
