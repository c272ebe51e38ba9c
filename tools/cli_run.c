/* cli_run.c — drives a loader for `load` and `demo`: epochs, progress,
 * speed report, and an optional contact sheet of the first batch. */
#include "cli.h"
#include "cli_npy.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The first batch as a contact sheet; CLI_OK, or CLI_FAIL with the reason
 * printed. */
static int save_grid(const char *cmd, const char *path, const ferry_batch *b_in,
                     const ferry_loader_options *o) {
  ferry_batch host = *b_in, *b = &host;
  int n = b->count < 64 ? b->count : 64, cols = n < 8 ? n : 8, rows = (n + cols - 1) / cols;
  cli_image_kind kind;
  if (n == 0)
    return CLI_OK;
  if (cli_image_kind_of(cmd, "--save-grid", path, &kind))
    return CLI_FAIL;
  void *copy = NULL;
  if (b->device >= 0) { /* a GPU batch: look at it through a host copy */
    copy = malloc(b->nbytes);
    if (!copy || fy_gpu_download(b->device, b->data, copy, b->nbytes) != FERRY_OK) {
      fprintf(stderr, "ferry %s: %s: cannot copy the batch from the GPU: %s\n", cmd, path,
              copy ? ferry_last_error() : "out of memory");
      free(copy);
      return CLI_FAIL;
    }
    host.data = copy;
  }
  ferry_image im = {0};
  im.width = cols * b->width;
  im.height = rows * b->height;
  im.channels = 3;
  im.stride = (size_t)im.width * 3;
  im.data = calloc((size_t)im.height, im.stride);
  size_t per = b->nbytes / (size_t)b->count, row = (size_t)b->width * 3;
  uint8_t *rgb = im.data ? malloc(row * (size_t)b->height) : NULL;
  if (!rgb) {
    free(im.data);
    free(copy);
    fprintf(stderr, "ferry %s: %s: out of memory\n", cmd, path);
    return CLI_FAIL;
  }
  for (int k = 0; k < n; k++) {
    cli_sample_to_rgb((const uint8_t *)b->data + per * k, b->width, b->height, b->layout, b->dtype,
                      o->normalize, o->mean, o->std, rgb);
    int ox = (k % cols) * b->width, oy = (k / cols) * b->height;
    for (int y = 0; y < b->height; y++)
      memcpy(im.data + (size_t)(oy + y) * im.stride + (size_t)ox * 3, rgb + (size_t)y * row, row);
  }
  int rc = cli_write_image(cmd, path, kind, &im, CLI_JPEG_QUALITY);
  free(rgb);
  free(im.data);
  free(copy);
  return rc;
}

/* The first batch kept for the contact sheet: a host copy, written only after the
 * timed epochs (its PNG or JPEG encoding inside an epoch's timing, with the next
 * epoch made meanwhile, made the figures of `ferry demo` lie). NULL when out of
 * memory or the GPU copy failed (said once). */
static ferry_batch *keep_batch(const char *cmd, const char *path, const ferry_batch *b) {
  ferry_batch *k = malloc(sizeof *k);
  void *data = k ? malloc(b->nbytes ? b->nbytes : 1) : NULL;
  int32_t *labels = data ? malloc(sizeof *labels * (size_t)(b->count ? b->count : 1)) : NULL;
  if (!labels) {
    fprintf(stderr, "ferry %s: %s: out of memory\n", cmd, path);
    free(data), free(k);
    return NULL;
  }
  *k = *b;
  if (b->device >= 0) {
    if (fy_gpu_download(b->device, b->data, data, b->nbytes) != FERRY_OK) {
      fprintf(stderr, "ferry %s: %s: cannot copy the batch from the GPU: %s\n", cmd, path,
              ferry_last_error());
      free(labels), free(data), free(k);
      return NULL;
    }
  } else {
    memcpy(data, b->data, b->nbytes);
  }
  if (b->labels)
    memcpy(labels, b->labels, sizeof *labels * (size_t)b->count);
  k->data = data;
  k->labels = b->labels ? labels : NULL;
  k->indices = NULL;
  k->device = -1;
  if (!b->labels)
    free(labels);
  return k;
}

static void free_kept(ferry_batch *k) {
  if (k) {
    free(k->data);
    free(k->labels);
    free(k);
  }
}

static void progress(int epoch, int64_t done, int64_t total, double t) {
  fprintf(stderr, "\r  epoch %d: %lld/%lld images  %.0f img/s ", epoch, (long long)done,
          (long long)total, t > 0 ? done / t : 0.0);
  fflush(stderr);
}

/* --consume-ms: how the stand-in consumer's GPU timeline went in an epoch. */
typedef struct consumer_report {
  int have;
  double first_ms, busy_pct, wall_s, waited_pct;
} consumer_report;

static void report_json(cli_json *j, int epoch, const ferry_stats *d, double secs,
                        const consumer_report *cr, double consume_ms) {
  double per = d->images ? 1e3 / d->images : 0;
  cli_json_object(j, NULL);
  cli_json_int(j, "epoch", epoch);
  cli_json_int(j, "images", (long long)d->images);
  cli_json_int(j, "skipped", (long long)d->skipped);
  cli_json_int(j, "batches", (long long)d->batches);
  cli_json_num(j, "seconds", secs);
  cli_json_num(j, "images_per_s", secs > 0 ? d->images / secs : 0.0);
  cli_json_object(j, "per_image_ms"); /* summed over workers */
  cli_json_num(j, "read", d->read_s * per);
  cli_json_num(j, "decode", d->decode_s * per);
  cli_json_num(j, "transform", d->transform_s * per);
  cli_json_close(j);
  cli_json_num(j, "consumer_waited_s", d->wait_s);
  cli_json_num(j, "workers_idle_s", d->idle_s);
  cli_json_int(j, "cached", (long long)d->cached);
  cli_json_int(j, "gpu_decoded", (long long)d->gpu_decoded);
  cli_json_int(j, "gpu_chunks", (long long)d->gpu_chunks);
  cli_json_num(j, "gpu_call_s", d->gpu_call_s);
  cli_json_num(j, "peak_rss_mib", cli_peak_rss_mib());
  if (cr->have) {
    cli_json_object(j, "consumer");
    cli_json_num(j, "gpu_work_ms_per_batch", consume_ms);
    cli_json_num(j, "first_batch_ms", cr->first_ms);
    cli_json_num(j, "busy_percent", cr->busy_pct);
    cli_json_num(j, "seconds", cr->wall_s);
    cli_json_num(j, "waited_percent", cr->waited_pct);
    cli_json_close(j);
  }
  cli_json_close(j);
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
    printf("  GPU JPEG engine decoded %llu of %llu images in %llu chunks (%.1f a chunk, "
           "%.2f ms in the engine each)\n",
           (unsigned long long)d->gpu_decoded, (unsigned long long)d->images,
           (unsigned long long)d->gpu_chunks,
           d->gpu_chunks ? (double)d->gpu_decoded / (double)d->gpu_chunks : 0.0,
           d->gpu_chunks ? 1e3 * d->gpu_call_s / (double)d->gpu_chunks : 0.0);
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
  d->gpu_chunks = a->gpu_chunks - b->gpu_chunks;
  d->gpu_call_s = a->gpu_call_s - b->gpu_call_s;
  d->cached = a->cached - b->cached;
}

static int run_epoch(const char *cmd, ferry_loader *L, cli_load_args *a, int e, int tty,
                     int *grid_done, ferry_batch **grid, consumer_report *cr, int64_t *delivered,
                     int64_t *nbatches) {
  double t0 = now(), last = t0;
  int64_t total = ferry_loader_epoch_size(L), done = 0, batches = 0;
  int rc = ferry_loader_start_epoch(L, e);
  ferry_batch *b;
  double t_first = 0;
  int sizes = a->batch_sizes && !a->json; /* --json's stdout is its one object */
  if (sizes)
    printf("epoch %d batches:", e);
  while (rc == FERRY_OK && (rc = ferry_loader_next(L, &b)) == FERRY_OK) {
    if (!t_first)
      t_first = now();
    if (sizes)
      printf(" %d", b->count);
    done += b->count;
    batches++;
    if (a->npy)
      cli_npy_write(a->npy, b); /* a write error is said once, at the end */
    if (a->save_grid && !*grid_done) {
      *grid_done = 1;
      *grid = keep_batch(cmd, a->save_grid, b);
    }
    if (a->consume_ms > 0 && b->device >= 0) /* stand-in for the training step */
      fy_gpu_busy(b->device, a->consume_ms, NULL);
    ferry_loader_release(L, b);
    double t = now();
    if (tty && t - last > 0.25) {
      progress(e, done, total, t - t0);
      last = t;
    }
  }
  if (sizes)
    printf("\n");
  if (tty)
    fprintf(stderr, "\r%60s\r", "");
  *delivered = done;
  *nbatches = batches;
  if (rc == FERRY_END && a->consume_ms > 0 && a->o.device >= 0) {
    /* The consumer's GPU timeline starts with the first batch (before it,
     * the ring fills: reported apart, as an epoch's start-up). */
    fy_gpu_sync(a->o.device);
    double wall = now() - t_first, busy = batches * a->consume_ms / 1e3;
    *cr = (consumer_report){1, (t_first - t0) * 1e3, 100 * busy / wall, wall,
                            wall > busy ? 100 * (wall - busy) / wall : 0.0};
    if (!a->json)
      printf("  consumer: %.1f ms of GPU work per batch; first batch after %.1f ms; then busy "
             "%.1f%% of %.3f s, waited on ferry %.1f%%\n",
             a->consume_ms, cr->first_ms, cr->busy_pct, cr->wall_s, cr->waited_pct);
  }
  return rc == FERRY_END ? FERRY_OK : rc;
}

/* --json: the files skipped, as the loader reports them (serialised). */
typedef struct skip_list {
  char **path, **msg;
  size_t n, cap;
} skip_list;

static void on_skip(void *user, const char *path, int status, const char *msg) {
  (void)status;
  skip_list *s = user;
  /* said on stderr as the library says it without a callback */
  fprintf(stderr, "ferry: skipped %s\n", msg && *msg ? msg : path);
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    char **p = realloc(s->path, cap * sizeof *p), **m = p ? realloc(s->msg, cap * sizeof *m) : NULL;
    if (p)
      s->path = p;
    if (!m)
      return; /* the list is short of this one; stderr has it */
    s->msg = m;
    s->cap = cap;
  }
  s->path[s->n] = strdup(path ? path : "");
  s->msg[s->n] = strdup(msg ? msg : "");
  s->n++;
}

/* The library's message, the temporary list of `ferry load -` named as
 * the user knows it. */
static void print_error(const char *cmd, const cli_load_args *a) {
  const char *msg = ferry_last_error(), *t = a->unlink_after ? strstr(msg, a->unlink_after) : NULL;
  if (t)
    fprintf(stderr, "ferry %s: %.*s%s%s\n", cmd, (int)(t - msg), msg, a->source_name,
            t + strlen(a->unlink_after));
  else
    fprintf(stderr, "ferry %s: %s\n", cmd, msg);
}

/* One output against the run's inputs (fy_out_guard, the one rule): the
 * source (folder, list file or pack) and, when the output exists as a
 * file, every sample's file (a list names files anywhere). CLI_OK, else
 * CLI_USAGE, said. */
static int output_not_input(const char *cmd, const ferry_loader *L, const char *source,
                            const char *out) {
  if (!out)
    return CLI_OK;
  if (fy_out_guard(out, source) != FERRY_OK)
    return cli_usage_error(cmd, "%s", ferry_last_error());
  struct stat st;
  if (stat(out, &st) != 0 || !S_ISREG(st.st_mode))
    return CLI_OK; /* nothing there yet: no input can be that file */
  for (int64_t i = 0, n = ferry_loader_source_size(L); i < n; i++) {
    const char *p = ferry_loader_path(L, i);
    if (p && fy_out_guard(out, p) != FERRY_OK)
      return cli_usage_error(cmd, "%s", ferry_last_error());
  }
  return CLI_OK;
}

/* --save-grid, --save and its labels file: none may be an input. */
static int outputs_not_inputs(const char *cmd, const ferry_loader *L, const cli_load_args *a) {
  char *labels = a->save_npy ? cli_npy_labels_path(a->save_npy) : NULL;
  int rc = output_not_input(cmd, L, a->o.source, a->save_grid);
  if (!rc)
    rc = output_not_input(cmd, L, a->o.source, a->save_npy);
  if (!rc)
    rc = output_not_input(cmd, L, a->o.source, labels);
  free(labels);
  return rc;
}

int cli_run_loader(const char *cmd, cli_load_args *a) {
  ferry_loader *L;
  skip_list skips = {0};
  if (a->json) {
    a->o.on_skip = on_skip;
    a->o.on_skip_user = &skips;
  }
  /* One epoch: nothing to start ahead (the last epoch of several makes at most a ring of
   * samples that no epoch takes) */
  if (a->epochs == 1)
    a->o.epoch_ahead = 0;
  int rc = ferry_loader_open(&a->o, &L);
  if (a->unlink_after) /* the list is read: its temporary copy can go */
    unlink(a->unlink_after);
  const char *name = a->source_name ? a->source_name : a->o.source;
  if (rc) {
    print_error(cmd, a);
    return CLI_FAIL;
  }
  if (outputs_not_inputs(cmd, L, a)) { /* before a byte is written */
    ferry_loader_close(L);
    return CLI_USAGE;
  }
  int workers = ferry_loader_num_workers(L);
  char numa_cpus[512]; /* where the threads run: near the GPU (--numa) */
  int numa_node = ferry_loader_numa(L, numa_cpus, sizeof numa_cpus);
  cli_json j;
  char device[24];
  fy_hash_device_name(a->o.device, device);
  if (a->json) {
    cli_json_begin(&j, stdout);
    cli_json_str(&j, "command", cmd);
    cli_json_path(&j, "source", name);
    cli_json_int(&j, "source_images", (long long)ferry_loader_source_size(L));
    cli_json_int(&j, "classes", ferry_loader_num_classes(L));
    cli_json_int(&j, "rank_images", (long long)ferry_loader_epoch_size(L));
    cli_json_int(&j, "batches_per_epoch", (long long)ferry_loader_num_batches(L));
    cli_json_int(&j, "batch_size", a->o.batch_size);
    cli_json_int(&j, "width", a->o.width);
    cli_json_int(&j, "height", a->o.height);
    cli_json_int(&j, "workers", workers);
    cli_json_str(&j, "device", device);
    cli_json_int(&j, "numa_node", numa_node);
    cli_json_str(&j, "numa_cpus", numa_node >= 0 ? numa_cpus : NULL);
    cli_json_array(&j, "epochs");
  } else {
    printf("source %s: %lld images, %d classes; this rank: %lld images in %lld batches of %d; "
           "%d workers%s\n",
           name, (long long)ferry_loader_source_size(L), ferry_loader_num_classes(L),
           (long long)ferry_loader_epoch_size(L), (long long)ferry_loader_num_batches(L),
           a->o.batch_size, workers, a->o.device >= 0 ? " + GPU" : "");
    if (numa_node >= 0)
      printf("threads on the GPU's NUMA node %d: CPUs %s\n", numa_node, numa_cpus);
  }
  if (a->save_npy &&
      !(a->npy = cli_npy_open(cmd, a->save_npy, &a->o, ferry_loader_epoch_size(L)))) {
    if (a->json)
      cli_json_drop(&j);
    ferry_loader_close(L);
    return CLI_FAIL;
  }
  int tty = !a->quiet && isatty(2);
  int grid_done = 0;
  ferry_batch *grid = NULL; /* the first batch, written after the timed epochs */
  ferry_stats prev = {0}, cur = {0}, d;
  uint64_t images = 0, skipped = 0; /* given and left out, all epochs */
  double total_s = 0;
  for (int e = 0; e < a->epochs && rc == FERRY_OK; e++) {
    double t0 = now();
    consumer_report cr = {0};
    int64_t got = 0, nb = 0;
    rc = run_epoch(cmd, L, a, e, tty, &grid_done, &grid, &cr, &got, &nb);
    ferry_loader_get_stats(L, &cur);
    diff_stats(&cur, &prev, &d);
    prev = cur;
    /* the images this epoch gave and the files it left out (the loader's own counters also
     * hold the next epoch's first batches, made ahead) */
    d.images = (uint64_t)got;
    d.skipped = (uint64_t)(ferry_loader_epoch_size(L) - got);
    d.batches = (uint64_t)nb; /* those given: fewer than planned when files are skipped */
    images += d.images;
    skipped += d.skipped;
    double secs = now() - t0;
    total_s += secs;
    if (rc == FERRY_OK && a->json)
      report_json(&j, e, &d, secs, &cr, a->consume_ms);
    else if (rc == FERRY_OK)
      report(e, &d, secs, workers);
  }
  char error[1024] = "";
  if (rc) {
    snprintf(error, sizeof error, "%s", ferry_last_error());
    print_error(cmd, a);
  }
  ferry_loader_close(L);
  if (rc == FERRY_OK && !a->json && a->epochs > 1 && total_s > 0)
    printf("%d epochs: %llu images in %.2f s: %.0f images/s\n", a->epochs,
           (unsigned long long)images, total_s, images / total_s);
  if (grid && save_grid(cmd, a->save_grid, grid, &a->o) == CLI_OK && !a->quiet)
    fprintf(stderr, "wrote %s (first batch)\n", a->save_grid);
  free_kept(grid);
  int abandoned = ferry_loaders_abandoned();
  int saved = CLI_OK;
  if (a->npy && rc) /* a failed run keeps nothing */
    cli_npy_abort(a->npy);
  else if (a->npy)
    saved = cli_npy_close(cmd, a->npy);
  a->npy = NULL;
  int code = rc || abandoned || saved ? CLI_FAIL : skipped ? CLI_PARTIAL : CLI_OK;
  if (a->json) {
    cli_json_close(&j); /* epochs */
    cli_json_int(&j, "images", (long long)images);
    cli_json_int(&j, "skipped", (long long)skipped);
    cli_json_array(&j, "skipped_files");
    for (size_t i = 0; i < skips.n; i++) {
      cli_json_object(&j, NULL);
      cli_json_path(&j, "path", skips.path[i]);
      cli_json_str(&j, "error", skips.msg[i]);
      cli_json_close(&j);
    }
    cli_json_close(&j);
    cli_json_num(&j, "seconds", total_s);
    cli_json_num(&j, "images_per_s", total_s > 0 ? images / total_s : 0.0);
    cli_json_num(&j, "peak_rss_mib", cli_peak_rss_mib());
    cli_json_str(&j, "error", rc ? error : NULL);
    cli_json_int(&j, "exit_code", code);
    if (cli_json_end(&j) != CLI_OK)
      code = CLI_FAIL;
  }
  for (size_t i = 0; i < skips.n; i++)
    free(skips.path[i]), free(skips.msg[i]);
  free(skips.path);
  free(skips.msg);
  if (abandoned) {
    /* threads still blocked in the GPU driver: exit() would run nvJPEG's
     * destructors, which wait for their locks (seen in the GPU soak) */
    fflush(stdout);
    fflush(stderr);
    _exit(CLI_FAIL);
  }
  return code;
}
