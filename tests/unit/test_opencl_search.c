/* test_opencl_search.c — the OpenCL Hamming search (src/opencl/) against
 * the CPU search: identical pairs (same order, same distances) for 64- and
 * 256-bit codes, uniform and clustered, several sizes and thresholds;
 * output-buffer overflow re-runs without loss (down to a one-pair buffer);
 * max_pairs; the streamed search; top-k; the public API through
 * FERRY_DEVICE_OPENCL; errors for a device that does not exist and for a
 * missing OpenCL library. Without an OpenCL platform every device part is
 * SKIPPED with the reason (under PoCL, `make test` runs it all but the two
 * 100,000-code searches, which run in make test-full). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "hamming_testutil.h"
#include "opencl/opencl.h"

#include <ferry.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void cpu_pairs(const uint64_t *codes, size_t n, int words, int t, ferry_pair **p,
                      size_t *np) {
  CHECK(ht_cpu_pairs(codes, n, words, t, FERRY_SEARCH_AUTO, p, np) == FERRY_OK);
}

/* One configuration: the OpenCL pairs (internal call with a given buffer,
 * and the public API) equal the CPU's. */
static void compare(int device, size_t n, int words, size_t clusters, int spread, int t,
                    size_t buffer) {
  uint64_t *codes = ht_codes(n, words, clusters, spread);
  ferry_pair *cp = NULL, *gp = NULL;
  size_t nc = 0, ng = 0, reruns = 0;
  cpu_pairs(codes, n, words, t, &cp, &nc);
  int rc = fy_cl_hamming_pairs(device, codes, n, words, t, 0, buffer, &gp, &ng, &reruns);
  CHECK_MSG(rc == FERRY_OK, "n %zu words %d t %d: %s", n, words, t, ferry_last_error());
  CHECK_MSG(ht_same_pairs("OpenCL", gp, ng, cp, nc),
            "n %zu words %d clusters %zu t %d buffer %zu: CPU %zu pairs, OpenCL %zu", n, words,
            clusters, t, buffer, nc, ng);
  if (buffer && nc > buffer)
    CHECK_MSG(reruns > 0, "%zu pairs through a %zu-pair buffer without a re-run", nc, buffer);
  ferry_pairs_free(gp);
  /* the public API */
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = t;
  o.device = FERRY_DEVICE_OPENCL + device;
  gp = NULL;
  ng = 0;
  CHECK(ferry_hamming_pairs(codes, n, words, &o, &gp, &ng) == FERRY_OK);
  CHECK(ht_same_pairs("OpenCL, the public API", gp, ng, cp, nc));
  CHECK(!strcmp(ferry_search_last_method(), "opencl"));
  ferry_pairs_free(gp);
  ferry_pairs_free(cp);
  free(codes);
}

static void streamed(int device) {
  size_t n = 3000;
  uint64_t *codes = ht_codes(n, 1, 40, 10);
  ferry_pair *cp = NULL;
  size_t nc = 0;
  cpu_pairs(codes, n, 1, 6, &cp, &nc);
  ht_collected c = {0};
  CHECK(fy_cl_hamming_pairs_each(device, codes, n, 1, 6, 1000, ht_collect, &c) == FERRY_OK);
  ht_collected_sort(&c);
  CHECK_MSG(ht_same_pairs("streamed", c.p, c.n, cp, nc), "streamed: CPU %zu pairs, OpenCL %zu", nc,
            c.n);
  CHECK(nc > 1000); /* the buffer overflowed: re-runs took part */
  free(c.p);
  ferry_pairs_free(cp);
  free(codes);
}

static void max_pairs(int device) {
  size_t n = 500;
  uint64_t *codes = ht_codes(n, 1, 5, 4);
  ferry_pair *p = NULL;
  size_t np = 0;
  int rc = fy_cl_hamming_pairs(device, codes, n, 1, 8, 100, 0, &p, &np, NULL);
  CHECK_MSG(rc == FERRY_ETOO_LARGE, "max_pairs 100 of ~25000 pairs: rc %d", rc);
  CHECK(p == NULL && np == 0);
  free(codes);
}

static void topk(int device, size_t n, int words, int k) {
  uint64_t *codes = ht_codes(n, words, n / 20, 12);
  ferry_neighbor *a = calloc(n * k, sizeof *a), *b = calloc(n * k, sizeof *b);
  ferry_search_options o;
  ferry_search_options_default(&o);
  CHECK(ht_cpu_topk(codes, n, words, k, a) == FERRY_OK);
  o.device = FERRY_DEVICE_OPENCL + device;
  int rc = ferry_hamming_topk(codes, n, words, k, &o, b);
  CHECK_MSG(rc == FERRY_OK, "topk: %s", ferry_last_error());
  CHECK_MSG(ht_same_topk("OpenCL top-k", b, a, n, k), "top-%d of %zu %d-word codes differ", k, n,
            words);
  o.device = FERRY_DEVICE_OPENCL + device;
  CHECK(ferry_hamming_topk(codes, n, words, 33, &o, b) == FERRY_EUNSUPPORTED);
  free(a);
  free(b);
  free(codes);
}

static void bad_device(int count) {
  uint64_t codes[4] = {1, 2, 3, 4};
  ferry_pair *p = NULL;
  size_t np = 0;
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.device = FERRY_DEVICE_OPENCL + count + 2;
  int rc = ferry_hamming_pairs(codes, 4, 1, &o, &p, &np);
  CHECK(rc == FERRY_EUNSUPPORTED);
  char want[64];
  snprintf(want, sizeof want, "OpenCL device %d does not exist (%d found", count + 2, count);
  CHECK_MSG(strstr(ferry_last_error(), want) != NULL, "message: %s", ferry_last_error());
  CHECK(p == NULL && np == 0);
}

int main(void) {
  ht_seed(0x0123456789ABCDEFull);
  fy_cl_device_info *devs = NULL;
  int count = 0, platforms = 0;
  int rc = fy_cl_devices(&devs, &count, &platforms);
  if (rc || count == 0) {
    SKIP("no OpenCL platform (%s)", rc ? ferry_last_error() : "no device on any platform");
    /* still: a bad device answers with the reason, never a crash */
    ferry_search_options o;
    ferry_search_options_default(&o);
    o.device = FERRY_DEVICE_OPENCL;
    uint64_t codes[2] = {0, 1};
    ferry_pair *p = NULL;
    size_t np = 0;
    CHECK(ferry_hamming_pairs(codes, 2, 1, &o, &p, &np) == FERRY_EUNSUPPORTED);
    CHECK(strstr(ferry_last_error(), "OpenCL") != NULL);
    free(devs);
    return check_done();
  }
  for (int d = 0; d < count; d++)
    printf("opencl:%d: %s (%s, %s), %d units\n", d, devs[d].name, devs[d].platform_name,
           devs[d].version, devs[d].units);
  CHECK(platforms >= 1);
  CHECK(devs[0].name[0] != 0 && devs[0].max_wg >= 1);
  { /* FERRY_DEVICE_OPENCL_ANY: the first GPU, else device 0; the CPU's pairs */
    int want = 0;
    for (int d = count - 1; d >= 0; d--)
      if (devs[d].gpu)
        want = d;
    CHECK_MSG(fy_cl_default_device() == want, "default device %d, want %d", fy_cl_default_device(),
              want);
    uint64_t codes[5] = {0, 1, 3, 0xff, 0};
    ferry_search_options o;
    ferry_search_options_default(&o);
    o.threshold = 2;
    ferry_pair *cp = NULL, *gp = NULL;
    size_t nc = 0, ng = 0;
    CHECK(ferry_hamming_pairs(codes, 5, 1, &o, &cp, &nc) == FERRY_OK);
    o.device = FERRY_DEVICE_OPENCL_ANY;
    CHECK(ferry_hamming_pairs(codes, 5, 1, &o, &gp, &ng) == FERRY_OK);
    CHECK(nc > 0 && ht_same_pairs("FERRY_DEVICE_OPENCL_ANY", gp, ng, cp, nc));
    ferry_pairs_free(cp);
    ferry_pairs_free(gp);
  }
  int dev = 0;
  const char *env = getenv("FERRY_TEST_OPENCL_DEVICE"); /* e.g. the GPU on a machine with both */
  if (env)
    dev = atoi(env);
  printf("testing opencl:%d (%s)\n", dev, devs[dev < count ? dev : 0].name);

  /* sizes around the work-group and column-block edges, thresholds on
   * both sides of the clusters' distances, 64- and 256-bit */
  static const size_t sizes[] = {2, 3, 255, 257, 1000, 5000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    compare(dev, sizes[s], 1, sizes[s] / 10 + 1, 12, 8, 0);
    compare(dev, sizes[s], 4, sizes[s] / 10 + 1, 40, 32, 0);
  }
  compare(dev, 4500, 1, 0, 0, 20, 0);    /* uniform, 64-bit: the tail of the distribution */
  compare(dev, 3000, 4, 0, 0, 100, 0);   /* uniform, 256-bit */
  compare(dev, 2000, 1, 30, 6, 0, 0);    /* exact duplicates only */
  compare(dev, 300, 1, 3, 4, 64, 0);     /* every pair */
  compare(dev, 300, 4, 3, 4, 256, 0);    /* every pair, 256-bit */
  compare(dev, 2000, 1, 20, 10, 8, 500); /* a buffer far too small: re-runs */
  compare(dev, 600, 4, 5, 30, 40, 1);    /* a one-pair buffer */
  compare(dev, 0, 1, 0, 0, 8, 0);
  compare(dev, 1, 4, 0, 0, 8, 0);
  /* 100,000 random 64-bit codes (the acceptance size) */
  if (check_full_only("100,000-code OpenCL searches")) {
    check_part("100,000 codes");
    compare(dev, 100000, 1, 0, 0, 12, 0);
    compare(dev, 100000, 1, 2000, 8, 6, 0);
  }
  check_part("streamed, max_pairs, top-k");
  streamed(dev);
  max_pairs(dev);
  topk(dev, 1500, 1, 5);
  topk(dev, 700, 4, 32);
  topk(dev, 1, 1, 3); /* no other code: all padding */
  bad_device(count);
  /* a bad index through the internal call too */
  ferry_pair *p = NULL;
  size_t np = 0;
  uint64_t codes[2] = {0, 1};
  CHECK(fy_cl_hamming_pairs(-1, codes, 2, 1, 1, 0, 0, &p, &np, NULL) == FERRY_EINVAL);
  free(devs);
  return check_done();
}
