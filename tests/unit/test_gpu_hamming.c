/* test_gpu_hamming.c — the GPU all-pairs Hamming search (src/cuda/hamming.cu)
 * against the CPU search: identical pair sets (same order, same distances)
 * for 64- and 256-bit codes, random and clustered, at thresholds on both
 * sides of real distances, with both GPU kernels (lower-bound filter and
 * exact); output-buffer overflow (more pairs than the buffer holds, down to
 * a one-pair buffer) without loss; max_pairs; the public API with
 * options.device; top-k against the CPU's; several devices (device 0 listed
 * twice or more: host threads sharing the GPU) against the CPU. Without
 * CUDA or a GPU every part is SKIPPED with the reason. */
#include "check.h"
#include "core/testctl.h"
#include "cuda/hamming.h"
#include "hamming_testutil.h"

#include <ferry.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* GPU with a given buffer against the CPU; returns 1 when identical. */
static int compare(const char *what, const uint64_t *c, size_t n, int words, int t, size_t buffer,
                   fy_gpu_hamming_stats *st) {
  ferry_pair *ref = NULL, *got = NULL;
  size_t nref = 0, ngot = 0;
  int ok = 0;
  if (ht_cpu_pairs(c, n, words, t, FERRY_SEARCH_BRUTE, &ref, &nref) != FERRY_OK)
    fprintf(stderr, "%s: CPU: %s\n", what, ferry_last_error());
  else if (fy_gpu_hamming_pairs(0, c, n, words, t, 0, buffer, &got, &ngot, st) != FERRY_OK)
    fprintf(stderr, "%s: GPU: %s\n", what, ferry_last_error());
  else
    ok = ht_same_pairs(what, got, ngot, ref, nref); /* GPU against CPU */
  printf("  %-44s n=%-6zu t=%-3d pairs=%-8zu %s\n", what, n, t, nref, ok ? "same" : "DIFFERENT");
  ferry_pairs_free(ref);
  free(got);
  return ok;
}

/* FERRY_TEST_QUICK=1: fewer, smaller launches (700 codes, one threshold per case),
 * for compute-sanitizer racecheck, which is slow on the shared-memory tiles */
static int quick;

static void test_identical(void) {
  static const struct {
    int words;
    size_t n, clusters;
    int spread;
    int t[6];
  } cases[] = {
      /* n not a multiple of the 2048 (64-bit) / 1024 (256-bit) tile */
      {1, 5000, 0, 0, {0, 8, 16, 24, 32, -1}},   /* uniform: the random-code tails */
      {1, 5003, 300, 12, {0, 3, 8, 10, 12, -1}}, /* clustered: many pairs at each t */
      {1, 4500, 40, 40, {20, 28, 33, 64, -1}},   /* t = 64: every pair */
      {4, 2600, 0, 0, {0, 72, 100, 110, 128, -1}}, {4, 2601, 150, 50, {0, 10, 40, 72, 90, -1}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    if (quick > 1 && cases[k].clusters) /* tiny: the uniform cases only */
      continue;
    size_t n = quick > 1 ? 300 : quick ? 700 : cases[k].n; /* quick: one partial tile */
    uint64_t *c = ht_codes(n, cases[k].words, cases[k].clusters, cases[k].spread);
    for (int x = quick; x < 6 && cases[k].t[x] >= 0 && (!quick || x == 1); x++)
      for (int filter = quick ? 0 : -1; filter <= 1; filter++) { /* -1: the automatic choice */
        char what[96];
        /* the test control FERRY_GPU_HAMMING_FILTER */
        fy_tc_set(FY_TC_GPU_HAMMING_FILTER, filter < 0 ? NULL : filter ? "1" : "0");
        snprintf(what, sizeof what, "%d-bit %s, %s", 64 * cases[k].words,
                 cases[k].clusters ? "clustered" : "uniform",
                 filter < 0 ? "auto"
                 : filter   ? "bound first"
                            : "exact");
        fy_gpu_hamming_stats st;
        CHECK_MSG(compare(what, c, n, cases[k].words, cases[k].t[x], 0, &st), "%s t=%d", what,
                  cases[k].t[x]);
      }
    fy_tc_set(FY_TC_GPU_HAMMING_FILTER, NULL);
    free(c);
  }
}

static void test_overflow(void) {
  /* 40 clusters of ~100 near-identical codes: ~200,000 pairs within 6 bits,
   * through buffers of 1,000 and 7 pairs: re-run in halves, nothing lost */
  size_t n = quick > 1 ? 300 : quick ? 700 : 4000;
  uint64_t *c = ht_codes(n, 1, quick > 1 ? 3 : quick ? 7 : 40, 3);
  size_t buffers[] = {1000, 7};
  for (int b = 0; b < (quick ? 1 : 2); b++) {
    fy_gpu_hamming_stats st;
    char what[64];
    snprintf(what, sizeof what, "overflow, buffer of %zu pairs", buffers[b]);
    CHECK(compare(what, c, n, 1, 6, buffers[b], &st));
    CHECK_MSG(st.reruns > 0, "%s: no re-run (%zu launches)", what, st.launches);
    printf("    %zu launches, %zu re-runs\n", st.launches, st.reruns);
  }
  free(c);
  /* all identical: every pair at distance 0, a buffer of one pair */
  size_t ns = quick ? 8 : 200; /* a re-run per pair, nearly: keep it small under racecheck */
  uint64_t *same = calloc(ns * 4, sizeof *same);
  for (size_t k = 0; k < ns * 4; k++)
    same[k] = 0x0123456789ABCDEFull;
  fy_gpu_hamming_stats st;
  CHECK(compare("identical codes, buffer of 1 pair", same, ns, 4, 0, 1, &st));
  CHECK(st.reruns > 0);
  free(same);
}

/* fy_gpu_hamming_pairs_each: the pairs reach the sink chunk by chunk, never
 * more than the device buffer at once, and are the sorted search's pairs. */
static void test_each(void) {
  /* a clique of 1,500 codes, each within 2 bits of one base (every pair
   * within 4): 1,124,250 pairs through a buffer of 50,000 */
  size_t n = quick ? 300 : 1500, want = n * (n - 1) / 2;
  uint64_t *c = malloc(n * sizeof *c);
  for (size_t i = 0; i < n; i++)
    c[i] = 0xF0F0F0F0F0F0F0F0ull ^ (1ull << (i % 64)) ^ (i >= 64 ? 1ull << ((i / 64) % 64) : 0);
  ht_collected got = {0};
  fy_gpu_hamming_stats st;
  int rc = fy_gpu_hamming_pairs_each(0, c, n, 1, 8, 50000, ht_collect, &got, &st);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  ferry_pair *ref = NULL;
  size_t nref = 0;
  CHECK(fy_gpu_hamming_pairs(0, c, n, 1, 8, 0, 50000, &ref, &nref, NULL) == FERRY_OK);
  ht_collected_sort(&got);
  CHECK_MSG(nref == want && ht_same_pairs("each", got.p, got.n, ref, nref),
            "each: %zu pairs, sorted search %zu", got.n, nref);
  CHECK_MSG(got.most <= 50000 && (quick || got.calls > 1), "%zu calls, at most %zu pairs",
            got.calls, got.most);
  printf("  pairs each: %zu codes, %zu pairs in %zu calls of at most %zu\n", n, got.n, got.calls,
         got.most);
  CHECK(fy_gpu_hamming_pairs_each(0, c, n, 1, 8, 0, NULL, NULL, NULL) == FERRY_EINVAL);
  free(ref);
  free(got.p);
  free(c);
}

static void test_api(void) {
  uint64_t *c = ht_codes(3000, 1, 100, 10);
  ferry_search_options o;
  ferry_search_options_default(&o);
  CHECK(o.device == -1);
  o.threshold = 7;
  o.device = 0;
  ferry_pair *got = NULL, *ref = NULL;
  size_t ngot = 0, nref = 0;
  CHECK_MSG(ferry_hamming_pairs(c, 3000, 1, &o, &got, &ngot) == FERRY_OK, "%s", ferry_last_error());
  CHECK(!strcmp(ferry_search_last_method(), "cuda"));
  CHECK(ht_cpu_pairs(c, 3000, 1, 7, FERRY_SEARCH_BRUTE, &ref, &nref) == FERRY_OK);
  CHECK(ht_same_pairs("API", got, ngot, ref, nref));
  ferry_pairs_free(got);
  /* max_pairs: refused past the bound, as on the CPU */
  o.max_pairs = nref > 1 ? nref - 1 : 1;
  got = NULL;
  CHECK(ferry_hamming_pairs(c, 3000, 1, &o, &got, &ngot) == FERRY_ETOO_LARGE && !got);
  /* bad arguments */
  o.max_pairs = 0;
  o.threshold = 65;
  CHECK(ferry_hamming_pairs(c, 3000, 1, &o, &got, &ngot) == FERRY_EINVAL);
  o.threshold = 3;
  CHECK(ferry_hamming_pairs(c, 3000, 2, &o, &got, &ngot) == FERRY_EINVAL);
  o.device = 4096;
  CHECK(ferry_hamming_pairs(c, 3000, 1, &o, &got, &ngot) == FERRY_EUNSUPPORTED);
  /* tiny inputs */
  o.device = 0;
  CHECK(ferry_hamming_pairs(c, 1, 1, &o, &got, &ngot) == FERRY_OK && ngot == 0 && !got);
  CHECK(ferry_hamming_pairs(c, 2, 1, &o, &got, &ngot) == FERRY_OK);
  ferry_pairs_free(got);
  ferry_pairs_free(ref);
  free(c);
}

/* top-k: the same neighbours, in the same order, as the CPU (ties between
 * equal distances are frequent in clustered codes: lower index first). */
static void test_topk(void) {
  static const struct {
    int words;
    size_t n;
    int k;
  } cases[] = {{1, 3000, 1}, {1, 2500, 7}, {1, 20, 32}, {4, 1500, 5}, {4, 5, 8}};
  for (size_t x = 0; x < sizeof cases / sizeof *cases; x++) {
    if (quick > 1 && x > 1)
      break;
    size_t cap = quick > 1 ? 100 : 300;
    size_t n = quick && cases[x].n > cap ? cap : cases[x].n;
    int k = cases[x].k, words = cases[x].words;
    uint64_t *c = ht_codes(n, words, n / 10 + 1, 6);
    ferry_neighbor *ref = malloc(n * k * sizeof *ref), *got = malloc(n * k * sizeof *got);
    ferry_search_options o;
    ferry_search_options_default(&o);
    CHECK(ht_cpu_topk(c, n, words, k, ref) == FERRY_OK);
    o.device = 0;
    int rc = ferry_hamming_topk(c, n, words, k, &o, got);
    CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
    int ok = rc == FERRY_OK && ht_same_topk("top-k", got, ref, n, k);
    CHECK_MSG(ok, "top-k %d-bit n=%zu k=%d", 64 * words, n, k);
    printf("  top-k %d-bit n=%zu k=%d: %s\n", 64 * words, n, k, ok ? "same" : "DIFFERENT");
    free(ref);
    free(got);
    free(c);
  }
  uint64_t c[2] = {0, 1};
  ferry_neighbor nb[33];
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.device = 0;
  CHECK(ferry_hamming_topk(c, 2, 1, 33, &o, nb) == FERRY_EUNSUPPORTED); /* k <= 32 on a GPU */
}

/* Several devices (hamming_multi.c): device 0 listed twice, two host
 * threads sharing the one GPU, splits and merges for real; {0} alone goes
 * the one-device way. The same pairs in the same order as the CPU, through
 * overflowing buffers, with max_pairs over all, streamed; the same top-k,
 * its query blocks shared among the threads; a device that is not there
 * named, the others stopped. */
static void test_multi(void) {
  static const int lists[][9] = {{1, 0}, {2, 0, 0}, {3, 0, 0, 0}, {8, 0, 0, 0, 0, 0, 0, 0, 0}};
  static const struct {
    int words;
    size_t n, clusters;
    int spread, t;
    size_t buffer;
  } cases[] = {
      {1, 40000, 0, 0, 12, 0},     /* uniform: ~20 chunks, few pairs */
      {1, 30011, 600, 8, 6, 1000}, /* clustered: ~750,000 pairs through 1,000 */
      {4, 9000, 300, 40, 72, 7},   /* 256-bit, a buffer of 7 pairs */
  };
  for (size_t x = 0; x < sizeof cases / sizeof *cases; x++) {
    size_t n = quick ? 3000 : cases[x].n;
    int words = cases[x].words, t = cases[x].t;
    uint64_t *c = ht_codes(n, words, cases[x].clusters, cases[x].spread);
    ferry_pair *ref = NULL;
    size_t nref = 0;
    CHECK(ht_cpu_pairs(c, n, words, t, FERRY_SEARCH_BRUTE, &ref, &nref) == FERRY_OK);
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
      int nd = lists[l][0];
      const int *dev = &lists[l][1];
      ferry_pair *got = NULL;
      size_t ngot = 0;
      fy_gpu_hamming_stats st;
      int rc =
          fy_gpu_hamming_pairs_multi(dev, nd, c, n, words, t, 0, cases[x].buffer, &got, &ngot, &st);
      CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
      int ok = ht_same_pairs("several devices", got, ngot, ref, nref);
      CHECK_MSG(ok, "%d-bit n=%zu t=%d on %d devices: %zu pairs, CPU %zu", 64 * words, n, t, nd,
                ngot, nref);
      printf("  %d-bit n=%-6zu t=%-3d devices %d x cuda:0, buffer %-7zu %8zu pairs, %zu launches, "
             "%zu re-runs: %s\n",
             64 * words, n, t, nd, st.buffer_pairs, ngot, st.launches, st.reruns,
             ok ? "same" : "DIFFERENT");
      free(got);
    }
    /* max_pairs through the public API: past the total refused, at it taken */
    ferry_search_options o;
    ferry_search_options_default(&o);
    o.threshold = t;
    o.ndevices = 2;
    o.devices[0] = o.devices[1] = 0;
    o.device = 5; /* ignored with a list */
    ferry_pair *got = NULL;
    size_t ngot = 0;
    if (nref > 1) {
      o.max_pairs = nref - 1;
      CHECK_MSG(ferry_hamming_pairs(c, n, words, &o, &got, &ngot) == FERRY_ETOO_LARGE && !got, "%s",
                ferry_last_error());
    }
    o.max_pairs = nref;
    CHECK_MSG(ferry_hamming_pairs(c, n, words, &o, &got, &ngot) == FERRY_OK, "%s",
              ferry_last_error());
    CHECK(ht_same_pairs("API", got, ngot, ref, nref));
    CHECK(!strcmp(ferry_search_last_method(), "cuda"));
    ferry_pairs_free(got);
    /* streamed over three threads, a small buffer */
    ht_collected each = {0};
    int three[3] = {0, 0, 0};
    CHECK(fy_gpu_hamming_pairs_each_multi(three, 3, c, n, words, t, 5000, ht_collect, &each,
                                          NULL) == FERRY_OK);
    ht_collected_sort(&each);
    CHECK_MSG(ht_same_pairs("streamed", each.p, each.n, ref, nref), "streamed: %zu pairs, CPU %zu",
              each.n, nref);
    CHECK(each.most <= 5000);
    free(each.p);
    ferry_pairs_free(ref);
    free(c);
  }

  /* top-k over 2, 3 and 8 threads on cuda:0 against the CPU: the public API
   * (fy_topk_block's blocks: one below 65,536 codes), then the driver with
   * small blocks (n not a multiple of them), so that the threads share many */
  static const struct {
    int words;
    size_t n;
    int k;
  } tk[] = {{1, 20011, 8}, {4, 6007, 32}};
  static const size_t blocks[] = {1000, 129};
  for (size_t x = 0; x < sizeof tk / sizeof *tk; x++) {
    size_t n = quick ? 1000 : tk[x].n;
    int words = tk[x].words, k = tk[x].k;
    uint64_t *c = ht_codes(n, words, n / 10, 6);
    ferry_neighbor *ref = malloc(n * k * sizeof *ref), *got = malloc(n * k * sizeof *got);
    CHECK(ht_cpu_topk(c, n, words, k, ref) == FERRY_OK);
    for (size_t l = 1; l < sizeof lists / sizeof *lists; l++) {
      int nd = lists[l][0];
      const int *dev = &lists[l][1];
      ferry_search_options o;
      ferry_search_options_default(&o);
      o.ndevices = nd;
      memcpy(o.devices, dev, (size_t)nd * sizeof *dev);
      memset(got, 0xAB, n * k * sizeof *got);
      int rc = ferry_hamming_topk(c, n, words, k, &o, got);
      CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
      int ok = rc == FERRY_OK && ht_same_topk("top-k, several devices", got, ref, n, k);
      for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++) {
        memset(got, 0xAB, n * k * sizeof *got);
        rc = fy_topk_multi_run(&fy_gpu_topk_backend, dev, nd, c, n, words, k, blocks[b], got);
        CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
        ok &= rc == FERRY_OK && ht_same_topk("top-k, small blocks", got, ref, n, k);
      }
      CHECK_MSG(ok, "top-k %d-bit n=%zu k=%d on %d devices", 64 * words, n, k, nd);
      printf("  top-k %d-bit n=%zu k=%d on %d x cuda:0 (blocks of %zu, 1000, 129): %s\n",
             64 * words, n, k, nd, fy_topk_block(n, nd), ok ? "same" : "DIFFERENT");
    }
    free(ref);
    free(got);
    free(c);
  }

  /* a device that is not there: named; the one that is stops, nothing leaks */
  size_t n = quick ? 1000 : 20011;
  uint64_t *c = ht_codes(n, 1, n / 10, 6);
  int bad[2] = {0, 4095};
  ferry_pair *p = NULL;
  size_t np = 0;
  int rc = fy_gpu_hamming_pairs_multi(bad, 2, c, n, 1, 8, 0, 0, &p, &np, NULL);
  CHECK_MSG(rc == FERRY_EUNSUPPORTED && !p && !np &&
                !strncmp(ferry_last_error(), "cuda:4095: ", 11),
            "%d %s", rc, ferry_last_error());
  printf("  devices {0, 4095}: \"%s\"\n", ferry_last_error());
  ferry_neighbor *nb = malloc(n * 4 * sizeof *nb);
  rc = fy_gpu_hamming_topk_multi(bad, 2, c, n, 1, 4, nb);
  CHECK_MSG(rc == FERRY_EUNSUPPORTED && strstr(ferry_last_error(), "cuda:4095: "), "%d %s", rc,
            ferry_last_error());
  free(nb);
  free(c);
}

int main(void) {
  ht_seed(0x9E3779B97F4A7C15ull);
  if (fy_gpu_hamming_available(0) != FERRY_OK) {
    SKIP("GPU Hamming search: %s", ferry_last_error());
    /* the refusal is a clean error, through the public API too */
    uint64_t c[4] = {1, 2, 3, 4};
    ferry_search_options o;
    ferry_search_options_default(&o);
    o.device = 0;
    ferry_pair *p = NULL;
    size_t n = 0;
    CHECK(ferry_hamming_pairs(c, 4, 1, &o, &p, &n) == FERRY_EUNSUPPORTED && !p && !n);
    o.ndevices = 2; /* a device list too, naming the device */
    o.devices[0] = o.devices[1] = 0;
    CHECK(ferry_hamming_pairs(c, 4, 1, &o, &p, &n) == FERRY_EUNSUPPORTED && !p && !n);
    CHECK_MSG(!strncmp(ferry_last_error(), "cuda:0: ", 8), "%s", ferry_last_error());
    return check_done();
  }
  const char *q = getenv("FERRY_TEST_QUICK");
  quick = q ? (atoi(q) > 1 ? 2 : 1) : 0;
  if (quick)
    printf("FERRY_TEST_QUICK=%d: %s\n", quick,
           quick > 1 ? "300 codes, uniform cases, one threshold, top-k on 100"
                     : "700 codes, one threshold per case, top-k on at most 300");
  test_identical();
  test_overflow();
  test_each();
  if (!quick)
    test_api();
  test_topk();
  test_multi();
  return check_done();
}
