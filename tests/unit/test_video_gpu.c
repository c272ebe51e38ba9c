/* test_video_gpu.c — the NVDEC reader (device >= 0) against the CPU reader
 * on the same files and options: the same frames (count, numbers,
 * timestamps, sampling, rotation, errors on truncated files) and the same
 * pixels within the tolerance of a different chroma upsampler (bilinear on
 * the GPU, swscale's bicubic on the CPU). Skips, saying why, where no GPU
 * with NVDEC is present. Prints per-file figures. */
#include "check.h"
#include "cuda/gpu.h"
#include "image/image.h"
#include "video/video.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char path_buf[4096];
static int nvdec_ok; /* libnvcuvid loads: NVDEC must decode what it takes */
static double last_psnr;

static const char *fixture(const char *name) {
  snprintf(path_buf, sizeof path_buf, "%s/video/%s", check_fixtures(), name);
  return path_buf;
}

typedef struct frames {
  int n, w, h, status, nvdec;
  double t[512];
  int64_t idx[512];
  uint8_t *px; /* n frames, u8 HWC (or f32 when asked) */
  size_t frame_bytes;
  char err[512];
} frames;

/* Every batch of `path` into host memory. */
static void read_all(const char *path, const ferry_video_options *o, frames *f) {
  memset(f, 0, sizeof *f);
  ferry_video_reader *r;
  f->status = ferry_video_open(path, o, &r);
  if (f->status != FERRY_OK) {
    snprintf(f->err, sizeof f->err, "%s", ferry_last_error());
    return;
  }
  ferry_video_info info;
  ferry_video_get_info(r, &info);
  f->nvdec = info.nvdec;
  ferry_video_batch *b;
  int st;
  while ((st = ferry_video_next(r, &b)) == FERRY_OK) {
    CHECK(b->device == o->device);
    f->w = b->width, f->h = b->height;
    f->frame_bytes = b->nbytes / (size_t)b->count;
    uint8_t *grown = realloc(f->px, (size_t)(f->n + b->count) * f->frame_bytes);
    if (!grown)
      break;
    f->px = grown;
    uint8_t *dst = f->px + (size_t)f->n * f->frame_bytes;
    if (b->device >= 0)
      CHECK(fy_gpu_download(b->device, b->data, dst, b->nbytes) == FERRY_OK);
    else
      memcpy(dst, b->data, b->nbytes);
    for (int k = 0; k < b->count && f->n < 512; k++, f->n++) {
      f->t[f->n] = b->timestamps[k];
      f->idx[f->n] = b->frame_indices[k];
    }
  }
  f->status = st;
  if (st != FERRY_END)
    snprintf(f->err, sizeof f->err, "%s", ferry_last_error());
  ferry_video_close(r);
}

/* CPU and GPU readers agree on `path` with options `o`; want_nvdec: 1 when
 * NVDEC must have decoded it, 0 when the CPU must (a stream NVDEC does not
 * take), -1 either. */
static void compare(const char *label, const char *path, ferry_video_options o, double max_mean,
                    int want_nvdec) {
  frames *c = malloc(sizeof *c), *g = malloc(sizeof *g);
  o.device = -1;
  read_all(path, &o, c);
  o.device = 0;
  read_all(path, &o, g);
  CHECK_MSG(c->status == g->status, "%s: status cpu %d gpu %d (%s | %s)", label, c->status,
            g->status, c->err, g->err);
  CHECK_MSG(c->n == g->n, "%s: %d frames on the CPU, %d on the GPU", label, c->n, g->n);
  CHECK(c->w == g->w && c->h == g->h);
  int same_t = 1;
  for (int i = 0; i < c->n && i < g->n && i < 512; i++)
    same_t &= c->idx[i] == g->idx[i] && fabs(c->t[i] - g->t[i]) < 1e-6;
  CHECK_MSG(same_t, "%s: frame numbers or timestamps differ", label);
  double worst_mean = 0, sum = 0, sq = 0;
  int worst_max = 0;
  size_t per = (size_t)c->w * c->h * 3;
  for (int i = 0; i < c->n && i < g->n && c->frame_bytes == per; i++) {
    const uint8_t *a = c->px + (size_t)i * per, *b = g->px + (size_t)i * per;
    double s = 0;
    for (size_t k = 0; k < per; k++) {
      int d = abs((int)a[k] - (int)b[k]);
      s += d;
      sq += (double)d * d;
      if (d > worst_max)
        worst_max = d;
    }
    s /= (double)per;
    sum += s;
    if (s > worst_mean)
      worst_mean = s;
  }
  double mse = c->n && c->frame_bytes == per ? sq / ((double)per * c->n) : 0;
  double psnr = mse > 0 ? 10 * log10(255.0 * 255.0 / mse) : 99;
  if (want_nvdec == 1 && !nvdec_ok)
    want_nvdec = 0;
  if (want_nvdec >= 0)
    CHECK_MSG(g->nvdec == want_nvdec, "%s: decoded by %s", label, g->nvdec ? "NVDEC" : "the CPU");
  printf("%s: %s, %d frames %dx%d, mean abs diff GPU vs CPU %.3f (worst frame %.3f), max "
         "%d, PSNR %.1f dB%s%s\n",
         label, g->nvdec ? "NVDEC" : "CPU decode + upload", g->n, g->w, g->h, c->n ? sum / c->n : 0,
         worst_mean, worst_max, psnr, g->status != FERRY_END ? "; error: " : "",
         g->status != FERRY_END ? g->err : "");
  CHECK_MSG(worst_mean <= max_mean, "%s: worst frame mean diff %.3f > %.3f", label, worst_mean,
            max_mean);
  last_psnr = psnr;
  free(c->px);
  free(g->px);
  free(c);
  free(g);
}

static ferry_video_options u8_hwc(int w, int h, int batch) {
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.width = w, o.height = h;
  o.layout = FERRY_LAYOUT_HWC;
  o.batch_size = batch;
  return o;
}

static void test_fixtures(void) {
  compare("testsrc_h264 full size", fixture("testsrc_h264.mp4"), u8_hwc(0, 0, 8), 6.0, 1);
  compare("testsrc_h264 72x40", fixture("testsrc_h264.mp4"), u8_hwc(72, 40, 3), 6.0, 1);
  ferry_video_options o = u8_hwc(64, 64, 5);
  o.crop = FERRY_CROP_CENTER;
  compare("testsrc_h264 center 64", fixture("testsrc_h264.mp4"), o, 6.0, 1);
  o = u8_hwc(64, 48, 4);
  o.stride = 3;
  compare("testsrc_h264 stride 3", fixture("testsrc_h264.mp4"), o, 6.0, 1);
  o = u8_hwc(64, 48, 4);
  o.rate = 7;
  o.start_s = 0.5;
  o.end_s = 1.5;
  compare("testsrc_h264 rate 7, 0.5-1.5 s", fixture("testsrc_h264.mp4"), o, 6.0, 1);
  compare("hevc10 (small)", fixture("hevc10.mp4"), u8_hwc(80, 48, 8), 0.0, 0);
  compare("hevc10_256 (10-bit)", fixture("hevc10_256.mp4"), u8_hwc(128, 80, 4), 6.0, 1);
  compare("vp9.webm", fixture("vp9.webm"), u8_hwc(80, 48, 8), 6.0, -1);
  compare("rot90_h264 upright", fixture("rot90_h264.mp4"), u8_hwc(0, 0, 4), 8.0, 1);
  compare("rot90_h264 30x50", fixture("rot90_h264.mp4"), u8_hwc(30, 50, 4), 6.0, 1);
  o = u8_hwc(0, 0, 4);
  o.ignore_rotation = 1;
  compare("rot90_h264 as stored", fixture("rot90_h264.mp4"), o, 8.0, 1);
  /* truncated: the frames that decode, then the error naming the file */
  compare("truncated_h264", fixture("truncated_h264.mp4"), u8_hwc(32, 32, 8), 6.0, 1);
  compare("truncated_vp9", fixture("truncated_vp9.webm"), u8_hwc(32, 32, 8), 6.0, -1);
}

/* Issue 17, sampling on NVDEC: with a stride, non-reference pictures the
 * sample does not keep are not decoded (testsrc_h264.mp4: 27 of its 50
 * frames are B-frames no other frame references), and the frames kept are
 * bit for bit those of reading every frame (same numbers, same times). */
static void check_sampling(const char *path, int stride, int batch) {
  ferry_video_options o = u8_hwc(64, 48, batch);
  o.device = 0;
  frames *all = malloc(sizeof *all), *some = malloc(sizeof *some);
  read_all(path, &o, all);
  o.stride = stride;
  read_all(path, &o, some);
  ferry_video_reader *r;
  ferry_video_stats s = {0};
  int n = 0;
  if (ferry_video_open(path, &o, &r) == FERRY_OK) {
    ferry_video_batch *b;
    while (ferry_video_next(r, &b) == FERRY_OK)
      n += b->count;
    ferry_video_get_stats(r, &s);
    ferry_video_close(r);
  }
  int want = (all->n + stride - 1) / stride, same = some->n == want && n == want;
  size_t per = all->frame_bytes;
  for (int i = 0; same && i < some->n; i++) {
    int j = i * stride;
    same = some->idx[i] == all->idx[j] && fabs(some->t[i] - all->t[j]) < 1e-6 &&
           some->frame_bytes == per && !memcmp(some->px + i * per, all->px + j * per, per);
  }
  printf("%s stride %d on NVDEC: %d of %d frames kept, %llu decoded, identical %d\n", path, stride,
         some->n, all->n, (unsigned long long)s.decoded, same);
  CHECK_MSG(all->status == FERRY_END && some->status == FERRY_END, "status %d / %d: %s %s",
            all->status, some->status, all->err, some->err);
  CHECK_MSG(same, "%s stride %d: kept frames differ from every frame's (%d kept, %d wanted)", path,
            stride, some->n, want);
  CHECK_MSG(s.decoded < (uint64_t)all->n && s.decoded >= (uint64_t)want,
            "%s stride %d: %llu of %d frames decoded (non-reference ones should be skipped)", path,
            stride, (unsigned long long)s.decoded, all->n);
  free(all->px);
  free(some->px);
  free(all);
  free(some);
}

/* Random access on the GPU reader: frame k as the in-order GPU read has it
 * (full size: the same conversion kernel, an identity resize), in any
 * order, then out of range and no more batches. */
static void test_frame_at(void) {
  if (!nvdec_ok)
    return;
  const char *path = fixture("testsrc_h264.mp4");
  ferry_video_options o = u8_hwc(0, 0, 8);
  o.device = 0;
  frames *all = malloc(sizeof *all);
  read_all(path, &o, all);
  ferry_video_reader *r;
  CHECK(ferry_video_open(path, &o, &r) == FERRY_OK);
  const int64_t ks[] = {0, 37, 49, 5, 6, 24, 23, 1};
  int worst = 0, bad = 0;
  for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
    ferry_image im;
    double t = -1;
    int st = ferry_video_frame_at(r, ks[i], &im, &t);
    if (st != FERRY_OK || im.width != all->w || im.height != all->h || ks[i] >= all->n) {
      CHECK_MSG(0, "frame_at(%lld) on the GPU: status %d, %dx%d: %s", (long long)ks[i], st,
                im.width, im.height, ferry_last_error());
      bad++;
      continue;
    }
    CHECK_MSG(fabs(t - all->t[ks[i]]) < 1e-6, "frame_at(%lld): t %.6f, in order %.6f",
              (long long)ks[i], t, all->t[ks[i]]);
    const uint8_t *ref = all->px + (size_t)ks[i] * all->frame_bytes;
    for (int y = 0; y < im.height; y++)
      for (int x = 0; x < im.width * 3; x++) {
        int d =
            abs((int)im.data[(size_t)y * im.stride + x] - (int)ref[(size_t)y * im.width * 3 + x]);
        worst = d > worst ? d : worst;
      }
  }
  printf("frame_at on the GPU: %zu frames in any order, worst difference from the in-order read "
         "%d, %d failed\n",
         sizeof ks / sizeof *ks, worst, bad);
  CHECK_MSG(worst <= 1, "frame_at on the GPU differs from the in-order read by %d", worst);
  ferry_image im;
  CHECK(ferry_video_frame_at(r, 50, &im, NULL) == FERRY_EINVAL &&
        strstr(ferry_last_error(), "out of range"));
  ferry_video_batch *b;
  CHECK(ferry_video_next(r, &b) == FERRY_EINVAL && strstr(ferry_last_error(), "random access"));
  ferry_video_close(r);
  free(all->px);
  free(all);
}

static int read_gpu(const char *name, const ferry_video_options *o, ferry_video_stats *s,
                    int *nvdec, int *status);

static void test_sampling(void) {
  if (!nvdec_ok)
    return; /* main() said why */
  check_sampling(fixture("testsrc_h264.mp4"), 5, 4);
  check_sampling(fixture("testsrc_h264.mp4"), 2, 16);
  /* sparse: one frame a second jumps from keyframe to keyframe (4 in 50
   * frames) on NVDEC as on the CPU: the same frames either way */
  ferry_video_options o = u8_hwc(64, 48, 4);
  o.rate = 1;
  compare("testsrc_h264 rate 1 (keyframe jumps)", fixture("testsrc_h264.mp4"), o, 6.0, 1);
  o.device = 0;
  ferry_video_stats s;
  int nv = 0, st = 0, n = read_gpu("testsrc_h264.mp4", &o, &s, &nv, &st);
  printf("testsrc_h264 rate 1 on NVDEC: %d kept, %llu decoded of 50\n", n,
         (unsigned long long)s.decoded);
  CHECK_MSG(st == FERRY_END && n > 0 && s.decoded < 50, "rate 1: status %d, %d kept, %llu decoded",
            st, n, (unsigned long long)s.decoded);
  const char *c = getenv("FERRY_CORPUS");
  if (c) {
    char p[4096];
    snprintf(p, sizeof p, "%s/video/pan_1080p_h264.mp4", c);
    check_sampling(p, 25, 16);
  }
}

/* f16 normalised CHW on the GPU against the u8 HWC GPU batch. */
static void test_store(void) {
  ferry_video_options o = u8_hwc(96, 64, 4);
  o.device = 0;
  frames *u = malloc(sizeof *u), *h = malloc(sizeof *h);
  read_all(fixture("testsrc_h264.mp4"), &o, u);
  o.layout = FERRY_LAYOUT_CHW, o.dtype = FERRY_F16, o.normalize = 1;
  read_all(fixture("testsrc_h264.mp4"), &o, h);
  CHECK(u->n == h->n && u->n > 0);
  double worst = 0;
  size_t plane = 96 * 64;
  for (int i = 0; i < u->n && i < h->n; i++)
    for (int c = 0; c < 3; c++)
      for (size_t p = 0; p < plane; p++) {
        double want = (u->px[(size_t)i * plane * 3 + p * 3 + c] / 255.0 - o.mean[c]) / o.std[c];
        uint16_t hv;
        memcpy(&hv, h->px + ((size_t)i * plane * 3 + c * plane + p) * 2, 2);
        worst = fmax(worst, fabs(fy_f16_to_f32(hv) - want));
      }
  printf("f16 normalised CHW vs u8 HWC on the GPU: worst %.5f\n", worst);
  CHECK_MSG(worst < 0.01, "f16 normalised off by %g", worst);
  free(u->px);
  free(h->px);
  free(u);
  free(h);
}

static void test_errors(void) {
  ferry_video_options o = u8_hwc(32, 32, 4);
  o.device = 0;
  ferry_video_reader *r = NULL;
  CHECK(ferry_video_open(fixture("no_such.mp4"), &o, &r) == FERRY_EIO && !r);
  CHECK(strstr(ferry_last_error(), "no_such.mp4") != NULL);
  o.device = 999;
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &r) != FERRY_OK && !r);
  CHECK(strstr(ferry_last_error(), "testsrc_h264.mp4") != NULL);
  o.device = 0;
  o.filter = FERRY_FILTER_NEAREST;
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &r) == FERRY_EUNSUPPORTED && !r);
  ferry_image im;
  o.filter = FERRY_FILTER_TRIANGLE;
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &r) == FERRY_OK);
  CHECK(ferry_video_next_frame(r, &im, NULL, NULL) == FERRY_EUNSUPPORTED);
  ferry_video_close(r);
}

/* Reads every batch of `name` on the GPU: the frames, the final status and
 * the stats; *nvdec whether NVDEC decoded it. */
static int read_gpu(const char *name, const ferry_video_options *o, ferry_video_stats *s,
                    int *nvdec, int *status) {
  ferry_video_reader *r;
  *status = ferry_video_open(fixture(name), o, &r);
  if (*status != FERRY_OK)
    return 0;
  ferry_video_info info;
  ferry_video_get_info(r, &info);
  *nvdec = info.nvdec;
  ferry_video_batch *b;
  int n = 0;
  while ((*status = ferry_video_next(r, &b)) == FERRY_OK)
    n += b->count;
  ferry_video_get_stats(r, s);
  ferry_video_close(r);
  return n;
}

/* Issue 16 item 19 on NVDEC: the driver's decode status of each picture
 * flags garbled_h264.mp4's damaged frames: counted by default (every frame
 * still comes out), the first an error in strict mode naming the file and
 * frame; an intact file counts none; strict VP9 (no NVDEC status) decodes
 * on the CPU instead. */
static void test_damaged(void) {
  if (!nvdec_ok)
    return; /* main() said why */
  ferry_video_options o = u8_hwc(32, 32, 8);
  o.device = 0;
  ferry_video_stats s;
  int nv = 0, st = 0;
  int n = read_gpu("garbled_h264.mp4", &o, &s, &nv, &st);
  printf("garbled_h264.mp4 on NVDEC: %d frames, status %d, %llu damaged, the first frame %lld "
         "(%.3f s)\n",
         n, st, (unsigned long long)s.damaged, (long long)s.first_damaged, s.first_damaged_s);
  CHECK_MSG(nv == 1 && st == FERRY_END && n == 50 && s.damaged >= 1 && s.first_damaged >= 0,
            "nvdec %d, status %d, %d frames, %llu damaged", nv, st, n,
            (unsigned long long)s.damaged);
  uint64_t all = s.damaged;
  int64_t first = s.first_damaged;
  ferry_video_options o2 = u8_hwc(48, 40, 1); /* other batches, the same count */
  o2.device = 0;
  n = read_gpu("garbled_h264.mp4", &o2, &s, &nv, &st);
  CHECK_MSG(n == 50 && s.damaged == all && s.first_damaged == first,
            "batch 1: %d frames, %llu damaged (first %lld), batch 8: %llu (first %lld)", n,
            (unsigned long long)s.damaged, (long long)s.first_damaged, (unsigned long long)all,
            (long long)first);
  o.strict = 1;
  n = read_gpu("garbled_h264.mp4", &o, &s, &nv, &st);
  CHECK_MSG(nv == 1 && st == FERRY_ECORRUPT &&
                strstr(ferry_last_error(), "garbled_h264.mp4: frame ") &&
                strstr(ferry_last_error(), "decoded with errors"),
            "strict: nvdec %d, status %d: %s", nv, st, ferry_last_error());
  CHECK(s.damaged == 1 && (uint64_t)n < 50 && all >= 1);
  n = read_gpu("testsrc_h264.mp4", &o, &s, &nv, &st);
  CHECK(nv == 1 && st == FERRY_END && n == 50 && s.damaged == 0 && s.first_damaged == -1);
  n = read_gpu("vp9.webm", &o, &s, &nv, &st);
  CHECK_MSG(nv == 0 && st == FERRY_END && n > 0 && s.damaged == 0,
            "strict vp9: nvdec %d, status %d, %d frames", nv, st, n);
  o.strict = 0;
  n = read_gpu("vp9.webm", &o, &s, &nv, &st);
  CHECK_MSG(nv == 1 && st == FERRY_END && n > 0, "vp9: nvdec %d, status %d, %d frames", nv, st, n);
}

static void test_corpus(void) {
  const char *c = check_corpus_with("GPU video on the corpus", "video/pan_1080p_h264.mp4");
  if (!c)
    return;
  /* pan_720p_vp9.webm is VP9 4:4:4 RGB (gbrp): the CPU decodes it */
  const char *names[] = {"pan_1080p_h264.mp4", "pan_720p_hevc.mp4", "pan_720p_vp9.webm",
                         "truncated_h264.mp4"};
  const int nv[] = {1, 1, 0, -1};
  for (int i = 0; i < 4; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/video/%s", c, names[i]);
    compare(names[i], p, u8_hwc(320, 320, 16), i == 2 ? 0.0 : 2.5, nv[i]);
    if (i < 2) { /* full size, first second: NVDEC's frames vs libavcodec's */
      ferry_video_options o = u8_hwc(0, 0, 8);
      o.end_s = 1.0;
      char label[128];
      snprintf(label, sizeof label, "%s full size", names[i]);
      compare(label, p, o, 2.5, nv[i]);
      CHECK_MSG(last_psnr >= 40.0, "%s: PSNR %.1f dB < 40", label, last_psnr);
    }
  }
}

/* A reader that ends well leaves its decoder to the next file of the same
 * format (nvdec_pool.c): the second read of a file makes no decoder, and
 * its frames are those of the first bit for bit; two readers open at once
 * each have their own. */
static void test_decoder_reuse(void) {
  if (!nvdec_ok)
    return;
  const char *path = fixture("testsrc_h264.mp4");
  ferry_video_options o = u8_hwc(0, 0, 8);
  o.device = 0;
  frames *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  uint64_t m0, r0, m1, r1, m2, r2;
  read_all(path, &o, a);
  fy_nvdec_pool_counts(&m0, &r0);
  read_all(path, &o, b);
  fy_nvdec_pool_counts(&m1, &r1);
  CHECK_MSG(a->status == FERRY_END && b->status == FERRY_END, "reads: %s | %s", a->err, b->err);
  CHECK_MSG(m1 == m0 && r1 == r0 + 1,
            "second read: %llu decoders made, %llu reused (was %llu, %llu)", (unsigned long long)m1,
            (unsigned long long)r1, (unsigned long long)m0, (unsigned long long)r0);
  CHECK(a->n == b->n && a->n > 0 && a->frame_bytes == b->frame_bytes);
  CHECK_MSG(a->n == b->n && !memcmp(a->px, b->px, (size_t)a->n * a->frame_bytes),
            "frames from a reused decoder differ");
  ferry_video_reader *x = NULL, *y = NULL;
  ferry_video_batch *bx, *by;
  CHECK(ferry_video_open(path, &o, &x) == FERRY_OK);
  CHECK(ferry_video_open(path, &o, &y) == FERRY_OK);
  if (x && y) {
    CHECK(ferry_video_next(x, &bx) == FERRY_OK);
    CHECK(ferry_video_next(y, &by) == FERRY_OK);
  }
  ferry_video_close(x);
  ferry_video_close(y);
  fy_nvdec_pool_counts(&m2, &r2);
  CHECK_MSG(m2 == m1 + 1 && r2 == r1 + 1,
            "two readers at once: %llu made, %llu reused (one of each wanted)",
            (unsigned long long)(m2 - m1), (unsigned long long)(r2 - r1));
  printf("decoder reuse: after the first read %llu made, %llu reused\n",
         (unsigned long long)(m2 - m0), (unsigned long long)(r2 - r0));
  free(a->px);
  free(b->px);
  free(a);
  free(b);
}

int main(void) {
  char why[256];
  nvdec_ok = fy_nvdec_available(why, sizeof why);
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.device = 0;
  ferry_video_reader *r;
  int st = ferry_video_open(fixture("testsrc_h264.mp4"), &o, &r);
  if (st == FERRY_EUNSUPPORTED) {
    SKIP("test_video_gpu: %s", ferry_last_error());
    return check_done();
  }
  CHECK_MSG(st == FERRY_OK, "open on the GPU: %s", ferry_last_error());
  if (st == FERRY_OK)
    ferry_video_close(r);
  if (!nvdec_ok)
    SKIP("NVDEC itself (frames decoded on the CPU and uploaded instead): %s", why);
  test_fixtures();
  test_store();
  test_errors();
  test_damaged();
  test_sampling();
  test_frame_at();
  test_decoder_reuse();
  test_corpus();
  return check_done();
}
