/* bench_gpu_hash.c — compatible-mode perceptual hashes on the GPU
 * (src/cuda/hash_gpu.cu), in photos per second:
 *
 *  1. already-decoded 12-megapixel images (4000x3000, synthesized on the
 *     host): in device memory (kernels only), in host memory as RGB and as
 *     Pillow's L (pinned staging + upload included), every GPU hash (aHash,
 *     dHash, dHash_v, pHash, wHash) and pHash alone, hash sizes 8 and 16;
 *     against ferry_hash_pixels on one CPU core;
 *     the same from host memory on the first OpenCL GPU (src/opencl/hash.cl,
 *     NVIDIA's OpenCL driver on the GPU machine), hashes checked equal;
 *  2. end to end: `ferry hash --device cuda DIR` and `--device opencl`
 *     against `ferry hash --mode compatible DIR` (every core), same CSV
 *     checked. DIR: the first
 *     argument, else 48 synthesized 12 MP JPEGs in a temporary directory.
 *
 * usage: bench_gpu_hash [DIR] [--ferry PATH] [--images N] [--rounds N]
 * (FERRY_BIN or ./ferry is the command otherwise).
 *
 * Claims it proves (bench/CLAIMS.md): C52, C54. */
#define _POSIX_C_SOURCE 200809L

#include "tools_tier.h"
#include <ferry.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>

#include <jpeglib.h>
#include <string.h>
#include <unistd.h>

#define W 4000
#define H 3000

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t next32(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 32);
}

/* A photo-like 12 MP RGB image: smooth gradients, a few discs, noise. */
static uint8_t *synth(int seed) {
  uint8_t *p = malloc((size_t)W * H * 3);
  int cx = (int)(next32() % W), cy = (int)(next32() % H), r = 300 + seed * 37 % 900;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      uint8_t *q = p + ((size_t)y * W + x) * 3;
      int in = (long)(x - cx) * (x - cx) + (long)(y - cy) * (y - cy) < (long)r * r;
      int n = (int)(next32() & 15);
      q[0] = (uint8_t)((x * 200 / W + (in ? 50 : 0) + n + seed * 7) & 255);
      q[1] = (uint8_t)((y * 180 / H + (in ? 0 : 40) + n) & 255);
      q[2] = (uint8_t)(((x + y) * 150 / (W + H) + seed * 13 + n) & 255);
    }
  return p;
}

static int write_jpeg(const char *path, const uint8_t *rgb) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = W, c.image_height = H, c.input_components = 3, c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < H) {
    JSAMPROW row = (JSAMPROW)(rgb + (size_t)c.next_scanline * W * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return fclose(f);
}

static void to_gray(const uint8_t *rgb, uint8_t *g) {
  for (size_t i = 0; i < (size_t)W * H; i++)
    g[i] = (uint8_t)((rgb[3 * i] * 19595u + rgb[3 * i + 1] * 38470u + rgb[3 * i + 2] * 7471u +
                      0x8000u) >>
                     16);
}

/* Times `rounds` runs of n images; prints photos/s. */
static void timed(const char *what, fy_gpu_hasher *g, const fy_gpu_hash_image *im, int n,
                  unsigned kinds, int s, int host, int rounds) {
  ferry_hash_result *r = calloc((size_t)n, sizeof *r);
  int rc = host ? fy_gpu_hasher_run_host(g, im, n, kinds, s, r)
                : fy_gpu_hasher_run(g, im, n, kinds, s, r); /* warm-up: allocations */
  double t0 = fy_now();
  for (int k = 0; k < rounds && rc == FERRY_OK; k++)
    rc = host ? fy_gpu_hasher_run_host(g, im, n, kinds, s, r)
              : fy_gpu_hasher_run(g, im, n, kinds, s, r);
  double dt = fy_now() - t0;
  if (rc)
    printf("  %-52s size %2d: FAILED: %s\n", what, s, ferry_last_error());
  else
    printf("  %-52s size %2d: %8.1f photos/s  (%.2f ms/photo, batch %d)\n", what, s,
           n * rounds / dt, 1e3 * dt / (n * rounds), n);
  free(r);
}

/* The same from host memory on an OpenCL hasher; *same: the hashes equal
 * ref's (the CUDA hasher's). */
static void timed_cl(const char *what, fy_cl_hasher *c, const fy_gpu_hash_image *im, int n,
                     unsigned kinds, int s, int rounds, fy_gpu_hasher *ref) {
  ferry_hash_result *r = calloc((size_t)n, sizeof *r), *q = calloc((size_t)n, sizeof *q);
  int rc = fy_cl_hasher_run(c, im, n, kinds, s, r); /* warm-up: allocations */
  int same = rc == FERRY_OK && fy_gpu_hasher_run_host(ref, im, n, kinds, s, q) == FERRY_OK;
  for (int i = 0; i < n && same; i++)
    for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
      if (kinds & FERRY_HASH_MASK(k))
        same &= !memcmp(r[i].hash[k].w, q[i].hash[k].w, sizeof r[i].hash[k].w);
  double t0 = fy_now();
  for (int k = 0; k < rounds && rc == FERRY_OK; k++)
    rc = fy_cl_hasher_run(c, im, n, kinds, s, r);
  double dt = fy_now() - t0;
  if (rc)
    printf("  %-52s size %2d: FAILED: %s\n", what, s, ferry_last_error());
  else
    printf("  %-52s size %2d: %8.1f photos/s  (%.2f ms/photo, batch %d; %s CUDA's hashes)\n", what,
           s, n * rounds / dt, 1e3 * dt / (n * rounds), n,
           same ? "identical to" : "DIFFERENT from");
  free(r);
  free(q);
}

static double run_cmd(const char *cmd) {
  double t0 = fy_now();
  int rc = system(cmd);
  double dt = fy_now() - t0;
  return rc == 0 ? dt : -1;
}

static int same_files(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int same = fa && fb;
  while (same) {
    int x = fgetc(fa), y = fgetc(fb);
    if (x != y)
      same = 0;
    if (x == EOF || y == EOF)
      break;
  }
  if (fa)
    fclose(fa);
  if (fb)
    fclose(fb);
  return same;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *bin = getenv("FERRY_BIN");
  int images = 16, rounds = 4;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ferry") && i + 1 < argc)
      bin = argv[++i];
    else if (!strcmp(argv[i], "--images") && i + 1 < argc)
      images = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else
      dir = argv[i];
  }
  if (!bin)
    bin = "./ferry";
  if (images < 1 || images > 256)
    images = 16;
  if (fy_gpu_hash_available(0) != FERRY_OK) {
    printf("bench_gpu_hash: no GPU: %s\n", ferry_last_error());
    return 0;
  }
  printf("bench_gpu_hash: %d synthesized %dx%d images (%.0f MB RGB each), %d rounds\n", images, W,
         H, W * H * 3 / 1e6, rounds);
  uint8_t **rgb = calloc((size_t)images, sizeof *rgb),
          **gray = calloc((size_t)images, sizeof *gray);
  fy_gpu_hash_image *hrgb = calloc((size_t)images, sizeof *hrgb);
  fy_gpu_hash_image *hgray = calloc((size_t)images, sizeof *hgray);
  fy_gpu_hash_image *drgb = calloc((size_t)images, sizeof *drgb);
  fy_gpu_hash_image *dgray = calloc((size_t)images, sizeof *dgray);
  for (int i = 0; i < images; i++) {
    rgb[i] = synth(i);
    gray[i] = malloc((size_t)W * H);
    to_gray(rgb[i], gray[i]);
    hrgb[i] = (fy_gpu_hash_image){rgb[i], W, H, 3, (size_t)W * 3};
    hgray[i] = (fy_gpu_hash_image){gray[i], W, H, 1, (size_t)W};
    void *d1 = NULL, *d2 = NULL;
    if (fy_gpu_hash_device_alloc(0, (size_t)W * H * 3, &d1) ||
        fy_gpu_hash_device_alloc(0, (size_t)W * H, &d2) ||
        fy_gpu_hash_device_upload(0, d1, rgb[i], (size_t)W * H * 3) ||
        fy_gpu_hash_device_upload(0, d2, gray[i], (size_t)W * H)) {
      printf("bench_gpu_hash: %s\n", ferry_last_error());
      return 1;
    }
    drgb[i] = (fy_gpu_hash_image){d1, W, H, 3, (size_t)W * 3};
    dgray[i] = (fy_gpu_hash_image){d2, W, H, 1, (size_t)W};
  }
  fy_gpu_hasher *g = NULL;
  if (fy_gpu_hasher_new(0, &g)) {
    printf("bench_gpu_hash: %s\n", ferry_last_error());
    return 1;
  }
  const unsigned all = FY_GPU_HASH_KINDS, ph = FERRY_HASH_MASK(FERRY_HASH_PHASH);
  printf("already decoded, GPU (ahash dhash dhash_v phash whash unless said):\n");
  for (int s = 8; s <= 16; s += 8) {
    timed("device memory, RGB (kernels only)", g, drgb, images, all, s, 0, rounds);
    timed("device memory, RGB, pHash only", g, drgb, images, ph, s, 0, rounds);
    timed("device memory, L", g, dgray, images, all, s, 0, rounds);
    timed("host memory, RGB (staging + upload + kernels)", g, hrgb, images, all, s, 1, rounds);
    timed("host memory, L (what ferry hash --device sends)", g, hgray, images, all, s, 1, rounds);
  }
  /* OpenCL: the first GPU of any platform (NVIDIA's driver on the GPU machine) */
  fy_cl_hasher *cl = NULL;
  int cl_dev = fy_cl_default_device();
  fy_cl_device_info *devs = NULL;
  int ndev = 0, nplat = 0;
  if (fy_cl_devices(&devs, &ndev, &nplat) != FERRY_OK || cl_dev < 0 || cl_dev >= ndev ||
      !devs[cl_dev].gpu || fy_cl_hasher_new(cl_dev, &cl) != FERRY_OK) {
    printf("OpenCL: no GPU to hash on (%s)\n", ndev ? ferry_last_error() : "no OpenCL device");
  } else {
    printf("already decoded, OpenCL GPU opencl:%d (%s, %s):\n", cl_dev, devs[cl_dev].name,
           devs[cl_dev].version);
    for (int s = 8; s <= 16; s += 8) {
      timed_cl("OpenCL, host memory, RGB (upload + kernels)", cl, hrgb, images, all, s, rounds, g);
      timed_cl("OpenCL, host memory, L", cl, hgray, images, all, s, rounds, g);
    }
    fy_cl_hasher_free(cl);
  }
  free(devs);
  /* the CPU on one core, same pixels */
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.mode = FERRY_HASH_COMPATIBLE;
  o.kinds = all;
  for (int s = 8; s <= 16; s += 8) {
    o.hash_size = s;
    ferry_hasher *h = NULL;
    ferry_hasher_new(&o, &h);
    ferry_image im = {rgb[0], W, H, 3, (size_t)W * 3};
    ferry_hash_result r, gr;
    double t0 = fy_now();
    int n = 3;
    for (int k = 0; k < n; k++)
      ferry_hash_pixels(h, &im, &r);
    double dt = (fy_now() - t0) / n;
    int rc = fy_gpu_hasher_run_host(g, &hrgb[0], 1, all, s, &gr);
    int same = rc == FERRY_OK;
    for (int k = 0; k < FERRY_HASH_KIND_COUNT && same; k++)
      if (all & FERRY_HASH_MASK(k))
        same = !memcmp(r.hash[k].w, gr.hash[k].w, sizeof r.hash[k].w);
    printf("  CPU, one core, RGB pixels (ferry_hash_pixels)          size %2d: %8.1f photos/s  "
           "(%.2f ms/photo; GPU hashes %s)\n",
           s, 1 / dt, 1e3 * dt, same ? "identical" : "DIFFERENT");
    ferry_hasher_free(h);
  }
  fy_gpu_hasher_free(g);
  for (int i = 0; i < images; i++) {
    fy_gpu_hash_device_free(0, (void *)drgb[i].data);
    fy_gpu_hash_device_free(0, (void *)dgray[i].data);
  }

  /* end to end */
  char tmp[] = "/tmp/ferry-bench-gpu-hash-XXXXXX", path[4096], cmd[8192];
  int made = 0;
  if (!dir) {
    if (!mkdtemp(tmp)) {
      perror("mkdtemp");
      return 1;
    }
    dir = tmp;
    made = 48;
    for (int i = 0; i < made; i++) {
      snprintf(path, sizeof path, "%s/img%03d.jpg", dir, i);
      write_jpeg(path, rgb[i % images]);
    }
    printf("end to end: %d synthesized 12 MP JPEGs (quality 90) in %s\n", made, dir);
  } else {
    printf("end to end: %s\n", dir);
  }
  for (int i = 0; i < images; i++)
    free(rgb[i]), free(gray[i]);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  for (int s = 8; s <= 16; s += 8) {
    char out_cpu[4200], out_gpu[4200];
    snprintf(out_cpu, sizeof out_cpu, "%s.cpu%d.csv", made ? tmp : "/tmp/ferry-bench-gpu-hash", s);
    snprintf(out_gpu, sizeof out_gpu, "%s.gpu%d.csv", made ? tmp : "/tmp/ferry-bench-gpu-hash", s);
    snprintf(cmd, sizeof cmd, "'%s' hash --mode compatible --hashes all --hash-size %d '%s' > '%s'",
             bin, s, dir, out_cpu);
    double tc = run_cmd(cmd);
    /* -v: the GPU hashing's timings among the debug lines on stderr */
    snprintf(cmd, sizeof cmd,
             "'%s' -v hash --device cuda --hashes all --hash-size %d '%s' > '%s'", bin, s,
             dir, out_gpu);
    double tg = run_cmd(cmd);
    FILE *f = fopen(out_cpu, "r");
    long lines = 0;
    for (int c; f && (c = fgetc(f)) != EOF;)
      lines += c == '\n';
    if (f)
      fclose(f);
    long files = lines > 0 ? lines - 1 : 0;
    printf("  size %2d, %ld files, %ld cores: CPU compatible %.2f s (%.1f photos/s), "
           "--device cuda %.2f s (%.1f photos/s), x%.2f, CSV %s\n",
           s, files, cores, tc, files / tc, tg, files / tg, tc / tg,
           same_files(out_cpu, out_gpu) ? "identical" : "DIFFERENT");
    snprintf(cmd, sizeof cmd, "'%s' hash --device opencl --hashes all --hash-size %d '%s' > '%s'",
             bin, s, dir, out_gpu);
    double to = run_cmd(cmd);
    if (to < 0)
      printf("  size %2d: --device opencl failed\n", s);
    else
      printf("  size %2d, %ld files: --device opencl %.2f s (%.1f photos/s), x%.2f of the CPU, "
             "CSV %s\n",
             s, files, to, files / to, tc / to,
             same_files(out_cpu, out_gpu) ? "identical" : "DIFFERENT");
    unlink(out_cpu);
    unlink(out_gpu);
  }
  for (int i = 0; i < made; i++) {
    snprintf(path, sizeof path, "%s/img%03d.jpg", dir, i);
    unlink(path);
  }
  if (made)
    rmdir(tmp);
  return 0;
}
