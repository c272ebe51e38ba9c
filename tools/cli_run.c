/* cli_run.c — drives a loader for `load` and `demo`: epochs, progress,
 * speed report, and an optional contact sheet of the first batch. */
#include "cli.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int save_grid(const char *path, const ferry_batch *b_in, const ferry_loader_options *o) {
  ferry_batch host = *b_in, *b = &host;
  int n = b->count < 64 ? b->count : 64, cols = n < 8 ? n : 8, rows = (n + cols - 1) / cols;
  if (n == 0)
    return FERRY_OK;
  void *copy = NULL;
  if (b->device >= 0) { /* a GPU batch: look at it through a host copy */
    copy = malloc(b->nbytes);
    if (!copy || fy_gpu_download(b->device, b->data, copy, b->nbytes) != FERRY_OK) {
      free(copy);
      return FERRY_EIO;
    }
    host.data = copy;
  }
  ferry_image im = {0};
  im.width = cols * b->width;
  im.height = rows * b->height;
  im.channels = 3;
  im.stride = (size_t)im.width * 3;
  im.data = calloc((size_t)im.height, im.stride);
  if (!im.data) {
    free(copy);
    return FERRY_ENOMEM;
  }
  size_t per = b->nbytes / (size_t)b->count, row = (size_t)b->width * 3;
  uint8_t *rgb = malloc(row * (size_t)b->height);
  if (!rgb) {
    free(im.data);
    free(copy);
    return FERRY_ENOMEM;
  }
  for (int k = 0; k < n; k++) {
    cli_sample_to_rgb((const uint8_t *)b->data + per * k, b->width, b->height, b->layout, b->dtype,
                      o->normalize, o->mean, o->std, rgb);
    int ox = (k % cols) * b->width, oy = (k / cols) * b->height;
    for (int y = 0; y < b->height; y++)
      memcpy(im.data + (size_t)(oy + y) * im.stride + (size_t)ox * 3, rgb + (size_t)y * row, row);
  }
  int rc = ferry_write_png(path, &im);
  free(rgb);
  free(im.data);
  free(copy);
  return rc;
}

static void progress(int epoch, int64_t done, int64_t total, double t) {
  fprintf(stderr, "\r  epoch %d: %lld/%lld images  %.0f img/s ", epoch, (long long)done,
          (long long)total, t > 0 ? done / t : 0.0);
  fflush(stderr);
}

static void report(int epoch, const ferry_stats *d, double secs, int workers) {
  double per = d->images ? 1e3 / d->images : 0;
  printf("epoch %d: %llu images, %llu skipped, %llu batches in %.2f s: %.0f images/s\n", epoch,
         (unsigned long long)d->images, (unsigned long long)d->skipped,
         (unsigned long long)d->batches, secs, secs > 0 ? d->images / secs : 0.0);
  printf("  per image (summed over %d workers): read %.3f ms, decode %.3f ms, "
         "transform %.3f ms; consumer waited %.2f s, workers idle %.2f s (summed)\n",
         workers, d->read_s * per, d->decode_s * per, d->transform_s * per, d->wait_s, d->idle_s);
  if (d->cached)
    printf("  %llu of %llu images served from the memory cache\n", (unsigned long long)d->cached,
           (unsigned long long)d->images);
  if (d->gpu_decoded)
    printf("  GPU JPEG engine decoded %llu of %llu images\n", (unsigned long long)d->gpu_decoded,
           (unsigned long long)d->images);
  printf("  peak RSS %.1f MiB\n", cli_peak_rss_mib());
}

static void diff_stats(const ferry_stats *a, const ferry_stats *b, ferry_stats *d) {
  d->read_s = a->read_s - b->read_s;
  d->decode_s = a->decode_s - b->decode_s;
  d->transform_s = a->transform_s - b->transform_s;
  d->wait_s = a->wait_s - b->wait_s;
  d->idle_s = a->idle_s - b->idle_s;
  d->images = a->images - b->images;
  d->skipped = a->skipped - b->skipped;
  d->batches = a->batches - b->batches;
  d->gpu_decoded = a->gpu_decoded - b->gpu_decoded;
  d->cached = a->cached - b->cached;
}

static int run_epoch(ferry_loader *L, cli_load_args *a, int e, int tty, int *grid_done) {
  double t0 = now(), last = t0;
  int64_t total = ferry_loader_epoch_size(L), done = 0;
  int rc = ferry_loader_start_epoch(L, e);
  ferry_batch *b;
  double t_first = 0;
  while (rc == FERRY_OK && (rc = ferry_loader_next(L, &b)) == FERRY_OK) {
    if (!t_first)
      t_first = now();
    done += b->count;
    if (a->save_grid && !*grid_done) {
      *grid_done = 1;
      if (save_grid(a->save_grid, b, &a->o) != FERRY_OK)
        fprintf(stderr, "ferry: %s\n", ferry_last_error());
      else if (!a->quiet)
        fprintf(stderr, "wrote %s (first batch)\n", a->save_grid);
    }
    if (a->consume_ms > 0 && b->device >= 0) { /* stand-in for the training step */
      if (!a->consumer_stream && getenv("FERRY_CONSUMER_STREAM"))
        a->consumer_stream = fy_gpu_stream_create(b->device);
      fy_gpu_busy(b->device, a->consume_ms, a->consumer_stream);
    }
    ferry_loader_release_on_stream(L, b, a->consumer_stream);
    double t = now();
    if (tty && t - last > 0.25) {
      progress(e, done, total, t - t0);
      last = t;
    }
  }
  if (tty)
    fprintf(stderr, "\r%60s\r", "");
  if (rc == FERRY_END && a->consume_ms > 0 && a->o.device >= 0) {
    /* The consumer's GPU timeline starts with the first batch (before it,
     * the ring fills: reported apart, as an epoch's start-up). */
    fy_gpu_sync(a->o.device);
    double wall = now() - t_first, busy = ferry_loader_num_batches(L) * a->consume_ms / 1e3;
    printf("  consumer: %.1f ms of GPU work per batch; first batch after %.1f ms; then busy "
           "%.1f%% of %.3f s, waited on ferry %.1f%%\n",
           a->consume_ms, (t_first - t0) * 1e3, 100 * busy / wall, wall,
           wall > busy ? 100 * (wall - busy) / wall : 0.0);
  }
  return rc == FERRY_END ? FERRY_OK : rc;
}

int cli_run_loader(const char *cmd, cli_load_args *a) {
  ferry_loader *L;
  int rc = ferry_loader_open(&a->o, &L);
  if (rc) {
    fprintf(stderr, "ferry %s: %s\n", cmd, ferry_last_error());
    return CLI_FAIL;
  }
  int workers = ferry_loader_num_workers(L);
  printf("source %s: %lld images, %d classes; this rank: %lld images in %lld batches of %d; "
         "%d workers%s\n",
         a->o.source, (long long)ferry_loader_source_size(L), ferry_loader_num_classes(L),
         (long long)ferry_loader_epoch_size(L), (long long)ferry_loader_num_batches(L),
         a->o.batch_size, workers, a->o.device >= 0 ? " + GPU" : "");
  int tty = !a->quiet && isatty(2);
  int grid_done = 0;
  ferry_stats prev = {0}, cur, d;
  for (int e = 0; e < a->epochs && rc == FERRY_OK; e++) {
    double t0 = now();
    rc = run_epoch(L, a, e, tty, &grid_done);
    ferry_loader_get_stats(L, &cur);
    diff_stats(&cur, &prev, &d);
    prev = cur;
    if (rc == FERRY_OK)
      report(e, &d, now() - t0, workers);
  }
  if (rc)
    fprintf(stderr, "ferry %s: %s\n", cmd, ferry_last_error());
  ferry_loader_close(L);
  if (ferry_loaders_abandoned()) {
    /* threads still blocked in the GPU driver: exit() would run nvJPEG's
     * destructors, which wait for their locks (seen in the GPU soak) */
    fflush(stdout);
    fflush(stderr);
    _exit(CLI_FAIL);
  }
  if (rc)
    return CLI_FAIL;
  return cur.skipped ? CLI_PARTIAL : CLI_OK;
}
