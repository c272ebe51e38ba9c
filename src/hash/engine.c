/* engine.c — fast-mode hashing on the GPU's JPEG engine (see engine.h).
 *
 * Each engine thread owns one decoder context of a shared fy_gpu (nvJPEG's
 * hardware backend), one fy_gpu_hasher (its own stream) and a grow-only
 * device buffer for the decoded luma planes. Per chunk: read the files,
 * keep those the engine accepts (structure checked first: damaged JPEGs
 * never reach it), decode them in groups that fit the buffer, hash each
 * group on the GPU, hand every result to the feed. Everything else, and
 * every group the engine or the kernels fail on, is hashed on the CPU in
 * fast mode by the same thread, so a file always gets an answer. */
#include "hash/engine.h"

#include "codec/codec.h"
#include "core/testctl.h"
#include "cuda/gpu.h"
#include "cuda/hash_gpu.h"
#include "hash/hash.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS FY_GPU_MAX_ENGINES
#define CHUNK 16 /* files an engine thread claims at once */
/* 2 threads made 1,459-1,465 photos/s against 1,536-1,576 with 3 (H100, set with
 * FERRY_HASH_ENGINES, since removed; bench/RESULTS.md at b42142f in git history) */
#define DEFAULT_THREADS 3
#define GROUP_BYTES ((size_t)512 << 20) /* decoded pixels per engine call */

struct fy_hash_engine;

typedef struct engine_thread {
  struct fy_hash_engine *e;
  int index;
  pthread_t tid;
  int started;
} engine_thread;

struct fy_hash_engine {
  ferry_hash_options o;
  fy_engine_feed feed;
  int device, nthreads;
  fy_gpu *gpu;
  engine_thread t[MAX_THREADS];
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int first_claims; /* threads past their first claim */
  fy_engine_stats stats;
  int warned, rgb;
  double t_read, t_decode, t_hash, t_cpu; /* seconds, all threads (a debug line at the end) */
  double t_open, t_start;
};

static void add_time(struct fy_hash_engine *e, double *sum, double t0) {
  double dt = fy_now() - t0;
  pthread_mutex_lock(&e->mu);
  *sum += dt;
  pthread_mutex_unlock(&e->mu);
}

/* One chunk's files. */
typedef struct chunk {
  size_t n, ids[CHUNK];
  fy_buf file[CHUNK];
  size_t len[CHUNK];
  int w[CHUNK], h[CHUNK];
  fy_buf grids; /* the signatures' grids (FERRY_HASH_SIGNATURE) */
} chunk;

static void warn_once(struct fy_hash_engine *e, const char *what) {
  pthread_mutex_lock(&e->mu);
  int first = !e->warned;
  e->warned = 1;
  pthread_mutex_unlock(&e->mu);
  if (first)
    fy_log(FERRY_LOG_WARNING, "GPU JPEG engine: %s; the CPU hashes what it could not", what);
}

static void count(struct fy_hash_engine *e, size_t engine, size_t cpu) {
  pthread_mutex_lock(&e->mu);
  e->stats.engine += engine;
  e->stats.cpu += cpu;
  pthread_mutex_unlock(&e->mu);
}

/* Fast mode on the CPU, for file k of the chunk (already read). */
static void on_cpu(struct fy_hash_engine *e, ferry_hasher *h, int hrc, chunk *c, size_t k) {
  double t0 = fy_now();
  ferry_hash_result r;
  memset(&r, 0, sizeof r);
  const char *path = e->feed.path(e->feed.user, c->ids[k]);
  int rc = hrc ? hrc : ferry_hash_memory(h, c->file[k].p, c->len[k], path, &r);
  e->feed.done(e->feed.user, c->ids[k], rc, &r, rc ? ferry_last_error() : NULL, 0);
  count(e, 0, 1);
  add_time(e, &e->t_cpu, t0);
}

/* Whether the engine takes file k: a colour JPEG (structure intact) that
 * nvJPEG's hardware backend accepts, within the pixel limit. */
static int engine_wants(struct fy_hash_engine *e, int engine, chunk *c, size_t k) {
  const uint8_t *d = c->file[k].p;
  size_t n = c->len[k];
  if (fy_sniff(d, n) != FERRY_FORMAT_JPEG || !fy_jpeg_structure_ok(d, n))
    return 0;
  if (!fy_gpu_jpeg_check(e->gpu, engine, d, n, &c->w[k], &c->h[k])) /* 3 components */
    return 0;
  uint64_t px = (uint64_t)c->w[k] * (uint64_t)c->h[k];
  size_t bpp = e->rgb ? 3 : 1;
  return px > 0 && px * bpp <= GROUP_BYTES &&
         !fy_over_pixel_limit((uint64_t)c->w[k], (uint64_t)c->h[k], e->o.max_pixels);
}

typedef struct devbuf {
  void *p;
  size_t cap;
} devbuf;

static int devbuf_reserve(struct fy_hash_engine *e, devbuf *b, size_t n) {
  if (n <= b->cap)
    return FERRY_OK;
  fy_gpu_hash_device_free(e->device, b->p);
  b->p = NULL;
  b->cap = 0;
  n += n / 4; /* chunks vary: grow with room, not at every chunk */
  int rc = fy_gpu_hash_device_alloc(e->device, n, &b->p);
  if (rc == FERRY_OK)
    b->cap = n;
  return rc;
}

static size_t aligned(size_t n) { return (n + 255) & ~(size_t)255; }

/* The signatures of the m decoded images: their grids from the GPU, the
 * rest of signature.c on this thread (a fraction of a millisecond each). */
static int signatures(fy_gpu_hasher *gh, ferry_hasher *h, int hrc, chunk *c,
                      const fy_gpu_hash_image *im, int m, ferry_hash_result *res) {
  enum { G = FY_SIG_GRID };
  if (hrc)
    return hrc;
  int rc = fy_buf_reserve(&c->grids, (size_t)m * G * G * sizeof(float));
  if (rc)
    return fy_error(rc, "hash engine: out of memory for signature grids");
  if ((rc = fy_gpu_hasher_grids(gh, im, m, G, c->grids.p)) != FERRY_OK)
    return rc;
  for (int i = 0; i < m && !rc; i++) {
    fy_fimage img = {(const float *)c->grids.p + (size_t)i * G * G, G, G, {0, 0, G, G}};
    rc = fy_signature(&h->c, &img, &res[i].signature);
    res[i].kinds |= FERRY_HASH_SIGNATURE;
  }
  return rc;
}

/* Decodes and hashes files sel[0..m) of the chunk (accepted by the engine,
 * together within GROUP_BYTES); on failure the CPU takes them. */
static void run_group(struct fy_hash_engine *e, int engine, fy_gpu_hasher *gh, fy_gpu_colorer *gc,
                      devbuf *buf, ferry_hasher *h, int hrc, chunk *c, const size_t *sel, int m) {
  const uint8_t *data[CHUNK];
  size_t len[CHUNK];
  int pitch[CHUNK];
  uint8_t *dst[CHUNK];
  fy_gpu_hash_image im[CHUNK];
  ferry_hash_result res[CHUNK];
  size_t total = 0, bpp = e->rgb ? 3 : 1;
  for (int i = 0; i < m; i++)
    total += aligned((size_t)c->w[sel[i]] * c->h[sel[i]] * bpp);
  int rc = devbuf_reserve(e, buf, total);
  size_t off = 0;
  for (int i = 0; i < m && !rc; i++) {
    size_t k = sel[i];
    data[i] = c->file[k].p;
    len[i] = c->len[k];
    pitch[i] = c->w[k] * (int)bpp;
    dst[i] = (uint8_t *)buf->p + off;
    off += aligned((size_t)c->w[k] * c->h[k] * bpp);
    im[i] = (fy_gpu_hash_image){dst[i], c->w[k], c->h[k], (int)bpp, (size_t)pitch[i]};
  }
  double t0 = fy_now();
  if (!rc)
    rc = fy_gpu_jpeg_decode_ex(e->gpu, engine, data, len, pitch, dst, m, !e->rgb);
  add_time(e, &e->t_decode, t0);
  t0 = fy_now();
  memset(res, 0, sizeof(ferry_hash_result) * (size_t)m);
  if (!rc)
    rc = fy_gpu_hasher_run(gh, im, m, e->o.kinds, e->o.hash_size, res);
  fy_color_counts counts[CHUNK];
  if (!rc && gc)
    rc = fy_gpu_color_counts(gc, im, m, counts);
  if (!rc && (e->o.kinds & FERRY_HASH_SIGNATURE))
    rc = signatures(gh, h, hrc, c, im, m, res);
  add_time(e, &e->t_hash, t0);
  if (rc) {
    char why[300];
    snprintf(why, sizeof why, "%s", ferry_last_error());
    warn_once(e, why);
    for (int i = 0; i < m; i++)
      on_cpu(e, h, hrc, c, sel[i]);
    return;
  }
  for (int i = 0; i < m; i++) {
    if (gc) {
      fy_colorhash_bits(&counts[i], e->o.colorhash_bits, &res[i].hash[FERRY_HASH_COLORHASH]);
      res[i].kinds |= FERRY_HASH_MASK(FERRY_HASH_COLORHASH);
    }
    res[i].width = c->w[sel[i]];
    res[i].height = c->h[sel[i]];
    res[i].format = FERRY_FORMAT_JPEG;
    res[i].exact = 0; /* fast mode: the engine's luma, not Pillow's pixels */
    e->feed.done(e->feed.user, c->ids[sel[i]], FERRY_OK, &res[i], NULL, 1);
  }
  count(e, (size_t)m, 0);
}

static void *engine_main(void *arg) {
  engine_thread *t = arg;
  struct fy_hash_engine *e = t->e;
  ferry_hasher *h = NULL;
  fy_gpu_hasher *gh = NULL;
  fy_gpu_colorer *gc = NULL;
  int hrc = ferry_hasher_new(&e->o, &h), grc = -1; /* GPU contexts: after the first claim */
  chunk *c = calloc(1, sizeof *c);
  devbuf buf = {NULL, 0};
  size_t sel[CHUNK];
  for (int first = 1;; first = 0) {
    size_t got = c ? e->feed.claim(e->feed.user, CHUNK, c->ids) : 0;
    if (first) { /* fy_hash_engine_start may wait for every thread's first claim */
      pthread_mutex_lock(&e->mu);
      e->first_claims++;
      pthread_cond_broadcast(&e->cv);
      pthread_mutex_unlock(&e->mu);
    }
    if (!got)
      break;
    c->n = got;
    if (grc < 0) {
      grc = fy_gpu_hasher_new(e->device, &gh);
      if (!grc && (e->o.kinds & FERRY_HASH_MASK(FERRY_HASH_COLORHASH)))
        grc = fy_gpu_colorer_new(e->device, &gc);
      if (grc)
        warn_once(e, ferry_last_error());
    }
    int m = 0;
    double t0 = fy_now();
    for (size_t k = 0; k < c->n; k++) {
      const char *path = e->feed.path(e->feed.user, c->ids[k]);
      int rc = fy_read_file(path, e->o.max_bytes, &c->file[k], &c->len[k]);
      if (rc) {
        ferry_hash_result none;
        memset(&none, 0, sizeof none);
        e->feed.done(e->feed.user, c->ids[k], rc, &none, ferry_last_error(), 0);
        count(e, 0, 1);
      } else if (!grc && engine_wants(e, t->index, c, k)) {
        sel[m++] = k;
      } else {
        on_cpu(e, h, hrc, c, k);
      }
    }
    add_time(e, &e->t_read, t0);
    size_t bpp = e->rgb ? 3 : 1;
    for (int i = 0; i < m;) { /* groups that fit the device buffer */
      int j = i;
      size_t bytes = 0;
      while (j < m &&
             (j == i || bytes + aligned((size_t)c->w[sel[j]] * c->h[sel[j]] * bpp) <= GROUP_BYTES))
        bytes += aligned((size_t)c->w[sel[j]] * c->h[sel[j]] * bpp), j++;
      run_group(e, t->index, gh, gc, &buf, h, hrc, c, sel + i, j - i);
      i = j;
    }
    pthread_mutex_lock(&e->mu);
    e->stats.chunks++;
    pthread_mutex_unlock(&e->mu);
  }
  if (c) {
    for (int k = 0; k < CHUNK; k++)
      fy_buf_free(&c->file[k]);
    fy_buf_free(&c->grids);
  }
  free(c);
  fy_gpu_hash_device_free(e->device, buf.p);
  fy_gpu_colorer_free(gc);
  fy_gpu_hasher_free(gh);
  ferry_hasher_free(h);
  return NULL;
}

int fy_hash_engine_start(int device, const ferry_hash_options *o, int threads,
                         const fy_engine_feed *feed, fy_hash_engine **out) {
  *out = NULL;
  if (o->mode != FERRY_HASH_FAST)
    return fy_error(FERRY_EINVAL, "the JPEG engine computes fast mode's hashes");
  int rc = fy_gpu_hash_available(device);
  if (rc)
    return rc;
  if (threads <= 0)
    threads = DEFAULT_THREADS;
  if (threads > MAX_THREADS)
    threads = MAX_THREADS;
  struct fy_hash_engine *e = calloc(1, sizeof *e);
  if (!e)
    return fy_error(FERRY_ENOMEM, "out of memory");
  e->o = *o;
  e->feed = *feed;
  e->device = device;
  /* RGB output when colorhash needs colours (L is then made on the GPU);
   * luma only otherwise, a third of the bytes. */
  e->rgb = (o->kinds & FERRY_HASH_MASK(FERRY_HASH_COLORHASH)) != 0;
  fy_gpu_params p = {.device = device,
                     .nslots = 1,
                     .batch = 1,
                     .width = 1,
                     .height = 1,
                     .layout = FERRY_LAYOUT_HWC,
                     .dtype = FERRY_U8,
                     .arena_bytes = 256,
                     .temp_bytes = 256,
                     .table_entries = 16,
                     .hw_decode = 1,
                     .decoders = threads,
                     .no_staging = 1};
  double t0 = fy_now();
  rc = fy_gpu_open(&p, &e->gpu);
  e->t_open = fy_now() - t0;
  e->t_start = fy_now();
  if (!rc && !fy_gpu_hw_decode(e->gpu))
    rc = fy_error(FERRY_EUNSUPPORTED, "cuda:%d has no hardware JPEG decoder that nvJPEG can use",
                  device);
  if (rc) {
    fy_gpu_close(e->gpu);
    free(e);
    return rc;
  }
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  for (int i = 0; i < threads; i++) {
    e->t[i] = (engine_thread){e, i, 0, 0};
    e->t[i].started = pthread_create(&e->t[i].tid, NULL, engine_main, &e->t[i]) == 0;
    e->nthreads += e->t[i].started;
  }
  if (!e->nthreads) {
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    fy_gpu_close(e->gpu);
    free(e);
    return fy_error(FERRY_ENOMEM, "cannot start a JPEG engine thread");
  }
  /* the test control FERRY_HASH_ENGINE_FIRST: the caller's CPU threads
   * start only once every engine thread holds its first chunk */
  long first = 0;
  if (fy_tc_long(FY_TC_HASH_ENGINE_FIRST, &first) && first) {
    pthread_mutex_lock(&e->mu);
    while (e->first_claims < e->nthreads)
      pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
  }
  *out = e;
  return FERRY_OK;
}

void fy_hash_engine_finish(fy_hash_engine *e, fy_engine_stats *stats) {
  if (!e)
    return;
  for (int i = 0; i < MAX_THREADS; i++)
    if (e->t[i].started)
      pthread_join(e->t[i].tid, NULL);
  double t_run = fy_now() - e->t_start, t0 = fy_now();
  if (stats)
    *stats = e->stats;
  pthread_cond_destroy(&e->cv);
  pthread_mutex_destroy(&e->mu);
  fy_gpu_close(e->gpu);
  fy_log(FERRY_LOG_DEBUG,
         "JPEG engine: %zu chunks, %zu files decoded, %zu on the CPU; seconds: open "
         "%.2f, threads %.2f, close %.2f; thread seconds: read+check %.2f (CPU fallback "
         "%.2f), decode %.2f, hash %.2f",
         e->stats.chunks, e->stats.engine, e->stats.cpu, e->t_open, t_run, fy_now() - t0, e->t_read,
         e->t_cpu, e->t_decode, e->t_hash);
  free(e);
}
