/* test_search.c — Hamming search against a plain O(n^2) reference: every
 * kernel this CPU has (scalar, POPCNT, AVX2, AVX-512), brute force and
 * multi-index hashing, 64- and 256-bit codes, clustered and random data,
 * edge sizes; top-k; union-find groups. */
#include "core/testctl.h"
#include "hash_check.h"
#include "search/search.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* Random codes; with clusters, a third are copies of earlier codes with a
 * few bits flipped, so that pairs exist at every small distance. */
static uint64_t *make_codes(size_t n, int words, int clusters) {
  uint64_t *c = malloc(n * words * sizeof *c);
  for (size_t i = 0; i < n; i++) {
    if (clusters && i > 0 && next() % 3 == 0) {
      size_t src = next() % i;
      memcpy(c + i * words, c + src * words, words * sizeof *c);
      int flips = (int)(next() % 12);
      for (int f = 0; f < flips; f++) {
        int b = (int)(next() % (64 * words));
        c[i * words + b / 64] ^= 1ull << (b % 64);
      }
    } else {
      for (int w = 0; w < words; w++)
        c[i * words + w] = next();
    }
  }
  return c;
}

static int cmp_pair(const void *a, const void *b) {
  const ferry_pair *x = a, *y = b;
  if (x->i != y->i)
    return x->i < y->i ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

static ferry_pair *reference(const uint64_t *c, size_t n, int words, int t, size_t *count) {
  size_t cap = 1024, k = 0;
  ferry_pair *p = malloc(cap * sizeof *p);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      int d = fy_code_distance(c + i * words, c + j * words, words);
      if (d <= t) {
        if (k == cap)
          p = realloc(p, (cap *= 2) * sizeof *p);
        p[k++] = (ferry_pair){(uint32_t)i, (uint32_t)j, (uint32_t)d};
      }
    }
  *count = k;
  return p;
}

static int same(const ferry_pair *a, size_t na, const ferry_pair *b, size_t nb) {
  if (na != nb)
    return 0;
  for (size_t i = 0; i < na; i++)
    if (a[i].i != b[i].i || a[i].j != b[i].j || a[i].distance != b[i].distance)
      return 0;
  return 1;
}

static void check_case(size_t n, int words, int t, int clusters, const char *isa,
                       ferry_search_method method, int threads) {
  uint64_t *c = make_codes(n, words, clusters);
  size_t nref;
  ferry_pair *ref;
  if (n <= 10000) {
    ref = reference(c, n, words, t, &nref);
  } else { /* large: brute force (checked against the reference above) */
    ferry_search_options b;
    ferry_search_options_default(&b);
    b.threshold = t;
    b.method = FERRY_SEARCH_BRUTE;
    fy_tc_set(FY_TC_ISA, NULL);
    CHECK(ferry_hamming_pairs(c, n, words, &b, &ref, &nref) == FERRY_OK);
  }
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = t;
  o.method = method;
  o.threads = threads;
  CHECK(fy_tc_set(FY_TC_ISA, isa) == FERRY_OK); /* the test control FERRY_ISA */
  ferry_pair *got;
  size_t ngot;
  int rc = ferry_hamming_pairs(c, n, words, &o, &got, &ngot);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(rc == FERRY_OK && same(ref, nref, got, ngot),
            "isa %s method %d n %zu words %d t %d: %zu pairs, reference %zu", isa, (int)method, n,
            words, t, ngot, nref);
  ferry_pairs_free(got);
  free(ref);
  free(c);
}

static void test_kernels(void) {
  const char *isas[] = {"scalar", "popcnt", "avx2", "avx512"};
  for (int k = 0; k < 4; k++) {
    if (!fy_search_kernels_named(isas[k])) {
      SKIP("kernel %s: this CPU lacks it", isas[k]);
      continue;
    }
    for (int words = 1; words <= 4; words += 3)
      for (int clusters = 0; clusters < 2; clusters++) {
        int t = words == 1 ? 10 : 40;
        /* sizes around the vector widths and tile edges */
        size_t sizes[] = {0, 1, 2, 3, 5, 8, 9, 17, 100, 4095, 4097, 9000};
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
          if ((sizes[s] > 5000 && (k < 2 || !clusters)) || (HC_SANITIZED && sizes[s] > 2000))
            continue; /* keep the slow kernels' (and ASan's) run short */
          check_case(sizes[s], words, t, clusters, isas[k], FERRY_SEARCH_BRUTE, 2);
        }
      }
  }
  fy_tc_set(FY_TC_ISA, NULL);
}

static void test_mih(void) {
  /* every threshold shape: r < m, r = m q + a for several q */
  for (int words = 1; words <= 4; words += 3)
    for (int t = 0; t <= (words == 1 ? 12 : 30); t += words == 1 ? 3 : 10)
      for (int clusters = 0; clusters < 2; clusters++)
        check_case(HC_SANITIZED ? 1000 : 3000, words, t, clusters, "avx512", FERRY_SEARCH_MIH, 2);
  /* auto and forced MIH on a size where it has to decide */
  check_case(60000, 1, 4, 1, "avx512", FERRY_SEARCH_AUTO, 2);
  check_case(60000, 1, 6, 1, "avx512", FERRY_SEARCH_MIH, 2);
  fy_tc_set(FY_TC_ISA, NULL);
}

static void test_mih_direct(void) {
  /* each substring count, against the reference; 2 substrings of 32 bits
   * would need 2^32 buckets and are refused */
  size_t n = 2000, nref;
  uint64_t *c = make_codes(n, 1, 1);
  ferry_pair *ref = reference(c, n, 1, 7, &nref);
  fy_codes codes;
  CHECK(fy_codes_init(&codes, c, n, 1) == FERRY_OK);
  fy_mih *h;
  CHECK(fy_mih_build(&codes, 2, &h) == FERRY_EINVAL);
  for (int m = 3; m <= 9; m++) {
    CHECK(fy_mih_build(&codes, m, &h) == FERRY_OK);
    fy_pairbuf buf[2] = {{0}, {0}};
    CHECK(fy_mih_pairs(h, 7, 2, 0, buf) == FERRY_OK);
    size_t total = buf[0].n + buf[1].n;
    ferry_pair *all = malloc((total + 1) * sizeof *all);
    if (buf[0].n)
      memcpy(all, buf[0].p, buf[0].n * sizeof *all);
    if (buf[1].n)
      memcpy(all + buf[0].n, buf[1].p, buf[1].n * sizeof *all);
    qsort(all, total, sizeof *all, cmp_pair);
    CHECK_MSG(same(ref, nref, all, total), "m = %d: %zu pairs, reference %zu", m, total, nref);
    free(all);
    fy_mih_free(h);
    free(buf[0].p);
    free(buf[1].p);
  }
  fy_codes_free(&codes);
  free(ref);
  free(c);
}

static void test_limits(void) {
  uint64_t *c = make_codes(500, 1, 1);
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = 64; /* every pair */
  o.max_pairs = 1000;
  ferry_pair *p;
  size_t n;
  CHECK(ferry_hamming_pairs(c, 500, 1, &o, &p, &n) == FERRY_ETOO_LARGE);
  o.max_pairs = 0;
  CHECK(ferry_hamming_pairs(c, 500, 1, &o, &p, &n) == FERRY_OK && n == 500 * 499 / 2);
  ferry_pairs_free(p);
  o.threshold = 65;
  CHECK(ferry_hamming_pairs(c, 500, 1, &o, &p, &n) == FERRY_EINVAL);
  CHECK(ferry_hamming_pairs(c, 500, 2, &o, &p, &n) == FERRY_EINVAL);
  CHECK(ferry_hamming_pairs(NULL, 5, 1, &o, &p, &n) == FERRY_EINVAL);
  free(c);
}

static int worse(ferry_neighbor a, ferry_neighbor b) {
  return a.distance != b.distance ? a.distance > b.distance : a.index > b.index;
}

static void test_topk(void) {
  /* 1500 codes: one block of targets; 5100: more than one (topk.c's
   * TBLOCK 4096), so that later blocks go through the kernel's `below`
   * mask once each heap is full (queries checked: every 7th) */
  for (int big = 0; big <= 1; big++)
    for (int words = 1; words <= 4; words += 3)
      for (int method = FERRY_SEARCH_BRUTE; method <= FERRY_SEARCH_MIH; method++) {
        size_t n = big ? 5100 : HC_SANITIZED ? 500 : 1500, step = big ? 7 : 1;
        int k = 5;
        uint64_t *c = make_codes(n, words, 1);
        ferry_neighbor *got = malloc(n * k * sizeof *got), *ref = malloc(k * sizeof *ref);
        ferry_search_options o;
        ferry_search_options_default(&o);
        o.method = (ferry_search_method)method;
        CHECK_MSG(ferry_hamming_topk(c, n, words, k, &o, got) == FERRY_OK, "%s",
                  ferry_last_error());
        int bad = 0;
        for (size_t q = 0; q < n; q += step) {
          /* reference: selection of the k best (distance, index) */
          for (int r = 0; r < k; r++)
            ref[r] = (ferry_neighbor){UINT32_MAX, UINT32_MAX};
          for (size_t j = 0; j < n; j++) {
            if (j == q)
              continue;
            ferry_neighbor v = {(uint32_t)j,
                                (uint32_t)fy_code_distance(c + q * words, c + j * words, words)};
            if (!worse(v, ref[k - 1])) {
              int r = k - 1;
              while (r > 0 && worse(ref[r - 1], v)) {
                ref[r] = ref[r - 1];
                r--;
              }
              ref[r] = v;
            }
          }
          for (int r = 0; r < k; r++)
            if (got[q * k + r].index != ref[r].index || got[q * k + r].distance != ref[r].distance)
              bad++;
        }
        CHECK_MSG(bad == 0, "top-k of %zu codes, words %d method %d: %d wrong neighbours", n, words,
                  method, bad);
        free(got);
        free(ref);
        free(c);
      }
  /* fewer than k others */
  uint64_t two[2] = {0, 3};
  ferry_neighbor nb[6];
  CHECK(ferry_hamming_topk(two, 2, 1, 3, NULL, nb) == FERRY_OK);
  CHECK(nb[0].index == 1 && nb[0].distance == 2 && nb[1].index == UINT32_MAX);
}

static void test_groups(void) {
  ferry_pair p[] = {{0, 3, 1}, {3, 5, 2}, {6, 7, 0}, {2, 2, 0}};
  uint32_t g[9];
  size_t ng;
  CHECK(ferry_group_pairs(9, p, 4, g, &ng) == FERRY_OK);
  CHECK(ng == 2);
  CHECK(g[0] == 0 && g[3] == 0 && g[5] == 0);
  CHECK(g[6] == 1 && g[7] == 1);
  CHECK(g[1] == UINT32_MAX && g[2] == UINT32_MAX && g[4] == UINT32_MAX && g[8] == UINT32_MAX);
  ferry_pair bad = {0, 9, 1};
  CHECK(ferry_group_pairs(9, &bad, 1, g, &ng) == FERRY_EINVAL);
  CHECK(ferry_group_pairs(0, NULL, 0, NULL, &ng) == FERRY_OK && ng == 0);
}

int main(void) {
  printf("search kernels: %s\n", ferry_search_isa());
  test_kernels();
  test_mih();
  test_mih_direct();
  test_limits();
  test_topk();
  test_groups();
  return check_done();
}
