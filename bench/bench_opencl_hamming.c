/* bench_opencl_hamming.c — the all-pairs Hamming search on OpenCL against
 * ferry's CUDA kernels on the same GPU (issue 22's acceptance: OpenCL's
 * throughput >= 50% of CUDA's), and against the CPU where asked:
 *
 *   64-bit, N random codes (default 2^20), threshold 8; 256-bit, N/2 codes,
 *   threshold 72: pairs/s of each backend (best of 3 after a warm-up run),
 *   the pair sets compared.
 *
 * usage: bench_opencl_hamming [--n N] [--opencl D] [--cpu]
 * --opencl D: the OpenCL device (default: the first GPU, else 0). Without
 * CUDA or a CUDA GPU only OpenCL (and --cpu) run; without OpenCL it says
 * why (exit 0).
 *
 * Claims it proves (bench/CLAIMS.md): C54. */
#define _POSIX_C_SOURCE 200809L

#include "bench_rng.h"
#include "tools_tier.h"
#include <ferry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t *random_codes(size_t n, int words) {
  uint64_t *c = malloc(n * words * sizeof *c);
  if (!c) {
    fprintf(stderr, "out of memory for %zu codes\n", n);
    exit(1);
  }
  for (size_t i = 0; i < n * words; i++)
    c[i] = next64();
  return c;
}

static int same(const ferry_pair *a, size_t na, const ferry_pair *b, size_t nb) {
  return na == nb && (na == 0 || !memcmp(a, b, na * sizeof *a));
}

typedef int (*search_fn)(int dev, const uint64_t *codes, size_t n, int words, int t, ferry_pair **p,
                         size_t *np);

static int run_cuda(int dev, const uint64_t *codes, size_t n, int words, int t, ferry_pair **p,
                    size_t *np) {
  return fy_gpu_hamming_pairs(dev, codes, n, words, t, 0, 0, p, np, NULL);
}

static int run_opencl(int dev, const uint64_t *codes, size_t n, int words, int t, ferry_pair **p,
                      size_t *np) {
  return fy_cl_hamming_pairs(dev, codes, n, words, t, 0, 0, p, np, NULL);
}

static int run_cpu(int dev, const uint64_t *codes, size_t n, int words, int t, ferry_pair **p,
                   size_t *np) {
  (void)dev;
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = t;
  o.method = FERRY_SEARCH_BRUTE;
  return ferry_hamming_pairs(codes, n, words, &o, p, np);
}

/* Best of 3 timed runs after a warm-up; the pairs of the last into *p. */
static double timed(search_fn f, int dev, const uint64_t *codes, size_t n, int words, int t,
                    ferry_pair **p, size_t *np, int reps) {
  double best = 1e30;
  for (int r = 0; r <= reps; r++) {
    ferry_pairs_free(*p);
    *p = NULL;
    double t0 = fy_now();
    if (f(dev, codes, n, words, t, p, np) != FERRY_OK) {
      printf("  failed: %s\n", ferry_last_error());
      return -1;
    }
    double dt = fy_now() - t0;
    if (r && dt < best)
      best = dt;
  }
  return best;
}

static void section(size_t n, int words, int t, int cuda, int ocl, int cpu) {
  uint64_t *codes = random_codes(n, words);
  double pairs = (double)n * (double)(n - 1) / 2;
  printf("%d-bit, %zu random codes, threshold %d (%.3g pairs looked at):\n", 64 * words, n, t,
         pairs);
  ferry_pair *pc = NULL, *po = NULL, *pp = NULL;
  size_t nc = 0, no = 0, np = 0;
  double tc = -1, to = -1;
  if (cuda) {
    tc = timed(run_cuda, 0, codes, n, words, t, &pc, &nc, 3);
    if (tc > 0)
      printf("  CUDA cuda:0      %8.4f s  %7.1f G pairs/s  %zu pairs\n", tc, pairs / tc * 1e-9, nc);
  }
  to = timed(run_opencl, ocl, codes, n, words, t, &po, &no, 3);
  if (to > 0)
    printf("  OpenCL opencl:%d  %8.4f s  %7.1f G pairs/s  %zu pairs\n", ocl, to, pairs / to * 1e-9,
           no);
  if (tc > 0 && to > 0)
    printf("  OpenCL / CUDA throughput: %.0f%%; pairs %s\n", 100 * tc / to,
           same(pc, nc, po, no) ? "identical" : "DIFFER");
  if (cpu) {
    double tp = timed(run_cpu, 0, codes, n, words, t, &pp, &np, 1);
    if (tp > 0)
      printf("  CPU brute force  %8.4f s  %7.1f G pairs/s  %zu pairs; OpenCL's %s\n", tp,
             pairs / tp * 1e-9, np, same(pp, np, po, no) ? "identical" : "DIFFER");
  }
  ferry_pairs_free(pc);
  ferry_pairs_free(po);
  ferry_pairs_free(pp);
  free(codes);
}

int main(int argc, char **argv) {
  size_t n = 1 << 20;
  int ocl = -1, cpu = 0;
  for (int k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "--n") && k + 1 < argc)
      n = strtoull(argv[++k], NULL, 10);
    else if (!strcmp(argv[k], "--opencl") && k + 1 < argc)
      ocl = atoi(argv[++k]);
    else if (!strcmp(argv[k], "--cpu"))
      cpu = 1;
    else {
      fprintf(stderr, "usage: bench_opencl_hamming [--n N] [--opencl D] [--cpu]\n");
      return 2;
    }
  }
  fy_cl_device_info *devs = NULL;
  int count = 0, platforms = 0;
  if (fy_cl_devices(&devs, &count, &platforms) != FERRY_OK || !count) {
    printf("no OpenCL device: %s\n", count ? "" : ferry_last_error());
    return 0;
  }
  for (int d = 0; d < count; d++) {
    printf("opencl:%d: %s (%s; %s)\n", d, devs[d].name, devs[d].platform_name, devs[d].version);
    if (ocl < 0 && devs[d].gpu)
      ocl = d;
  }
  if (ocl < 0)
    ocl = 0;
  free(devs);
  int cuda = fy_gpu_hamming_available(0) == FERRY_OK;
  if (!cuda)
    printf("CUDA: %s\n", ferry_last_error());
  section(n, 1, 8, cuda, ocl, cpu);
  section(n / 2, 4, 72, cuda, ocl, cpu);
  return 0;
}
