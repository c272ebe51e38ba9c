/* test_opencl_cache.c — the process's OpenCL contexts and programs
 * (src/opencl/cl_program_cache.c), shared by the hashers and the searches:
 *  - hashers made one after another build the hash program once, and hash
 *    as the CPU does;
 *  - hashers and searches made at once on several threads (all of them
 *    asking for the programs before any is built) build each program once,
 *    and every thread's hashes and pairs are the CPU's;
 *  - a hasher made before fy_cl_cache_release keeps working after it (its
 *    own references), and the next one builds anew;
 *  - a program that does not build gives the build log each time (failures
 *    are not kept, nor counted), a device that does not exist its reason,
 *    a context the cache did not open an error.
 * Without an OpenCL device: "SKIPPED test_opencl_cache: <reason>". Runs
 * under TSan in `make test` (TSAN_TESTS). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "cuda/hash_gpu.h"
#include "opencl/cl_program_cache.h"

#include <ferry.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NIMG = 6, NCODES = 3000, THREADS = 6, ROUNDS = 2, HASH_SIZE = 16, THRESHOLD = 22 };

static int device;
static ferry_image img[NIMG];
static fy_gpu_hash_image gimg[NIMG];
static ferry_hash_result cpu_ref[NIMG];
static uint64_t codes[NCODES];
static ferry_pair *cpu_pairs;
static size_t cpu_npairs;

/* ------------------------------------------------------------ inputs */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next64(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Images of odd sizes, gradients with noise (hashes with bits of both
 * values), and their CPU hashes; codes with near neighbours, and the CPU's
 * pairs. */
static void make_inputs(void) {
  static const int sizes[NIMG][2] = {{64, 48}, {33, 17}, {200, 150}, {17, 91}, {128, 128}, {9, 8}};
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.mode = FERRY_HASH_COMPATIBLE;
  o.kinds = FY_GPU_HASH_KINDS;
  o.hash_size = HASH_SIZE;
  ferry_hasher *cpu = NULL;
  CHECK_MSG(ferry_hasher_new(&o, &cpu) == FERRY_OK, "%s", ferry_last_error());
  for (int i = 0; i < NIMG; i++) {
    int w = sizes[i][0], h = sizes[i][1];
    uint8_t *d = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w * 3; x++)
        d[(size_t)y * w * 3 + x] = (uint8_t)((x * 5 + y * (i + 3)) % 200 + next64() % 56);
    img[i] = (ferry_image){d, w, h, 3, (size_t)w * 3};
    gimg[i] = (fy_gpu_hash_image){d, w, h, 3, (size_t)w * 3};
    memset(&cpu_ref[i], 0, sizeof cpu_ref[i]);
    CHECK_MSG(cpu && ferry_hash_pixels(cpu, &img[i], &cpu_ref[i]) == FERRY_OK, "%s",
              ferry_last_error());
  }
  ferry_hasher_free(cpu);
  for (int i = 0; i < NCODES; i++)
    codes[i] = i % 3 ? codes[i - 1] ^ (next64() & next64() & next64()) : next64();
  ferry_search_options so;
  ferry_search_options_default(&so);
  so.threshold = THRESHOLD;
  CHECK(ferry_hamming_pairs(codes, NCODES, 1, &so, &cpu_pairs, &cpu_npairs) == FERRY_OK);
  CHECK(cpu_npairs > 100); /* the comparison means something */
}

/* ------------------------------------------------------------- users */

/* 1 when result r has the CPU's hashes of image i. */
static int as_cpu(const ferry_hash_result *r, int i) {
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
    const ferry_hash *a = &r->hash[k], *b = &cpu_ref[i].hash[k];
    if ((FY_GPU_HASH_KINDS & FERRY_HASH_MASK(k)) &&
        (!(r->kinds & FERRY_HASH_MASK(k)) || a->bits != HASH_SIZE * HASH_SIZE ||
         a->bits != b->bits || memcmp(a->w, b->w, sizeof a->w)))
      return 0;
  }
  return 1;
}

/* 1 when a new hasher hashes the images as the CPU did. */
static int hash_once(void) {
  fy_cl_hasher *h = NULL;
  int rc = fy_cl_hasher_new(device, &h);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  if (rc)
    return 0;
  ferry_hash_result got[NIMG];
  memset(got, 0, sizeof got);
  rc = fy_cl_hasher_run(h, gimg, NIMG, FY_GPU_HASH_KINDS, HASH_SIZE, got);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  fy_cl_hasher_free(h);
  int same = rc == FERRY_OK;
  for (int i = 0; i < NIMG && same; i++)
    same = as_cpu(&got[i], i);
  return same;
}

/* 1 when an OpenCL search finds the CPU's pairs. */
static int search_once(void) {
  ferry_pair *p = NULL;
  size_t np = 0;
  int rc = fy_cl_hamming_pairs(device, codes, NCODES, 1, THRESHOLD, 0, 0, &p, &np, NULL);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  int same = rc == FERRY_OK && np == cpu_npairs;
  for (size_t k = 0; same && k < np; k++)
    same = p[k].i == cpu_pairs[k].i && p[k].j == cpu_pairs[k].j &&
           p[k].distance == cpu_pairs[k].distance;
  free(p);
  return same;
}

static pthread_barrier_t start;

static void *user(void *arg) {
  int searcher = (int)(intptr_t)arg % 3 == 2; /* a third search, the rest hash */
  pthread_barrier_wait(&start);               /* all ask before any program is built */
  int good = 0;
  for (int r = 0; r < ROUNDS; r++)
    good += searcher ? search_once() : hash_once();
  return (void *)(intptr_t)good;
}

/* ------------------------------------------------------------- parts */

static void test_sequential(void) {
  long b0 = fy_cl_cache_builds();
  CHECK(hash_once());
  CHECK_MSG(fy_cl_cache_builds() == b0 + 1, "%ld builds", fy_cl_cache_builds() - b0);
  CHECK(hash_once());
  CHECK(hash_once());
  CHECK_MSG(fy_cl_cache_builds() == b0 + 1, "%ld builds for 3 hashers", fy_cl_cache_builds() - b0);
  CHECK(search_once());
  CHECK(search_once());
  CHECK_MSG(fy_cl_cache_builds() == b0 + 2, "%ld builds for 3 hashers and 2 searches",
            fy_cl_cache_builds() - b0);
}

static void test_concurrent(void) {
  fy_cl_cache_release(); /* nothing built: the threads race to build */
  long b0 = fy_cl_cache_builds();
  pthread_t t[THREADS];
  pthread_barrier_init(&start, NULL, THREADS);
  for (int i = 0; i < THREADS; i++)
    CHECK(pthread_create(&t[i], NULL, user, (void *)(intptr_t)i) == 0);
  int good = 0;
  for (int i = 0; i < THREADS; i++) {
    void *g = NULL;
    pthread_join(t[i], &g);
    good += (int)(intptr_t)g;
  }
  pthread_barrier_destroy(&start);
  CHECK_MSG(good == THREADS * ROUNDS, "%d of %d runs as the CPU", good, THREADS * ROUNDS);
  CHECK_MSG(fy_cl_cache_builds() == b0 + 2, "%ld builds by %d threads (want 2: hash, search)",
            fy_cl_cache_builds() - b0, THREADS);
}

static void test_release(void) {
  fy_cl_hasher *h = NULL;
  CHECK_MSG(fy_cl_hasher_new(device, &h) == FERRY_OK, "%s", ferry_last_error());
  fy_cl_cache_release(); /* h keeps its context and program */
  ferry_hash_result got[NIMG];
  memset(got, 0, sizeof got);
  CHECK_MSG(h && fy_cl_hasher_run(h, gimg, NIMG, FY_GPU_HASH_KINDS, HASH_SIZE, got) == FERRY_OK,
            "%s", ferry_last_error());
  for (int i = 0; i < NIMG; i++)
    CHECK(as_cpu(&got[i], i));
  fy_cl_hasher_free(h);
  long b0 = fy_cl_cache_builds();
  CHECK(hash_once());
  CHECK_MSG(fy_cl_cache_builds() == b0 + 1, "%ld builds after a release",
            fy_cl_cache_builds() - b0);
}

static void test_errors(void) {
  fy_cl_ctx c;
  CHECK_MSG(fy_cl_cache_open(device, &c) == FERRY_OK, "%s", ferry_last_error());
  long b0 = fy_cl_cache_builds();
  for (int i = 0; i < 2; i++) { /* the second is built (and fails) again */
    cl_program p = (cl_program)(uintptr_t)1;
    int rc = fy_cl_cache_program(&c, FY_CL_PROG_HAMMING, "-DFY_WORDS=(", &p);
    const char *e = ferry_last_error();
    CHECK(rc == FERRY_EIO && p == NULL);
    CHECK_MSG(strstr(e, "building the OpenCL kernels (-DFY_WORDS=()") && strstr(e, "build log:"),
              "%s", e);
  }
  CHECK(fy_cl_cache_builds() == b0);
  fy_cl_close(&c);

  fy_cl_ctx own; /* a context of its own: not the cache's */
  CHECK_MSG(fy_cl_open(device, &own) == FERRY_OK, "%s", ferry_last_error());
  cl_program p = NULL;
  CHECK(fy_cl_cache_program(&own, FY_CL_PROG_HASH, NULL, &p) == FERRY_EINTERNAL && p == NULL);
  fy_cl_close(&own);

  for (int i = 0; i < 2; i++) {
    fy_cl_hasher *h = (fy_cl_hasher *)(uintptr_t)1;
    CHECK(fy_cl_hasher_new(999, &h) == FERRY_EUNSUPPORTED && h == NULL);
    CHECK_MSG(strstr(ferry_last_error(), "OpenCL device 999 does not exist"), "%s",
              ferry_last_error());
  }
}

int main(void) {
  fy_cl_device_info *devs = NULL;
  int count = 0, platforms = 0;
  if (fy_cl_devices(&devs, &count, &platforms) != FERRY_OK || count == 0) {
    printf("SKIPPED test_opencl_cache: no OpenCL device (%s)\n", ferry_last_error());
    free(devs);
    return check_done();
  }
  const char *env = getenv("FERRY_TEST_OPENCL_DEVICE");
  device = env ? atoi(env) : fy_cl_default_device();
  if (device < 0 || device >= count)
    device = 0;
  printf("testing opencl:%d (%s)\n", device, devs[device].name);
  int fp64 = devs[device].fp64;
  free(devs);
  if (!fp64) {
    printf("SKIPPED test_opencl_cache: opencl:%d has no double precision (the hashes need it)\n",
           device);
    return check_done();
  }
  make_inputs();
  test_sequential();
  test_concurrent();
  test_release();
  test_errors();
  fy_cl_cache_release();
  for (int i = 0; i < NIMG; i++)
    free(img[i].data);
  free(cpu_pairs);
  return check_done();
}
