/* test_video.c — the video reader on the committed fixtures
 * (tests/fixtures/video, made by make_fixtures.sh) and, when present, the
 * shared corpus's videos: frame counts, timestamps, sampling (stride, rate,
 * time range), rotation, 10-bit, resize + store against ferry_resize, and
 * truncated files giving their frames and then an error naming the file. */
#include "check.h"
#include "image/image.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char path_buf[4096];

static const char *fixture(const char *name) {
  snprintf(path_buf, sizeof path_buf, "%s/video/%s", check_fixtures(), name);
  return path_buf;
}

/* Reads every batch; fills t/idx (up to cap); returns frames, *status the
 * final status (FERRY_END or the error). */
static int read_all(const char *path, const ferry_video_options *o, double *t, int64_t *idx,
                    int cap, int *status, int *batches) {
  ferry_video_reader *r;
  int st = ferry_video_open(path, o, &r);
  *batches = 0;
  if (st != FERRY_OK) {
    *status = st;
    return -1;
  }
  ferry_video_batch *b;
  int n = 0;
  while ((st = ferry_video_next(r, &b)) == FERRY_OK) {
    (*batches)++;
    CHECK(b->count >= 1 && b->count <= o->batch_size);
    CHECK(b->nbytes == (size_t)b->count * b->width * b->height * 3 * ferry_dtype_size(o->dtype));
    for (int k = 0; k < b->count; k++, n++)
      if (n < cap) {
        t[n] = b->timestamps[k];
        idx[n] = b->frame_indices[k];
      }
  }
  *status = st;
  if (st != FERRY_END) {
    /* the error is repeated, not turned into an end */
    char first[512];
    snprintf(first, sizeof first, "%s", ferry_last_error());
    CHECK(ferry_video_next(r, &b) == st);
    CHECK(!strcmp(first, ferry_last_error()));
  }
  ferry_video_close(r);
  return n;
}

static void test_counts_and_timestamps(void) {
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.batch_size = 8;
  o.width = 64, o.height = 48;
  double t[64];
  int64_t idx[64];
  int st, nb;
  int n = read_all(fixture("testsrc_h264.mp4"), &o, t, idx, 64, &st, &nb);
  CHECK_MSG(n == 50 && st == FERRY_END, "n=%d st=%d %s", n, st, ferry_last_error());
  CHECK(nb == 7); /* 6 x 8 + 2 */
  int ok = 1;
  for (int i = 0; i < n && i < 64; i++)
    ok &= idx[i] == i && fabs(t[i] - i / 25.0) < 1e-6;
  CHECK(ok);

  ferry_video_info info;
  CHECK(ferry_video_probe_file(fixture("testsrc_h264.mp4"), &info) == FERRY_OK);
  CHECK(!strcmp(info.codec, "h264") && info.width == 320 && info.height == 240);
  CHECK(info.frames == 50 && fabs(info.fps - 25) < 1e-9 && info.rotation == 0);
  CHECK(info.bit_depth == 8);

  CHECK(ferry_video_probe_file(fixture("hevc10.mp4"), &info) == FERRY_OK);
  CHECK(!strcmp(info.codec, "hevc") && info.bit_depth == 10);
  n = read_all(fixture("hevc10.mp4"), &o, t, idx, 64, &st, &nb);
  CHECK_MSG(n == 12 && st == FERRY_END, "hevc10: n=%d %s", n, ferry_last_error());

  n = read_all(fixture("vp9.webm"), &o, t, idx, 64, &st, &nb);
  CHECK_MSG(n == 30 && st == FERRY_END, "vp9: n=%d %s", n, ferry_last_error());
  CHECK(n == 30 && fabs(t[29] - 29 / 30.0) < 1.5e-3); /* WebM: millisecond times */
}

static void test_sampling(void) {
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.width = 32, o.height = 32;
  o.batch_size = 3;
  double t[64];
  int64_t idx[64];
  int st, nb;
  o.stride = 7; /* 0, 7, ..., 49 */
  int n = read_all(fixture("testsrc_h264.mp4"), &o, t, idx, 64, &st, &nb);
  CHECK(n == 8 && nb == 3 && st == FERRY_END);
  int ok = 1;
  for (int i = 0; i < n; i++)
    ok &= idx[i] == 7 * i;
  CHECK(ok);

  o.stride = 1;
  o.rate = 10; /* grid 0, .1, .2, ...: frames 0, 3, 5, 8, 10, ... */
  n = read_all(fixture("testsrc_h264.mp4"), &o, t, idx, 64, &st, &nb);
  CHECK_MSG(n == 20, "rate 10: %d frames", n);
  CHECK(n == 20 && idx[0] == 0 && idx[1] == 3 && idx[2] == 5 && idx[3] == 8 && idx[4] == 10);

  o.rate = 0;
  o.start_s = 0.5, o.end_s = 1.0; /* frames 13 (0.52 s) .. 24 (0.96 s), after a seek */
  n = read_all(fixture("testsrc_h264.mp4"), &o, t, idx, 64, &st, &nb);
  CHECK_MSG(n == 12 && st == FERRY_END, "range: %d frames", n);
  CHECK(n == 12 && idx[0] == 13 && idx[11] == 24 && fabs(t[0] - 0.52) < 1e-6);

  o.stride = 2, o.rate = 5; /* exclusive */
  ferry_video_reader *r;
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &r) == FERRY_EINVAL && !r);
  ferry_video_options_default(&o);
  o.device = -2; /* GPU decoding: tests/unit/test_video_gpu.c */
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &r) == FERRY_EINVAL && !r);
  CHECK(ferry_video_open(fixture("no_such.mp4"), NULL, &r) == FERRY_EIO);
  CHECK(strstr(ferry_last_error(), "no_such.mp4") != NULL);
}

/* Batches equal ferry_resize of the full frames (same filter), stored. */
static void test_resize_and_store(void) {
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.width = 72, o.height = 40;
  o.layout = FERRY_LAYOUT_HWC;
  o.batch_size = 4;
  ferry_video_reader *a, *b;
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &a) == FERRY_OK);
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &b) == FERRY_OK);
  ferry_video_batch *bt;
  CHECK(ferry_video_next(a, &bt) == FERRY_OK && bt->count == 4);
  int same = 1;
  for (int k = 0; k < 4; k++) {
    ferry_image fr, small;
    double ts;
    int64_t ix;
    CHECK(ferry_video_next_frame(b, &fr, &ts, &ix) == FERRY_OK);
    CHECK(fr.width == 320 && fr.height == 240 && ix == k && ts == bt->timestamps[k]);
    CHECK(ferry_resize(&fr, NULL, &small, 72, 40, FERRY_FILTER_TRIANGLE) == FERRY_OK);
    const uint8_t *got = (const uint8_t *)bt->data + (size_t)k * 72 * 40 * 3;
    for (int y = 0; y < 40; y++)
      same &= !memcmp(got + y * 72 * 3, small.data + y * small.stride, 72 * 3);
    ferry_image_free(&small);
  }
  CHECK(same);
  ferry_video_close(a);
  ferry_video_close(b);

  /* f32 normalised CHW: value = (x/255 - mean) / std of the u8 HWC pixel */
  ferry_video_options f = o;
  f.layout = FERRY_LAYOUT_CHW, f.dtype = FERRY_F32, f.normalize = 1;
  ferry_video_reader *u, *v;
  ferry_video_batch *bu, *bv;
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &u) == FERRY_OK);
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &f, &v) == FERRY_OK);
  CHECK(ferry_video_next(u, &bu) == FERRY_OK && ferry_video_next(v, &bv) == FERRY_OK);
  const uint8_t *p8 = bu->data;
  const float *pf = bv->data;
  double worst = 0;
  for (int c = 0; c < 3; c++)
    for (int i = 0; i < 72 * 40; i++) {
      double want = (p8[i * 3 + c] / 255.0 - f.mean[c]) / f.std[c];
      worst = fmax(worst, fabs(pf[c * 72 * 40 + i] - want));
    }
  CHECK_MSG(worst < 1e-5, "normalised f32 off by %g", worst);
  ferry_video_close(u);
  ferry_video_close(v);
}

/* rot90_h264.mp4 is stored 160x96 with a 90-degree clockwise display
 * matrix: frames come out 96x160, the stored frame turned clockwise. */
static void test_rotation(void) {
  ferry_video_options o;
  ferry_video_options_default(&o);
  ferry_video_reader *r, *s;
  o.layout = FERRY_LAYOUT_HWC;
  CHECK(ferry_video_open(fixture("rot90_h264.mp4"), &o, &r) == FERRY_OK);
  ferry_video_info info;
  ferry_video_get_info(r, &info);
  CHECK(info.rotation == 90 && info.upright_width == 96 && info.upright_height == 160);
  o.ignore_rotation = 1;
  CHECK(ferry_video_open(fixture("rot90_h264.mp4"), &o, &s) == FERRY_OK);
  ferry_video_batch *a, *b;
  CHECK(ferry_video_next(r, &a) == FERRY_OK && ferry_video_next(s, &b) == FERRY_OK);
  CHECK(a->width == 96 && a->height == 160 && b->width == 160 && b->height == 96);
  const uint8_t *up = a->data, *st = b->data;
  int same = 1;
  for (int y = 0; y < 160; y++)
    for (int x = 0; x < 96; x++) /* upright (x, y) = stored (y, 95 - x) */
      same &= !memcmp(up + (y * 96 + x) * 3, st + ((95 - x) * 160 + y) * 3, 3);
  CHECK(same);
  ferry_video_close(r);
  ferry_video_close(s);
  /* resized: the output size is upright */
  o.ignore_rotation = 0;
  o.width = 30, o.height = 50;
  CHECK(ferry_video_open(fixture("rot90_h264.mp4"), &o, &r) == FERRY_OK);
  CHECK(ferry_video_next(r, &a) == FERRY_OK && a->width == 30 && a->height == 50);
  ferry_video_close(r);
}

static void test_truncated(void) {
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.width = 32, o.height = 32;
  double t[64];
  int64_t idx[64];
  int st, nb;
  /* ffprobe -count_frames reads 28 frames of truncated_h264.mp4 and 14 of
   * truncated_vp9.webm */
  int n = read_all(fixture("truncated_h264.mp4"), &o, t, idx, 64, &st, &nb);
  CHECK_MSG(n == 28 && st == FERRY_ECORRUPT, "n=%d st=%d", n, st);
  CHECK(strstr(ferry_last_error(), "truncated_h264.mp4") != NULL);
  n = read_all(fixture("truncated_vp9.webm"), &o, t, idx, 64, &st, &nb);
  CHECK_MSG(n == 14 && st == FERRY_ECORRUPT, "n=%d st=%d", n, st);
  CHECK(strstr(ferry_last_error(), "truncated_vp9.webm: truncated") != NULL);
}

/* Issue 16 item 19: garbled_h264.mp4 demuxes whole but the decoder
 * conceals errors in many of its 50 frames. By default every frame comes
 * out and the damaged ones are counted (a lower bound with frame threads);
 * strict decoding (one thread) stops at the first with an error naming the
 * file and frame. An intact file counts none, strict or not. */
static void test_damaged(void) {
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.width = 32, o.height = 32;
  ferry_video_reader *r;
  ferry_video_batch *b;
  ferry_video_stats s;
  for (int threads = 0; threads <= 1; threads++) {
    o.threads = threads;
    CHECK(ferry_video_open(fixture("garbled_h264.mp4"), &o, &r) == FERRY_OK);
    int n = 0, st;
    while ((st = ferry_video_next(r, &b)) == FERRY_OK)
      n += b->count;
    ferry_video_get_stats(r, &s);
    CHECK_MSG(st == FERRY_END && n == 50 && s.damaged >= 1 && s.first_damaged >= 0,
              "threads %d: st %d, %d frames, %llu damaged, first %lld", threads, st, n,
              (unsigned long long)s.damaged, (long long)s.first_damaged);
    if (threads == 1) /* one thread flags every frame the decoder concealed */
      CHECK_MSG(s.damaged >= 15, "one thread: %llu damaged", (unsigned long long)s.damaged);
    ferry_video_close(r);
  }
  o.threads = 0;
  o.strict = 1;
  CHECK(ferry_video_open(fixture("garbled_h264.mp4"), &o, &r) == FERRY_OK);
  int st;
  while ((st = ferry_video_next(r, &b)) == FERRY_OK)
    ;
  CHECK_MSG(st == FERRY_ECORRUPT && strstr(ferry_last_error(), "garbled_h264.mp4: frame ") &&
                strstr(ferry_last_error(), "decoded with errors"),
            "strict: %d %s", st, ferry_last_error());
  ferry_video_get_stats(r, &s);
  CHECK(s.damaged == 1);
  ferry_video_close(r);
  int n = 0;
  CHECK(ferry_video_open(fixture("testsrc_h264.mp4"), &o, &r) == FERRY_OK);
  while ((st = ferry_video_next(r, &b)) == FERRY_OK)
    n += b->count;
  ferry_video_get_stats(r, &s);
  CHECK(st == FERRY_END && n == 50 && s.damaged == 0 && s.first_damaged == -1);
  ferry_video_close(r);
}

static void test_corpus(void) {
  const char *c = getenv("FERRY_CORPUS");
  char p[4096];
  snprintf(p, sizeof p, "%s/video/pan_720p_hevc.mp4", c ? c : "../shared/corpus");
  FILE *f = fopen(p, "rb");
  if (!f) {
    SKIP("video corpus: %s not found", p);
    return;
  }
  fclose(f);
  static const struct {
    const char *name;
    int frames;
  } want[] = {{"pan_1080p_h264.mp4", 300}, {"pan_720p_hevc.mp4", 90}, {"pan_720p_vp9.webm", 90}};
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.width = o.height = 96;
  o.stride = 10;
  o.batch_size = 8;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    snprintf(p, sizeof p, "%s/video/%s", c ? c : "../shared/corpus", want[i].name);
    double t[64];
    int64_t idx[64];
    int st, nb;
    int n = read_all(p, &o, t, idx, 64, &st, &nb);
    int expect = (want[i].frames + 9) / 10;
    CHECK_MSG(n == expect && st == FERRY_END, "%s: %d frames (want %d): %s", want[i].name, n,
              expect, ferry_last_error());
    CHECK(n > 1 && idx[1] == 10 && fabs(t[1] - 10 / 30.0) < 1.5e-3);
  }
  /* its MP4 index (moov) was at the end and is cut off: nothing decodes,
   * and the message says so */
  snprintf(p, sizeof p, "%s/video/truncated_h264.mp4", c ? c : "../shared/corpus");
  ferry_video_reader *r;
  CHECK(ferry_video_open(p, &o, &r) == FERRY_ECORRUPT);
  CHECK(strstr(ferry_last_error(), "truncated_h264.mp4") && strstr(ferry_last_error(), "moov"));
}

/* ------------------------------------------------ skipping, random access */

static uint64_t hash_image(const ferry_image *im) {
  uint64_t h = 1469598103934665603ull;
  for (int y = 0; y < im->height; y++) {
    const uint8_t *row = im->data + (size_t)y * im->stride;
    for (size_t x = 0; x < (size_t)im->width * 3; x++)
      h = (h ^ row[x]) * 1099511628211ull;
  }
  return h ^ ((uint64_t)im->width << 32 | (uint64_t)im->height);
}

typedef struct frame_rec {
  int64_t idx;
  double t;
  uint64_t h;
} frame_rec;

/* Every sampled frame of `path` as next_frame gives it; returns the count
 * (-1: open failed), *decoded the frames decoded. */
static int read_frames(const char *path, const ferry_video_options *o, frame_rec *out, int cap,
                       uint64_t *decoded) {
  ferry_video_reader *r;
  if (ferry_video_open(path, o, &r) != FERRY_OK)
    return -1;
  ferry_image im;
  double t;
  int64_t idx;
  int n = 0, st;
  while ((st = ferry_video_next_frame(r, &im, &t, &idx)) == FERRY_OK)
    if (n < cap)
      out[n++] = (frame_rec){idx, t, hash_image(&im)};
  CHECK_MSG(st == FERRY_END, "%s: %s", path, ferry_last_error());
  ferry_video_stats s;
  ferry_video_get_stats(r, &s);
  if (decoded)
    *decoded = s.decoded;
  ferry_video_close(r);
  return n;
}

/* Frames the sample does not keep are skipped (non-reference frames not
 * decoded, keyframes jumped to): each kept frame has the same number, time
 * and pixels as when every frame is decoded; frame_at(k) equals frame k. */
static void check_skip_and_access(const char *path, int expect_fewer) {
  enum { CAP = 400 };
  static frame_rec all[CAP], got[CAP], ref[CAP];
  ferry_video_options o;
  ferry_video_options_default(&o);
  int n = read_frames(path, &o, all, CAP, NULL);
  CHECK_MSG(n > 1 && n < CAP, "%s: %d frames", path, n);
  if (n <= 1 || n >= CAP)
    return;
  for (int i = 0; i < n; i++)
    CHECK(all[i].idx == i);
  /* the last: a sparse sample (the frames between may be jumped over) */
  int strides[] = {25, 7, 2, 3, 12, n - 1};
  /* the large corpus clips: three strides */
  size_t nstrides = sizeof strides / sizeof strides[0];
  if (n > 100)
    strides[2] = n - 1, nstrides = 3;
  for (size_t s = 0; s < nstrides; s++) {
    o.stride = strides[s];
    uint64_t decoded = 0;
    int m = read_frames(path, &o, got, CAP, &decoded);
    CHECK_MSG(m == (n + o.stride - 1) / o.stride, "%s stride %d: %d frames of %d", path, o.stride,
              m, n);
    for (int j = 0; j < m; j++) {
      int64_t k = (int64_t)j * o.stride;
      CHECK_MSG(got[j].idx == k && got[j].t == all[k].t && got[j].h == all[k].h,
                "%s stride %d: kept frame %d is frame %lld (want %lld), same pixels %d", path,
                o.stride, j, (long long)got[j].idx, (long long)k, got[j].h == all[k].h);
    }
    if (expect_fewer && o.stride == 25)
      CHECK_MSG(decoded < (uint64_t)n, "%s stride 25: %llu frames decoded of %d", path,
                (unsigned long long)decoded, n);
  }
  /* a rate and a time range: the same frames as strict reading (which skips
   * nothing) */
  ferry_video_options_default(&o);
  o.rate = 3;
  o.start_s = 0.3;
  ferry_video_options so = o;
  so.strict = 1;
  int m = read_frames(path, &o, got, CAP, NULL), mr = read_frames(path, &so, ref, CAP, NULL);
  CHECK_MSG(m == mr && m > 0, "%s rate 3 from 0.3 s: %d frames, strict %d", path, m, mr);
  for (int j = 0; j < m && j < mr; j++)
    CHECK_MSG(got[j].idx == ref[j].idx && got[j].idx < n && got[j].h == all[got[j].idx].h,
              "%s rate 3: frame %d is %lld (strict: %lld)", path, j, (long long)got[j].idx,
              (long long)ref[j].idx);

  /* random access in any order */
  ferry_video_options_default(&o);
  ferry_video_reader *r;
  CHECK(ferry_video_open(path, &o, &r) == FERRY_OK);
  int64_t ks[] = {n - 1, 0, n / 2, n / 2 + 1, 2, 1, 12, 13, n - 2, 250, 251, 249, 125, n - 1};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    if (ks[i] >= n)
      continue;
    ferry_image im;
    double t = -1;
    int st = ferry_video_frame_at(r, ks[i], &im, &t);
    CHECK_MSG(st == FERRY_OK, "%s: frame_at(%lld): %s", path, (long long)ks[i], ferry_last_error());
    if (st == FERRY_OK)
      CHECK_MSG(t == all[ks[i]].t && hash_image(&im) == all[ks[i]].h,
                "%s: frame_at(%lld) differs from frame %lld read in order (t %.6f, %.6f)", path,
                (long long)ks[i], (long long)ks[i], t, all[ks[i]].t);
  }
  ferry_image im;
  CHECK(ferry_video_frame_at(r, n, &im, NULL) == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "out of range") && strstr(ferry_last_error(), path), "%s",
            ferry_last_error());
  char count[32];
  snprintf(count, sizeof count, "has %d frames", n);
  CHECK_MSG(strstr(ferry_last_error(), count), "%s", ferry_last_error());
  CHECK(ferry_video_frame_at(r, -1, &im, NULL) == FERRY_EINVAL);
  /* still works after an error */
  double t;
  CHECK(ferry_video_frame_at(r, 1, &im, &t) == FERRY_OK && hash_image(&im) == all[1].h);
  /* no sequential reading after random access */
  ferry_video_batch *b;
  CHECK(ferry_video_next(r, &b) == FERRY_EINVAL);
  ferry_video_close(r);
}

static void test_skip_and_access(void) {
  check_skip_and_access(fixture("testsrc_h264.mp4"), 1);
  check_skip_and_access(fixture("hevc10.mp4"), 0);
  check_skip_and_access(fixture("vp9.webm"), 0);
  check_skip_and_access(fixture("rot90_h264.mp4"), 0);
  const char *c = getenv("FERRY_CORPUS");
  static const char *names[] = {"pan_1080p_h264.mp4", "pan_720p_hevc.mp4", "pan_720p_vp9.webm"};
  for (int i = 0; i < 3; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/video/%s", c ? c : "../shared/corpus", names[i]);
    FILE *f = fopen(p, "rb");
    if (!f) {
      SKIP("video corpus: %s not found", p);
      return;
    }
    fclose(f);
    /* the 1080p clip (9 s of decoding) in the full tier: the fixtures check
     * the same skipping on H.264 */
    if (i == 0 && !check_full_only("skipping and random access on pan_1080p_h264.mp4"))
      continue;
    check_part(names[i]);
    check_skip_and_access(p, i == 0);
  }
}

int main(void) {
  ferry_video_reader *r;
  int st = ferry_video_open(fixture("testsrc_h264.mp4"), NULL, &r);
  if (st == FERRY_EUNSUPPORTED && strstr(ferry_last_error(), "built without libavcodec")) {
    SKIP("video: %s", ferry_last_error());
    return check_done();
  }
  CHECK_MSG(st == FERRY_OK, "%s", ferry_last_error());
  ferry_video_close(r);
  check_part("counts and timestamps");
  test_counts_and_timestamps();
  check_part("sampling");
  test_sampling();
  check_part("resize and store");
  test_resize_and_store();
  check_part("rotation");
  test_rotation();
  check_part("truncated");
  test_truncated();
  check_part("damaged");
  test_damaged();
  check_part("corpus clips");
  test_corpus();
  check_part("skipping and random access");
  test_skip_and_access();
  return check_done();
}
