/* test_gpu_hash.c — the GPU's compatible-mode hashes (src/cuda/hash_gpu.cu)
 * against the CPU's (ferry_hash_file / ferry_hash_pixels in compatible
 * mode), bit for bit, for aHash, dHash, vertical dHash, pHash and wHash at
 * hash sizes 8 and 16:
 *
 *  - every image of ../shared/corpus/photos, hires and dupes in the full
 *    tier (make test-full), the corpus sample (tests/fixtures/corpus_sample.txt)
 *    in the quick one (JPEG, PNG,
 *    WebP; data/sample's JPEGs when the corpus is absent), decoded on the CPU to RGB and hashed on
 * the GPU in batches of mixed sizes, against ferry_hash_file;
 *  - the same images as Pillow's L (1 channel), from device memory through
 *    fy_gpu_hash_batch;
 *  - synthetic images of odd sizes (1x1, 7x3, 4097x5, tall ones that take
 *    the vertical-first order, grids smaller than the hash grid, exact
 *    copies), noise, gradients and flat ones (ties with the median), RGB and
 *    L, padded rows;
 *  - `ferry hash --device cuda` against `ferry hash --mode compatible`: the
 *    same CSV, colorhash included (FERRY_BIN);
 *  - catalogs: ferry_index_update with device 0 against the CPU's
 *    compatible mode over ../shared/corpus/photos (data/sample when absent
 *    or with FERRY_TEST_QUICK): the same export, and a second GPU run over
 *    the same directory hashes nothing.
 *
 * Without CUDA or a GPU: "SKIPPED test_gpu_hash: <reason>", exit code 0
 * (after checking that a GPU catalog is refused cleanly).
 *
 * test_opencl_hash.c runs this same file on an OpenCL device (the OpenCL
 * kernels, src/opencl/hash.cl) with FY_TEST_OPENCL defined: the backend's
 * few calls are the macros below; images "in device memory" become L
 * images from the host there (OpenCL buffers have no addresses), the CLI
 * runs `ferry hash --device opencl:N` and the catalog device
 * FERRY_DEVICE_OPENCL + N. */
#define _POSIX_C_SOURCE 200809L
#include "catalog_check.h"
#include "check.h"
#include "cuda/hash_gpu.h"
#include "file_list.h"
#include "hash/hash.h"

#include <ctype.h>
#include <dirent.h>
#include <ferry.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define GPU_KINDS FY_GPU_HASH_KINDS
#define BATCH 12

/* ------------------------------------------------------------ backend */

#ifdef FY_TEST_OPENCL
#include "opencl/opencl.h"
#define TEST_NAME "test_opencl_hash"
typedef fy_cl_hasher hasher;
static int
    cl_device; /* the OpenCL device under test (FERRY_TEST_OPENCL_DEVICE, else the default) */
#define TEST_DEVICE (FERRY_DEVICE_OPENCL + cl_device)
#define hasher_new(g) fy_cl_hasher_new(cl_device, (g))
#define hasher_free fy_cl_hasher_free
#define hasher_run_host fy_cl_hasher_run
#else
#define TEST_NAME "test_gpu_hash"
typedef fy_gpu_hasher hasher;
#define TEST_DEVICE 0
#define hasher_new(g) fy_gpu_hasher_new(0, (g))
#define hasher_free fy_gpu_hasher_free
#define hasher_run_host fy_gpu_hasher_run_host
#endif

static long compared, identical, different; /* hashes */
static int refused;                         /* files the CPU cannot hash either */

/* ------------------------------------------------------------- files */

static int is_jpeg_name(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* The corpus's images: JPEG, PNG and WebP (dupes/ has all three). */
static int is_image_name(const char *name) {
  const char *dot = strrchr(name, '.');
  return is_jpeg_name(name) || (dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".webp")));
}

/* ----------------------------------------------------------- compare */

static void hex(const ferry_hash *h, char *out) {
  if (ferry_hash_to_hex(h, out, 80) < 0)
    strcpy(out, "?");
}

/* Compares the GPU kinds of two results; prints the first differences. */
static int same_hashes(const char *what, int s, const ferry_hash_result *cpu,
                       const ferry_hash_result *gpu) {
  int ok = 1;
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
    if (!(GPU_KINDS & FERRY_HASH_MASK(k)))
      continue;
    compared++;
    const ferry_hash *a = &cpu->hash[k], *b = &gpu->hash[k];
    if (a->bits == b->bits && !memcmp(a->w, b->w, sizeof a->w) && (gpu->kinds & (1u << k))) {
      identical++;
      continue;
    }
    different++;
    ok = 0;
    if (different <= 40) {
      char x[80], y[80];
      hex(a, x);
      hex(b, y);
      fprintf(stderr, "  DIFFERENT %s size %d %s: cpu %s gpu %s (distance %d)\n", what, s,
              ferry_hash_kind_name((ferry_hash_kind)k), x, y, ferry_hash_distance(a, b));
    }
  }
  if (cpu->width != gpu->width || cpu->height != gpu->height) {
    fprintf(stderr, "  %s: size cpu %dx%d gpu %dx%d\n", what, cpu->width, cpu->height, gpu->width,
            gpu->height);
    ok = 0;
  }
  return ok;
}

static ferry_hasher *cpu_hasher(int s) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.mode = FERRY_HASH_COMPATIBLE;
  o.kinds = GPU_KINDS;
  o.hash_size = s;
  ferry_hasher *h = NULL;
  CHECK_MSG(ferry_hasher_new(&o, &h) == FERRY_OK, "%s", ferry_last_error());
  return h;
}

/* ------------------------------------------------------ corpus files */

/* Files [i0, i1): decoded to RGB on the CPU, hashed on the GPU from host
 * memory (one batch), against ferry_hash_file; then their L images from
 * device memory. Returns the files that matched everywhere. */
static int corpus_batch(hasher *g, ferry_hasher *cpu[2], char **files, int n) {
  ferry_image img[BATCH], gray[BATCH];
  fy_gpu_hash_image rgb[BATCH], dev[BATCH];
  ferry_hash_result ref[2][BATCH], got[BATCH];
  int ok[BATCH], m = 0, good = 0;
  char *name[BATCH];
  void *dmem[BATCH];
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  o.ignore_orientation = 1; /* as compatible mode: stored pixels */
  o.allow_dct_scaling = 0;
  for (int i = 0; i < n; i++) {
    memset(&ref[0][m], 0, sizeof ref[0][m]);
    int rc0 = ferry_hash_file(cpu[0], files[i], &ref[0][m]);
    int rc1 = ferry_hash_file(cpu[1], files[i], &ref[1][m]);
    o.channels = 3;
    int rc2 = ferry_decode_file(files[i], &o, &img[m]);
    if (rc0 || rc1 || rc2) { /* a file the CPU refuses (the corpus has a few) */
      printf("  (CPU cannot hash %s: %s)\n", files[i], ferry_last_error());
      refused++;
      if (!rc2)
        ferry_image_free(&img[m]);
      continue;
    }
    /* Pillow's L of the RGB pixels, as compatible mode makes it */
    gray[m] = (ferry_image){malloc((size_t)img[m].width * img[m].height), img[m].width,
                            img[m].height, 1, (size_t)img[m].width};
    fy_rgb_to_l(img[m].data, img[m].width, img[m].height, img[m].stride, gray[m].data,
                gray[m].stride);
    rgb[m] = (fy_gpu_hash_image){img[m].data, img[m].width, img[m].height, img[m].channels,
                                 img[m].stride};
    name[m] = files[i];
    ok[m] = 1;
    m++;
  }
  for (int si = 0; si < 2; si++) {
    int s = si ? 16 : 8;
    memset(got, 0, sizeof got);
    int rc = hasher_run_host(g, rgb, m, GPU_KINDS, s, got);
    CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
    for (int i = 0; i < m && rc == FERRY_OK; i++)
      ok[i] &= same_hashes(name[i], s, &ref[si][i], &got[i]);
  }
  /* Pillow's L decoded on the CPU, from device memory (OpenCL: from the host) */
  for (int i = 0; i < m; i++) {
    size_t bytes = gray[i].stride * gray[i].height;
    dmem[i] = NULL;
#ifdef FY_TEST_OPENCL
    (void)bytes, (void)dmem;
    dev[i] = (fy_gpu_hash_image){gray[i].data, gray[i].width, gray[i].height, 1, gray[i].stride};
#else
    CHECK(fy_gpu_hash_device_alloc(0, bytes, &dmem[i]) == FERRY_OK);
    CHECK(fy_gpu_hash_device_upload(0, dmem[i], gray[i].data, bytes) == FERRY_OK);
    dev[i] = (fy_gpu_hash_image){dmem[i], gray[i].width, gray[i].height, 1, gray[i].stride};
#endif
  }
  memset(got, 0, sizeof got);
#ifdef FY_TEST_OPENCL
  int rc = hasher_run_host(g, dev, m, GPU_KINDS, 8, got);
#else
  int rc = fy_gpu_hash_batch(0, dev, m, GPU_KINDS, 8, got);
#endif
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  for (int i = 0; i < m && rc == FERRY_OK; i++)
    ok[i] &= same_hashes(name[i], 8, &ref[0][i], &got[i]);
  for (int i = 0; i < m; i++) {
#ifndef FY_TEST_OPENCL
    fy_gpu_hash_device_free(0, dmem[i]);
#endif
    ferry_image_free(&img[i]);
    free(gray[i].data);
    good += ok[i];
  }
  return good;
}

static void test_corpus(hasher *g) {
  const char *corpus = getenv("FERRY_CORPUS");
  list files = {0};
  char dir[4096];
  const char *subs[] = {"photos", "hires", "dupes"};
  if (corpus)
    list_corpus(corpus, subs, 3, is_image_name, &files);
  char from[4200];
  snprintf(from, sizeof from, "%s/{photos,hires,dupes}", corpus ? corpus : "");
  if (!files.n) {
    const char *sample = getenv("FERRY_SAMPLE");
    snprintf(dir, sizeof dir, "%s", sample ? sample : "data/sample");
    list_walk(dir, is_jpeg_name, &files);
    snprintf(from, sizeof from, "%s", dir);
    printf("  corpus not found (FERRY_CORPUS=%s): using %s\n", corpus ? corpus : "unset", dir);
  }
  list_sort(&files);
  ferry_hasher *cpu[2] = {cpu_hasher(8), cpu_hasher(16)};
  long before = different;
  int good = 0;
  double t0 = fy_now();
  for (size_t i = 0; i < files.n; i += BATCH) {
    int n = files.n - i < BATCH ? (int)(files.n - i) : BATCH;
    good += corpus_batch(g, cpu, files.v + i, n);
  }
  printf("  images of %s: %zu files (%d refused by the CPU too), %d identical in every hash "
         "(sizes 8, 16; RGB and L input), %ld hashes differ (%.1f s)\n",
         from, files.n, refused, good, different - before, fy_now() - t0);
  CHECK(good + refused == (int)files.n);
  CHECK_MSG(files.n > 0, "no JPEG found");
  CHECK(different == before);
  ferry_hasher_free(cpu[0]);
  ferry_hasher_free(cpu[1]);
  for (size_t i = 0; i < files.n; i++)
    free(files.v[i]);
  free(files.v);
}

/* --------------------------------------------------------- synthetic */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next32(void) {
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* pattern 0: noise, 1: gradient + noise, 2: flat, 3: two flat halves,
 * 4: vertical stripes. Rows padded by 5 bytes. */
static ferry_image make_image(int w, int h, int c, int pattern) {
  size_t stride = (size_t)w * c + 5;
  uint8_t *p = malloc(stride * h);
  int level = (int)(next32() % 256);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < c; k++) {
        int v;
        switch (pattern) {
        case 0: v = (int)(next32() % 256); break;
        case 1:
          v = (x * 255 / (w > 1 ? w - 1 : 1) + y * 97 / (h > 1 ? h : 1) + k * 40 +
               (int)(next32() % 9)) %
              256;
          break;
        case 2: v = level + k; break;
        case 3: v = x < w / 2 ? 30 + k : 200 - k; break;
        default: v = (x / 3) % 2 ? 220 : 15 + k; break;
        }
        p[(size_t)y * stride + (size_t)x * c + k] = (uint8_t)(v > 255 ? 255 : v);
      }
  return (ferry_image){p, w, h, c, stride};
}

/* FERRY_TEST_QUICK=1: synthetic images up to 400x400 pixels only, the
 * corpus and the CLI left out, for ThreadSanitizer (the queue's threads
 * matter there, not the images) and compute-sanitizer racecheck (slow on
 * the shared-memory reductions) */
static int quick;

static void test_synthetic(hasher *g) {
  static const int sizes[][2] = {{1, 1},     {7, 3},      {3, 7},       {2, 2},      {4097, 5},
                                 {5, 4097},  {8, 8},      {9, 8},       {8, 9},      {16, 16},
                                 {17, 16},   {16, 17},    {32, 32},     {33, 31},    {64, 64},
                                 {65, 64},   {1, 50},     {50, 1},      {2, 100},    {100, 2},
                                 {37, 1000}, {1000, 37},  {300, 2000},  {2000, 300}, {640, 480},
                                 {480, 640}, {1023, 767}, {2048, 1536}, {4000, 3000}};
  const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
  /* the quick tier: up to about a megapixel (the corpus sample holds a
   * 12-MP photo); the full tier: 2048x1536 and 4000x3000 too */
  long max_pixels = quick ? 400 * 400 : check_full() ? 1L << 30 : 1100 * 1100;
  if (!check_full())
    printf("  synthetic images up to %ld pixels; 2048x1536 and 4000x3000 in make test-full\n",
           max_pixels);
  ferry_hasher *cpu[2] = {cpu_hasher(8), cpu_hasher(16)};
  long before = different;
  int images = 0, good = 0;
  for (int si = 0; si < 2; si++) {
    int s = si ? 16 : 8;
    for (int i0 = 0; i0 < nsizes; i0 += 4) { /* batches of 4 sizes x 2 channels x 5 patterns */
      ferry_image im[40];
      fy_gpu_hash_image gi[40];
      ferry_hash_result ref[40], got[40];
      char what[40][64];
      int n = 0;
      for (int i = i0; i < i0 + 4 && i < nsizes; i++)
        for (int c = 1; c <= 3 && !(sizes[i][0] * sizes[i][1] > max_pixels); c += 2)
          for (int pat = 0; pat < 5; pat++) {
            int w = sizes[i][0], h = sizes[i][1];
            if ((long)w * h > 1000000 && pat > 1)
              continue; /* big ones: noise and gradient only */
            im[n] = make_image(w, h, c, pat);
            gi[n] = (fy_gpu_hash_image){im[n].data, w, h, c, im[n].stride};
            snprintf(what[n], sizeof what[n], "%dx%dx%d pattern %d", w, h, c, pat);
            CHECK_MSG(ferry_hash_pixels(cpu[si], &im[n], &ref[n]) == FERRY_OK, "%s",
                      ferry_last_error());
            n++;
          }
      memset(got, 0, sizeof got);
      int rc = hasher_run_host(g, gi, n, GPU_KINDS, s, got);
      CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
      for (int i = 0; i < n; i++) {
        good += rc == FERRY_OK && same_hashes(what[i], s, &ref[i], &got[i]);
        free(im[i].data);
      }
      images += n;
    }
  }
  printf("  synthetic: %d images (1x1 and up, RGB and L, noise/gradient/flat/halves/"
         "stripes, sizes 8 and 16): %d identical, %ld hashes differ\n",
         images, good, different - before);
  CHECK(different == before);
  ferry_hasher_free(cpu[0]);
  ferry_hasher_free(cpu[1]);
}

/* --------------------------------------------------------------- CLI */

static char *run_capture(const char *cmd) {
  FILE *p = popen(cmd, "r");
  if (!p)
    return NULL;
  size_t n = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (cap - n < 4096)
      buf = realloc(buf, cap *= 2);
  }
  buf[n] = 0;
  pclose(p);
  return buf;
}

/* Prints the first line where the CPU's text and the GPU's differ. */
static void first_difference(const char *cpu, const char *gpu) {
  const char *a = cpu, *b = gpu;
  while (*a && *a == *b)
    a++, b++;
  while (a > cpu && a[-1] != '\n')
    a--, b--;
  fprintf(stderr, "  cpu: %.300s\n  gpu: %.300s\n", a, b);
}

static void test_cli(void) {
  const char *bin = getenv("FERRY_BIN"), *corpus = getenv("FERRY_CORPUS");
  const char *sample = getenv("FERRY_SAMPLE");
  if (!bin) {
    SKIP("ferry hash --device: FERRY_BIN not set");
    return;
  }
  char dir[4096], cmd[8192], dev[32];
#ifdef FY_TEST_OPENCL
  snprintf(dev, sizeof dev, "opencl:%d", cl_device);
#else
  snprintf(dev, sizeof dev, "cuda");
#endif
  snprintf(dir, sizeof dir, "%s/photos", corpus ? corpus : "");
  struct stat st;
  if (!corpus || stat(dir, &st) || !check_full()) /* the quick tier: data/sample's 49 files */
    snprintf(dir, sizeof dir, "%s", sample ? sample : "data/sample");
  for (int s = 8; s <= 16; s += 8) {
    snprintf(cmd, sizeof cmd, "'%s' hash --mode compatible --hash-size %d '%s' 2>/dev/null", bin, s,
             dir);
    char *cpu = run_capture(cmd);
    snprintf(cmd, sizeof cmd, "'%s' hash --device %s --hash-size %d '%s' 2>/dev/null", bin, dev, s,
             dir);
    double t0 = fy_now();
    char *gpu = run_capture(cmd);
    double dt = fy_now() - t0;
    size_t lines = 0;
    for (const char *c = cpu ? cpu : ""; *c; c++)
      lines += *c == '\n';
    int same = cpu && gpu && !strcmp(cpu, gpu);
    printf("  ferry hash --device %s --hash-size %d %s: %zu CSV lines, %s the CPU's "
           "compatible mode (%.1f s)\n",
           dev, s, dir, lines, same ? "identical to" : "DIFFERENT from", dt);
    CHECK(same && lines > 1);
    if (!same && cpu && gpu)
      first_difference(cpu, gpu);
    free(cpu);
    free(gpu);
  }
}

/* ----------------------------------------------------------- catalog */

/* Without a GPU: refused with a reason, nothing written. */
static void test_catalog_refused(const char *why) {
  char tmp[] = "/tmp/ferry-gpucat-XXXXXX", idx[256];
  if (!mkdtemp(tmp))
    return;
  snprintf(idx, sizeof idx, "%s/gpu.fidx", tmp);
  const char *sample = getenv("FERRY_SAMPLE");
  ferry_index_stats st;
  int rc = index_dir(idx, sample ? sample : "data/sample", TEST_DEVICE, FERRY_HASH_COMPATIBLE,
                     FERRY_HASH_ALL, &st);
  CHECK_MSG(rc == FERRY_EUNSUPPORTED && strstr(ferry_last_error(), why), "%d %s", rc,
            ferry_last_error());
  CHECK(access(idx, F_OK) != 0);
  rmdir(tmp);
}

static void test_catalog(void) {
  const char *corpus = getenv("FERRY_CORPUS"), *sample = getenv("FERRY_SAMPLE");
  char dir[4096], tmp[] = "/tmp/ferry-gpucat-XXXXXX", gpu[256], cpu[256], gcsv[256], ccsv[256];
  snprintf(dir, sizeof dir, "%s/photos", corpus ? corpus : "");
  struct stat sb;
  if (quick || !check_full() || !corpus || stat(dir, &sb))
    snprintf(dir, sizeof dir, "%s", sample ? sample : "data/sample");
  if (!mkdtemp(tmp)) {
    SKIP("GPU catalog: no temporary directory");
    return;
  }
  snprintf(gpu, sizeof gpu, "%s/gpu.fidx", tmp);
  snprintf(cpu, sizeof cpu, "%s/cpu.fidx", tmp);
  snprintf(gcsv, sizeof gcsv, "%s/gpu.csv", tmp);
  snprintf(ccsv, sizeof ccsv, "%s/cpu.csv", tmp);
  ferry_index_stats gs, cs, again;
  double t0 = fy_now();
  /* with the signatures (a catalog's default): computed by the decoding
   * threads from the same pixels, so equal to the CPU's byte for byte */
  const unsigned kinds = FERRY_HASH_ALL | FERRY_HASH_SIGNATURE;
  CHECK_MSG(index_dir(gpu, dir, TEST_DEVICE, FERRY_HASH_COMPATIBLE, kinds, &gs) == FERRY_OK, "%s",
            ferry_last_error());
  double tg = fy_now() - t0;
  CHECK_MSG(index_dir(cpu, dir, -1, FERRY_HASH_COMPATIBLE, kinds, &cs) == FERRY_OK, "%s",
            ferry_last_error());
  CHECK_MSG(index_dir(gpu, dir, TEST_DEVICE, FERRY_HASH_COMPATIBLE, kinds, &again) == FERRY_OK,
            "%s", ferry_last_error());
  ferry_catalog *gc = NULL, *cc = NULL;
  size_t ok = 0, sig_same = 0;
  if (ferry_catalog_load(gpu, &gc) == FERRY_OK && ferry_catalog_load(cpu, &cc) == FERRY_OK &&
      ferry_catalog_size(gc) == ferry_catalog_size(cc))
    for (size_t i = 0; i < ferry_catalog_size(gc); i++) {
      const ferry_catalog_entry *x = ferry_catalog_get(gc, i), *y = ferry_catalog_get(cc, i);
      if (x->status || y->status)
        continue;
      ok++;
      sig_same +=
          x->signature && y->signature && !memcmp(x->signature, y->signature, sizeof *x->signature);
    }
  printf("  signatures of the GPU catalog equal to the CPU's: %zu of %zu\n", sig_same, ok);
  CHECK(ok > 0 && sig_same == ok);
  ferry_catalog_free(gc);
  ferry_catalog_free(cc);
  char *a = export_csv(gpu, gcsv), *b = export_csv(cpu, ccsv);
  int same = a && b && !strcmp(a, b);
  printf("  catalog of %s on the GPU: %zu files (%zu failed) in %.1f s, export %s the CPU's "
         "compatible mode; again: %zu hashed, %zu unchanged\n",
         dir, gs.files, gs.failed, tg, same ? "identical to" : "DIFFERENT from", again.hashed,
         again.reused);
  CHECK(same && gs.files > 0 && gs.hashed == gs.files && cs.files == gs.files);
  CHECK(again.hashed == 0 && again.reused == gs.files && again.files == gs.files);
  if (!same && a && b)
    first_difference(b, a);
  free(a);
  free(b);
  const char *files[] = {gpu, cpu, gcsv, ccsv};
  for (int i = 0; i < 4; i++)
    unlink(files[i]);
  rmdir(tmp);
}

#ifdef FY_TEST_OPENCL
/* The OpenCL device to test, or -1 (skipped, reason printed). */
static int pick_device(char *why, size_t n) {
  fy_cl_device_info *devs = NULL;
  int count = 0, platforms = 0;
  if (fy_cl_devices(&devs, &count, &platforms) != FERRY_OK || count == 0) {
    snprintf(why, n, "no OpenCL device (%s)", count ? "" : ferry_last_error());
    free(devs);
    return -1;
  }
  const char *env = getenv("FERRY_TEST_OPENCL_DEVICE"); /* e.g. the GPU on a machine with both */
  int dev = env ? atoi(env) : fy_cl_default_device();
  if (dev < 0 || dev >= count)
    dev = 0;
  printf("testing opencl:%d (%s)\n", dev, devs[dev].name);
  free(devs);
  return dev;
}
#endif

int main(void) {
  char why[512];
#ifdef FY_TEST_OPENCL
  cl_device = pick_device(why, sizeof why);
  int usable = cl_device >= 0;
  if (!usable) {
    cl_device = 0;
    printf("SKIPPED " TEST_NAME ": %s\n", why);
    /* the refusal is a clean error */
    hasher *g = (hasher *)1;
    CHECK(fy_cl_hasher_new(0, &g) == FERRY_EUNSUPPORTED && g == NULL);
    test_catalog_refused("OpenCL");
    return check_done();
  }
#else
  if (fy_gpu_hash_available(0) != FERRY_OK) {
    snprintf(why, sizeof why, "%s", ferry_last_error());
    printf("SKIPPED " TEST_NAME ": %s\n", why);
    /* the refusal is a clean error */
    hasher *g = (hasher *)1;
    CHECK(hasher_new(&g) == FERRY_EUNSUPPORTED && g == NULL);
    test_catalog_refused(why);
    return check_done();
  }
#endif
  hasher *g = NULL;
  CHECK_MSG(hasher_new(&g) == FERRY_OK, "%s", ferry_last_error());
  if (!g)
    return check_done();
  printf(TEST_NAME ": GPU compatible-mode hashes against the CPU's\n");
  quick = getenv("FERRY_TEST_QUICK") != NULL;
  check_part("synthetic images");
  test_synthetic(g);
  if (quick)
    printf("FERRY_TEST_QUICK: synthetic images up to 400x400 only; corpus and CLI left out\n");
  else {
    check_part("corpus images");
    test_corpus(g);
  }
  hasher_free(g);
  if (!quick) {
    check_part("ferry hash --device");
    test_cli();
  }
  check_part("catalog");
  test_catalog();
  printf(TEST_NAME ": %ld hashes compared, %ld identical, %ld different\n", compared, identical,
         different);
  return check_done();
}
