/* test_gpu.c — the CUDA backend on a real GPU: the batch kernels against
 * the CPU transforms on identical input, nvJPEG's hardware decode against
 * libjpeg-turbo (PSNR), the GPU loader against the CPU loader, bad files
 * without a crash or a sticky CUDA error. Without a GPU (or without CUDA
 * in the build) it says so and skips. */
#include "check.h"
#include "core/internal.h"
#include "core/testctl.h"
#include "cuda/gpu.h"
#include "image/image.h"
#include "park_check.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char path_buf[4096];
static const char *sample_file(const char *rel) {
  const char *s = getenv("FERRY_SAMPLE");
  snprintf(path_buf, sizeof path_buf, "%s/%s", s ? s : "data/sample", rel);
  return path_buf;
}

static fy_gpu *open_gpu(int w, int h, ferry_layout layout, ferry_dtype dtype, int normalize,
                        int hw) {
  fy_gpu_params p = {.device = 0,
                     .nslots = 1,
                     .batch = 4,
                     .width = w,
                     .height = h,
                     .layout = layout,
                     .dtype = dtype,
                     .normalize = normalize,
                     .mean = {0.485f, 0.456f, 0.406f},
                     .std = {0.229f, 0.224f, 0.225f},
                     .arena_bytes = 64u << 20,
                     .temp_bytes = 16u << 20,
                     .table_entries = 200000,
                     .hw_decode = hw,
                     .decoders = 1};
  fy_gpu *g = NULL;
  CHECK_MSG(fy_gpu_open(&p, &g) == FERRY_OK, "%s", ferry_last_error());
  return g;
}

/* Resampling kernels vs fy_resize_u8 on the same decoded image. */
static void test_resample_vs_cpu(const char *file, int ow, int oh, ferry_filter f) {
  ferry_image im;
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  o.ignore_orientation = 1;
  CHECK(ferry_decode_file(sample_file(file), &o, &im) == FERRY_OK);
  fy_gpu *g = open_gpu(ow, oh, FERRY_LAYOUT_HWC, FERRY_U8, 0, 0);
  if (!g) {
    ferry_image_free(&im);
    return;
  }
  fy_box box = {im.width * 0.1, im.height * 0.05, im.width * 0.93, im.height * 0.9};
  CHECK(fy_gpu_upload(0, im.data, fy_gpu_arena(g, 0), im.stride * im.height) == FERRY_OK);
  int32_t *tab = fy_gpu_tables(g, 0);
  fy_axis_table tx, ty;
  fy_buf scratch = {0};
  CHECK(fy_resize_axis_table(f, im.width, box.x0, box.x1, ow, tab, 200000, &tx, &scratch) == 0);
  CHECK(fy_resize_axis_table(f, im.height, box.y0, box.y1, oh, tab + tx.entries,
                             200000 - tx.entries, &ty, &scratch) == 0);
  fy_gpu_sample *s = fy_gpu_samples(g, 0);
  memset(s, 0, sizeof *s);
  s->src = (uint64_t)(uintptr_t)fy_gpu_arena(g, 0);
  s->pitch = (int32_t)im.stride;
  s->xs = 0, s->xk = ow, s->xtaps = tx.taps;
  s->ys = tx.entries, s->yk = tx.entries + oh, s->ytaps = ty.taps;
  s->row0 = ty.first, s->rows = ty.last - ty.first;
  CHECK(fy_gpu_finish(g, 0, 1, tx.entries + ty.entries, 0) == FERRY_OK);
  CHECK(fy_gpu_wait(g, 0) == FERRY_OK);
  size_t n = (size_t)ow * oh * 3;
  uint8_t *gpu = malloc(n), *cpu = malloc(n);
  CHECK(fy_gpu_download(0, fy_gpu_output(g, 0), gpu, n) == FERRY_OK);
  fy_resize_ctx ctx = {0};
  CHECK(fy_resize_u8(im.data, im.width, im.height, im.stride, 3, &box, cpu, ow, oh, (size_t)ow * 3,
                     f, &ctx) == FERRY_OK);
  int maxd = 0, diff = 0;
  for (size_t i = 0; i < n; i++) {
    int d = abs(gpu[i] - cpu[i]);
    maxd = d > maxd ? d : maxd;
    diff += d != 0;
  }
  CHECK_MSG(maxd <= 1, "%s %dx%d filter %d: GPU vs CPU max diff %d", file, ow, oh, f, maxd);
  printf("resample %s -> %dx%d filter %d: max diff %d, %d of %zu values differ\n", file, ow, oh, f,
         maxd, diff, n);
  fy_resize_ctx_free(&ctx);
  fy_buf_free(&scratch);
  free(gpu);
  free(cpu);
  fy_gpu_close(g);
  ferry_image_free(&im);
}

/* The store part (flip, normalize, layout, dtype) vs fy_store. */
static void test_store_vs_cpu(ferry_layout layout, ferry_dtype dtype, int normalize) {
  int w = 37, h = 29;
  fy_gpu *g = open_gpu(w, h, layout, dtype, normalize, 0);
  if (!g)
    return;
  uint8_t *st = fy_gpu_staging(g, 0);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < w * h * 3; i++)
      st[k * w * h * 3 + i] = (uint8_t)((i * 7 + k * 13) ^ (i >> 3));
  fy_gpu_sample *s = fy_gpu_samples(g, 0);
  for (int k = 0; k < 2; k++) {
    memset(&s[k], 0, sizeof s[k]);
    s[k].src = fy_gpu_staged_src(g, 0, k);
    s[k].pitch = w * 3;
    s[k].staged = 1;
    s[k].flip = k;
    s[k].out_index = k;
  }
  CHECK(fy_gpu_finish(g, 0, 2, 0, 2) == FERRY_OK);
  CHECK(fy_gpu_wait(g, 0) == FERRY_OK);
  size_t per = (size_t)w * h * 3 * ferry_dtype_size(dtype);
  uint8_t *gpu = malloc(2 * per), *cpu = malloc(2 * per);
  CHECK(fy_gpu_download(0, fy_gpu_output(g, 0), gpu, 2 * per) == FERRY_OK);
  fy_store_params sp = {
      layout, dtype, 0, normalize, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 0};
  double maxd = 0;
  for (int k = 0; k < 2; k++) {
    sp.flip = k;
    fy_store(st + (size_t)k * w * h * 3, w, h, 3, (size_t)w * 3, &sp, cpu + k * per);
  }
  size_t n = 2 * (size_t)w * h * 3;
  for (size_t i = 0; i < n; i++) {
    double a, b;
    if (dtype == FERRY_F32)
      a = ((float *)gpu)[i], b = ((float *)cpu)[i];
    else if (dtype == FERRY_F16)
      a = fy_f16_to_f32(((uint16_t *)gpu)[i]), b = fy_f16_to_f32(((uint16_t *)cpu)[i]);
    else
      a = gpu[i], b = cpu[i];
    maxd = fmax(maxd, fabs(a - b));
  }
  double tol = dtype == FERRY_U8 ? 1 : 1e-3;
  CHECK_MSG(maxd <= tol, "store layout %d dtype %d norm %d: max diff %g", layout, dtype, normalize,
            maxd);
  free(gpu);
  free(cpu);
  fy_gpu_close(g);
}

/* nvJPEG hardware decode vs libjpeg-turbo, PSNR >= 40 dB, on every photo
 * the engine accepts. */
static void test_hw_decode_psnr(const char *dir) {
  fy_gpu *g = open_gpu(64, 64, FERRY_LAYOUT_HWC, FERRY_U8, 0, 1);
  if (!g)
    return;
  if (!fy_gpu_hw_decode(g)) {
    SKIP("nvJPEG hardware engine not available on this GPU");
    fy_gpu_close(g);
    return;
  }
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  struct dirent *e;
  int tested = 0, refused = 0;
  double worst = 1e9, worst_fancy = 1e9;
  fy_buf file = {0};
  while (d && (e = readdir(d)) != NULL) {
    if (!strstr(e->d_name, ".jpg"))
      continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n = 0;
    int w, h;
    if (fy_read_file(path, 0, &file, &n) != FERRY_OK ||
        !fy_gpu_jpeg_check(g, 0, file.p, n, &w, &h)) {
      refused++;
      continue;
    }
    const uint8_t *data[1] = {file.p};
    size_t len[1] = {n};
    if ((size_t)w * h * 3 > (64u << 20)) {
      refused++;
      continue;
    }
    uint8_t *dst[1] = {fy_gpu_arena(g, 0)};
    int rc = fy_gpu_jpeg_decode(g, 0, data, len, &w, dst, 1);
    CHECK_MSG(rc == FERRY_OK, "%s: %s", path, ferry_last_error());
    if (rc)
      continue;
    uint8_t *gpu = malloc((size_t)w * h * 3);
    CHECK(fy_gpu_download(0, dst[0], gpu, (size_t)w * h * 3) == FERRY_OK);
    /* against libjpeg-turbo with the engine's kind of chroma upsampling
     * (box), and, for the record, with Pillow's (fancy) */
    double p2[2];
    for (int fancy = 0; fancy < 2; fancy++) {
      ferry_decode_options o;
      ferry_decode_options_default(&o);
      o.ignore_orientation = 1;
      o.fast_upsampling = !fancy;
      ferry_image im;
      CHECK(ferry_decode_file(path, &o, &im) == FERRY_OK);
      CHECK(im.width == w && im.height == h);
      double se = 0;
      for (size_t i = 0; i < (size_t)w * h * 3; i++) {
        double df = (double)gpu[i] - im.data[i];
        se += df * df;
      }
      double mse = se / ((double)w * h * 3);
      p2[fancy] = mse > 0 ? 10 * log10(255.0 * 255.0 / mse) : 99;
      ferry_image_free(&im);
    }
    CHECK_MSG(p2[0] >= 40, "%s: PSNR %.1f dB", path, p2[0]);
    if (p2[0] < 42 || p2[1] < 40)
      printf("  %s: PSNR %.2f dB (box upsampling), %.2f dB (fancy)\n", e->d_name, p2[0], p2[1]);
    worst = fmin(worst, p2[0]);
    worst_fancy = fmin(worst_fancy, p2[1]);
    tested++;
    free(gpu);
  }
  if (d)
    closedir(d);
  printf("nvJPEG hardware vs libjpeg-turbo: %d images, worst PSNR %.1f dB (box chroma "
         "upsampling), %.1f dB (fancy); %d refused by the engine (the CPU decodes those)\n",
         tested, worst, worst_fancy, refused);
  CHECK(tested > 0);
  fy_buf_free(&file);
  fy_gpu_close(g);
}

/* The GPU loader equals the CPU loader up to decoder differences, and bad
 * files are skipped with no sticky CUDA error. The batch size sets the
 * engine's call size (gpu.cu: 4 below 12, 16 up to 47, 64 from 48). */
static void test_loader_b(const char *source, int hw, int batch) {
  size_t per = 3 * 96 * 80 * 4;
  float *out[2];
  int count[2] = {0, 0};
  uint64_t gpu_decoded = 0, gpu_chunks = 0;
  double gpu_call_s = 0;
  for (int pass = 0; pass < 2; pass++) {
    ferry_loader_options o;
    ferry_loader_options_default(&o);
    o.source = source;
    o.batch_size = batch;
    o.width = 96;
    o.height = 80;
    o.shuffle = 0;
    o.dtype = FERRY_F32;
    o.normalize = 1;
    o.flip_prob = 0.5f;
    o.allow_dct_scaling = 0;
    o.device = pass ? 0 : -1;
    o.hw_decode = hw;
    o.on_skip = NULL;
    ferry_loader *L;
    int rc = ferry_loader_open(&o, &L);
    CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
    if (rc)
      return;
    /* the default ring: 6 batches on a GPU with the engine, else 4 */
    CHECK_MSG(ferry_loader_prefetch(L) == (pass && hw ? 6 : 4), "ring of %d",
              ferry_loader_prefetch(L));
    out[pass] = malloc(per * (size_t)ferry_loader_source_size(L));
    ferry_batch *b;
    while ((rc = ferry_loader_next(L, &b)) == FERRY_OK) {
      CHECK(b->device == (pass ? 0 : -1));
      if (pass)
        CHECK(fy_gpu_download(0, b->data, (char *)out[1] + count[1] * per, b->nbytes) == 0);
      else
        memcpy((char *)out[0] + count[0] * per, b->data, b->nbytes);
      count[pass] += b->count;
      ferry_loader_release(L, b);
    }
    CHECK_MSG(rc == FERRY_END, "%s", ferry_last_error());
    ferry_stats st;
    ferry_loader_get_stats(L, &st);
    if (pass) {
      gpu_decoded = st.gpu_decoded;
      gpu_chunks = st.gpu_chunks;
      gpu_call_s = st.gpu_call_s;
    }
    /* the CPU loader: no engine */
    CHECK(pass || (st.gpu_decoded == 0 && st.gpu_chunks == 0 && st.gpu_call_s == 0));
    ferry_loader_close(L);
  }
  CHECK(count[0] == count[1]);
  /* the engine's calls: chunks of at most 64 images, one at least for each image taken */
  CHECK_MSG(gpu_decoded == 0 ? gpu_chunks == 0
                             : gpu_chunks >= (gpu_decoded + 63) / 64 && gpu_chunks <= gpu_decoded,
            "%llu images on the engine in %llu calls", (unsigned long long)gpu_decoded,
            (unsigned long long)gpu_chunks);
  /* time in the engine's calls: some for each call, none without one */
  CHECK_MSG(gpu_chunks ? gpu_call_s > 0 : gpu_call_s == 0, "%llu calls in %.6f s",
            (unsigned long long)gpu_chunks, gpu_call_s);
  double worst = 0;
  for (int i = 0; i < count[0]; i++) {
    double sum = 0;
    for (size_t k = 0; k < per / 4; k++)
      sum += fabs(out[0][i * per / 4 + k] - out[1][i * per / 4 + k]);
    worst = fmax(worst, sum / (per / 4));
  }
  /* normalized units: 1 level = 1/255/0.225 = 0.017 */
  CHECK_MSG(worst < 0.05, "%s: worst mean abs diff GPU vs CPU loader %.4f", source, worst);
  printf("loader %s (hw %d, batch %d): %d images, %llu by the JPEG engine in %llu calls, worst "
         "mean abs diff %.4f\n",
         source, hw, batch, count[0], (unsigned long long)gpu_decoded,
         (unsigned long long)gpu_chunks, worst);
  CHECK(fy_gpu_sync(0) == FERRY_OK); /* no sticky error */
  free(out[0]);
  free(out[1]);
}

static void test_loader(const char *source, int hw) { test_loader_b(source, hw, 16); }

/* The memory cache on a GPU with the JPEG engine on: while the budget has
 * room every sample takes the CPU path and is kept, so the second epoch is
 * served from RAM (identical batches, no engine work); with a budget of 3
 * samples the engine takes the rest in both epochs. */
static void test_loader_cache(const char *source, uint64_t budget_samples) {
  const int w = 64, h = 48;
  size_t per = (size_t)3 * w * h * 2;
  uint8_t *out[2] = {NULL, NULL};
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = source;
  o.batch_size = 8;
  o.width = w;
  o.height = h;
  o.shuffle = 0;
  o.dtype = FERRY_F16;
  o.normalize = 1;
  o.device = 0;
  o.hw_decode = 1;
  o.cache_bytes = budget_samples * 3 * w * h;
  o.epoch_ahead = 0; /* the counters below are each epoch's own work */
  ferry_loader *L;
  int rc = ferry_loader_open(&o, &L);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  if (rc)
    return;
  int64_t n = ferry_loader_source_size(L);
  ferry_stats st[2];
  int count[2] = {0, 0};
  for (int e = 0; e < 2; e++) {
    out[e] = calloc((size_t)n, per);
    CHECK(ferry_loader_start_epoch(L, e) == FERRY_OK);
    ferry_batch *b;
    while ((rc = ferry_loader_next(L, &b)) == FERRY_OK) {
      CHECK(fy_gpu_download(0, b->data, out[e] + (size_t)count[e] * per, b->nbytes) == 0);
      count[e] += b->count;
      ferry_loader_release(L, b);
    }
    CHECK_MSG(rc == FERRY_END, "%s", ferry_last_error());
    ferry_loader_get_stats(L, &st[e]);
  }
  ferry_loader_close(L);
  uint64_t cached2 = st[1].cached - st[0].cached, engine2 = st[1].gpu_decoded - st[0].gpu_decoded;
  CHECK(count[0] == count[1] && count[0] > 0);
  if (budget_samples >= (uint64_t)n) {
    CHECK_MSG(st[0].gpu_decoded == 0 && engine2 == 0, "engine took %llu + %llu samples",
              (unsigned long long)st[0].gpu_decoded, (unsigned long long)engine2);
    CHECK_MSG(cached2 == (uint64_t)count[1], "epoch 2: %llu of %d from the cache",
              (unsigned long long)cached2, count[1]);
    CHECK(memcmp(out[0], out[1], (size_t)count[0] * per) == 0);
  } else {
    CHECK_MSG(cached2 <= budget_samples && engine2 > 0, "epoch 2: %llu cached, %llu engine",
              (unsigned long long)cached2, (unsigned long long)engine2);
  }
  printf("cache on a GPU (budget %llu samples): epoch 2 %llu from the cache, %llu by the engine\n",
         (unsigned long long)budget_samples, (unsigned long long)cached2,
         (unsigned long long)engine2);
  free(out[0]);
  free(out[1]);
}

/* One GPU loader's epochs 0 and 1 (engine on, random crops and flips),
 * downloaded with their indices; with the epoch ahead, epoch 1 must be
 * made before it starts. At the end, stopped with epoch 1's last batch
 * held: that batch stays as it was. */
typedef struct gpu_run {
  uint8_t *img;
  int64_t *idx;
  int n[2];
} gpu_run;

static void gpu_two_epochs(const char *source, int ahead, gpu_run *r, size_t per, int cap) {
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = source;
  o.batch_size = 8;
  o.width = 64;
  o.height = 48;
  o.dtype = FERRY_U8;
  o.crop = FERRY_CROP_RANDOM;
  o.flip_prob = 0.5f;
  o.allow_dct_scaling = 0; /* the CPU's share decoded at full size, as the engine's */
  o.device = 0;
  o.hw_decode = 1;
  o.prefetch = 3;
  o.seed = 5;
  o.epoch_ahead = ahead;
  o.on_skip = NULL;
  ferry_loader *L;
  int rc = ferry_loader_open(&o, &L);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  if (rc)
    return;
  int at = 0;
  ferry_batch *b, *held = NULL;
  for (int e = 0; e < 2; e++) {
    if (e == 1 && ahead) {
      ferry_stats st;
      int i = 0;
      do {
        usleep(10000);
        ferry_loader_get_stats(L, &st);
      } while (st.images + st.skipped <= (uint64_t)ferry_loader_epoch_size(L) && ++i < 1000);
      CHECK_MSG(st.images + st.skipped > (uint64_t)ferry_loader_epoch_size(L),
                "nothing of epoch 1 made ahead (%llu samples made)",
                (unsigned long long)(st.images + st.skipped));
    }
    CHECK(ferry_loader_start_epoch(L, e) == FERRY_OK);
    while ((rc = ferry_loader_next(L, &b)) == FERRY_OK) {
      CHECK(at + b->count <= cap);
      CHECK(b->epoch == e);
      CHECK(fy_gpu_download(0, b->data, r->img + (size_t)at * per, b->nbytes) == 0);
      memcpy(r->idx + at, b->indices, (size_t)b->count * sizeof *b->indices);
      at += b->count;
      r->n[e] += b->count;
      if (held)
        ferry_loader_release(L, held);
      held = b;
    }
    CHECK_MSG(rc == FERRY_END, "%s", ferry_last_error());
  }
  CHECK(ferry_loader_stop(L) == FERRY_OK);
  if (held) {
    uint8_t *again = malloc(held->nbytes);
    CHECK(fy_gpu_download(0, held->data, again, held->nbytes) == 0);
    CHECK_MSG(!memcmp(again, r->img + (size_t)(at - held->count) * per, held->nbytes),
              "the batch held across ferry_loader_stop changed");
    free(again);
    ferry_loader_release(L, held);
  }
  ferry_loader_close(L);
}

/* The epoch ahead on a GPU: the same samples in the same order as the
 * plain loader, the same images up to the
 * engine's share (each sample goes to the engine or the CPU as they are
 * free), no sticky CUDA error. */
static void test_epoch_ahead_gpu(const char *source) {
  const int cap = 128;
  size_t per = (size_t)3 * 64 * 48;
  gpu_run r[2];
  static const char *what[2] = {"", "epoch ahead"};
  for (int a = 0; a < 2; a++) {
    r[a].img = calloc((size_t)cap, per);
    r[a].idx = calloc((size_t)cap, sizeof *r[a].idx);
    r[a].n[0] = r[a].n[1] = 0;
    gpu_two_epochs(source, a > 0, &r[a], per, cap);
  }
  int n = r[0].n[0] + r[0].n[1];
  for (int a = 1; a < 2; a++) {
    CHECK_MSG(n > 0 && r[0].n[0] == r[a].n[0] && r[0].n[1] == r[a].n[1], "%s", what[a]);
    CHECK_MSG(!memcmp(r[0].idx, r[a].idx, (size_t)n * sizeof *r[0].idx), "%s: order", what[a]);
    double worst = 0, all = 0;
    int differ = 0;
    for (int i = 0; i < n; i++) {
      double sum = 0;
      for (size_t k = 0; k < per; k++)
        sum += abs(r[0].img[i * per + k] - r[a].img[i * per + k]);
      worst = fmax(worst, sum / per);
      all += sum / per / n;
      differ += sum > 0;
    }
    CHECK_MSG(worst < 3.0, "worst mean abs diff, %s vs neither: %.2f levels", what[a], worst);
    printf("%s on a GPU: epochs of %d and %d samples, same order; %d samples differ "
           "(engine or CPU), mean abs diff %.2f levels, worst %.2f\n",
           what[a], r[a].n[0], r[a].n[1], differ, all, worst);
  }
  CHECK(fy_gpu_sync(0) == FERRY_OK);
  for (int a = 0; a < 2; a++) {
    free(r[a].img);
    free(r[a].idx);
  }
}

/* A batch whose kernels outlast the wait: FERRY_ETIMEOUT, then a longer
 * wait succeeds (the consumer's bounded wait, fy_gpu_wait_for). */
static void test_wait_timeout(void) {
  fy_gpu *g = open_gpu(32, 32, FERRY_LAYOUT_HWC, FERRY_U8, 0, 0);
  if (!g)
    return;
  CHECK(fy_gpu_busy(0, 400.0, fy_gpu_stream(g)) == FERRY_OK);
  CHECK(fy_gpu_finish(g, 0, 0, 0, 0) == FERRY_OK); /* the ready event, after the busy kernel */
  CHECK(fy_gpu_wait_for(g, 0, 50) == FERRY_ETIMEOUT);
  CHECK(strstr(ferry_last_error(), "did not finish in 50 ms") != NULL);
  CHECK(fy_gpu_wait_for(g, 0, 10000) == FERRY_OK);
  fy_gpu_close(g);
}

/* The GPU loader with a stalled sample (fy_fault_stall: a CPU decode or an
 * engine call sleeps 3 s): an error naming the stall, not a hang, and a
 * close that does not wait for the sleeper. Last: it leaves that thread. */
static void test_loader_stall(const char *dir) {
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = dir;
  o.batch_size = 8;
  o.width = o.height = 64;
  o.device = 0;
  o.stall_timeout_ms = 500;
  ferry_loader *L;
  if (ferry_loader_open(&o, &L) != FERRY_OK) {
    CHECK_MSG(0, "%s", ferry_last_error());
    return;
  }
  fy_fault_stall_set(3, 3000);
  double t0 = fy_now();
  ferry_batch *b;
  int rc;
  while ((rc = ferry_loader_next(L, &b)) == FERRY_OK)
    ferry_loader_release(L, b);
  CHECK_MSG(rc == FERRY_ETIMEOUT, "rc %d: %s", rc, ferry_last_error());
  CHECK_MSG(strstr(ferry_last_error(), "loader: stalled") != NULL, "%s", ferry_last_error());
  printf("GPU loader stall: %.200s\n", ferry_last_error());
  CHECK(fy_now() - t0 < 2.8);
  t0 = fy_now();
  ferry_loader_close(L);
  CHECK(fy_now() - t0 < 2.5);
  fy_fault_stall_set(0, 0);
}

int main(void) {
  fy_gpu_probe p;
  fy_gpu_probe_run(&p);
  if (!p.built_with_cuda || p.device_count == 0) {
    SKIP("GPU tests: %s", p.built_with_cuda ? p.error : "built without CUDA");
    return check_done();
  }
  printf("GPU: %s (cc %d.%d), hardware JPEG %s\n", p.dev[0].name, p.dev[0].major, p.dev[0].minor,
         p.dev[0].hw_jpeg ? "yes" : p.dev[0].hw_jpeg_why);
  test_resample_vs_cpu("class0/p0004.jpg", 224, 224, FERRY_FILTER_TRIANGLE);
  test_resample_vs_cpu("class0/p0000.jpg", 160, 96, FERRY_FILTER_BILINEAR);
  test_resample_vs_cpu("class1/p0001.jpg", 300, 200, FERRY_FILTER_LANCZOS);
  for (int l = 0; l < 2; l++)
    for (int d = 0; d < 3; d++)
      for (int nrm = 0; nrm < 2; nrm++)
        test_store_vs_cpu((ferry_layout)l, (ferry_dtype)d, nrm);
  const char *corpus = getenv("FERRY_CORPUS");
  char photos[4096];
  snprintf(photos, sizeof photos, "%s/photos", corpus ? corpus : "");
  DIR *d = corpus ? opendir(photos) : NULL;
  if (d) {
    closedir(d);
    test_hw_decode_psnr(photos);
  } else {
    SKIP("corpus photos not found: PSNR test on the bundled sample only");
    test_hw_decode_psnr(sample_file("class0"));
  }
  test_loader(sample_file(""), 1);
  test_loader(sample_file(""), 0);
  test_loader_b(sample_file(""), 1, 64); /* calls of 64, short chunks padded */
  /* a context that has padded more than FERRY_GPU_PAD_BUY images (a test
   * control, core/testctl.h) beyond calls of 16 and 4 goes on with those
   * (a split mid-run): the same images */
  CHECK(fy_tc_set(FY_TC_GPU_PAD_BUY, "20") == FERRY_OK);
  test_loader_b(sample_file(""), 1, 64);
  fy_tc_set(FY_TC_GPU_PAD_BUY, NULL);
  test_loader_b(sample_file(""), 1, 5); /* calls of 4 */
  /* FERRY_GPU_PAD=48: the chunks of 16 go as calls of 64 with 48 padding
   * images; 63: every chunk, down to one image (read when the loader
   * opens): the same images as the CPU's */
  CHECK(fy_tc_set(FY_TC_GPU_PAD, "48") == FERRY_OK);
  test_loader(sample_file(""), 1);
  CHECK(fy_tc_set(FY_TC_GPU_PAD, "63") == FERRY_OK);
  test_loader(sample_file(""), 1);
  fy_tc_set(FY_TC_GPU_PAD, NULL);
  if (p.dev[0].hw_jpeg) {
    test_loader_cache(sample_file(""), 1000);
    test_loader_cache(sample_file(""), 3);
  } else {
    SKIP("cache with the JPEG engine: %s", p.dev[0].hw_jpeg_why);
  }
  if (p.dev[0].hw_jpeg)
    test_epoch_ahead_gpu(sample_file(""));
  else
    SKIP("the epoch ahead with the JPEG engine: %s", p.dev[0].hw_jpeg_why);
  const char *list = getenv("FERRY_GPU_BAD_LIST");
  if (list)
    test_loader(list, 1);
  test_wait_timeout();
  test_loader_stall(sample_file(""));
  if (p.dev[0].hw_jpeg)
    check_parking(sample_file(""), 0, 15, 8, 10);
  else
    SKIP("parking: %s (it parks only beside the JPEG engine)", p.dev[0].hw_jpeg_why);
  return check_done();
}
