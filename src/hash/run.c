/* run.c — the one hashing driver (run.h). CPU threads take items one at a
 * time from a shared counter; in compatible mode on a GPU they stop at the
 * pixels and a fy_gpu_hash_queue hashes them in batches (the CPU's part of
 * each result, size, format and colorhash, waits here for the GPU's); in
 * fast mode on a GPU the JPEG engine's threads claim chunks from the same
 * counter. What is claimed by the engine or sent to the GPU is counted in
 * flight under the lock until answered, so that fy_hash_run_idle never
 * says done while an answer can still come. */
#include "hash/run.h"

#include "core/numa.h"
#include "core/testctl.h"
#include "cuda/hash_gpu.h"
#include "hash/engine.h"
#include "hash/hash.h"
#include "opencl/opencl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 1024

struct fy_hash_run {
  const ferry_hash_options *o;
  size_t n;
  fy_hash_sink sink;
  atomic_size_t next;
  pthread_mutex_t mu;
  int alive;               /* CPU threads still taking items */
  size_t inflight;         /* claimed by the engine or queued on the GPU, not answered */
  fy_gpu_hash_queue *gpu;  /* compatible mode on a GPU */
  ferry_hash_result *part; /* its CPU part of each result, until the GPU's joins it */
  fy_hash_engine *engine;  /* fast mode on a GPU */
  pthread_t starter;       /* decides when the engine starts (engine_starter) */
  int starter_started, device;
  double engine_min_s;
  pthread_t *tid;
  int started;
  char note[256];
};

static void flight(fy_hash_run *r, long d) {
  pthread_mutex_lock(&r->mu);
  r->inflight += (size_t)d;
  pthread_mutex_unlock(&r->mu);
}

/* ------------------------------------------ compatible mode on a GPU */

/* From the queue's thread: the GPU's hashes join the CPU's part. */
static void gpu_done(void *user, size_t k, int status, const ferry_hash_result *g,
                     const char *error) {
  fy_hash_run *r = user;
  ferry_hash_result *out = &r->part[k];
  if (!status) {
    for (int i = 0; i < FERRY_HASH_KIND_COUNT; i++)
      if (g->kinds & FERRY_HASH_MASK(i))
        out->hash[i] = g->hash[i];
    out->kinds |= g->kinds;
  }
  r->sink.done(r->sink.user, k, status, out,
               status ? (error ? error : "GPU hashing failed") : NULL);
  flight(r, -1);
}

/* Compatible mode's decode here, the pixels to the queue (copied):
 * FERRY_OK when item k went to the GPU, else its outcome is in hr. */
static int gpu_submit(fy_hash_run *r, fy_hash_ctx *c, size_t k, const char *path,
                      ferry_hash_result *hr) {
  fy_compat_image im;
  int rc = fy_compat_decode_file(c, r->o, path, hr, &im);
  if (!rc && (r->o->kinds & FERRY_HASH_SIGNATURE)) { /* on this thread: small work */
    rc = fy_signature_u8(c, im.p, im.w, im.h, im.stride, im.channels, &hr->signature);
    hr->kinds |= FERRY_HASH_SIGNATURE;
  }
  if (rc)
    return rc;
  r->part[k] = *hr; /* size, format, colorhash, signature */
  flight(r, 1);
  rc = fy_gpu_hash_queue_submit(r->gpu, k,
                                &(fy_gpu_hash_image){im.p, im.w, im.h, im.channels, im.stride});
  if (rc)
    flight(r, -1);
  return rc;
}

/* --------------------------------------------------------- CPU threads */

static void *worker(void *arg) {
  fy_hash_run *r = arg;
  ferry_hasher *h = NULL;
  fy_hash_ctx *c = NULL; /* GPU: the decoding scratch */
  int rc0;
  if (r->gpu) {
    c = malloc(sizeof *c);
    rc0 = c ? fy_hash_ctx_init(c) : fy_error(FERRY_ENOMEM, "out of memory");
  } else {
    rc0 = ferry_hasher_new(r->o, &h);
  }
  for (size_t k; (k = atomic_fetch_add(&r->next, 1)) < r->n;) {
    const char *path = r->sink.path(r->sink.user, k);
    ferry_hash_result hr;
    memset(&hr, 0, sizeof hr);
    int rc = rc0;
    if (!rc && r->gpu) {
      rc = gpu_submit(r, c, k, path, &hr);
      if (rc == FERRY_OK)
        continue; /* gpu_done answers it */
    } else if (!rc) {
      rc = ferry_hash_file(h, path, &hr);
    }
    r->sink.done(r->sink.user, k, rc, &hr, rc ? ferry_last_error() : NULL);
  }
  ferry_hasher_free(h);
  if (c) {
    fy_hash_ctx_free(c);
    free(c);
  }
  if (r->gpu)
    fy_gpu_hash_queue_producer_done(r->gpu);
  pthread_mutex_lock(&r->mu);
  r->alive--;
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

/* ------------------------------------- fast mode with the JPEG engine */

static size_t engine_claim(void *user, size_t max, size_t *ids) {
  fy_hash_run *r = user;
  pthread_mutex_lock(&r->mu);
  size_t k = atomic_fetch_add(&r->next, max);
  size_t m = k >= r->n ? 0 : r->n - k < max ? r->n - k : max;
  r->inflight += m;
  pthread_mutex_unlock(&r->mu);
  for (size_t i = 0; i < m; i++)
    ids[i] = k + i;
  return m;
}

static const char *engine_path(void *user, size_t k) {
  fy_hash_run *r = user;
  return r->sink.path(r->sink.user, k);
}

static void engine_done(void *user, size_t k, int status, const ferry_hash_result *hr,
                        const char *error, int on_engine) {
  (void)on_engine;
  fy_hash_run *r = user;
  r->sink.done(r->sink.user, k, status, hr, error);
  flight(r, -1);
}

static void start_engine(fy_hash_run *r, int device) {
  fy_engine_feed feed = {engine_claim, engine_path, engine_done, r};
  if (fy_hash_engine_start(device, r->o, 0, &feed, &r->engine) != FERRY_OK) {
    r->engine = NULL;
    snprintf(r->note, sizeof r->note, "the JPEG engine of cuda:%d is not used (%s)", device,
             ferry_last_error());
  }
}

/* Fast mode on a GPU: the engine pays for its start (about 0.5 s of a
 * core) and its close (0.3-0.4 s at the end) only on a job with seconds
 * left: on an H100 with 16 cores, 2,000 12 MP photos took 2.2 s on the
 * cores alone and 2.5-2.7 s with the engine. So the cores start at once,
 * and this thread looks at how far they got after ENGINE_LOOK_S: the
 * engine starts when what is left, extrapolated, is more than the
 * caller's engine_min_s seconds (the options' engine_min_s, default
 * FY_ENGINE_MIN_S_DEFAULT; 0: the engine at once). */
enum { ENGINE_LOOK_MS = 500 };

static void engine_note(fy_hash_run *r) {
  snprintf(r->note, sizeof r->note, "the JPEG engine of cuda:%d is not used (%s)", r->device,
           ferry_last_error());
}

static void *engine_starter(void *arg) {
  fy_hash_run *r = arg;
  double t0 = fy_now();
  /* a device that is not there is said whatever the job's size; asked of
   * the driver's list first, since starting CUDA to count devices is
   * itself several per cent of a small job (the runtime's check when the
   * driver cannot tell, and before the engine starts) */
  int listed = fy_gpu_listed(r->device);
  if (listed < 0 || (listed == 0 && fy_gpu_hash_available(r->device) != FERRY_OK)) {
    engine_note(r);
    return NULL;
  }
  while (fy_now() - t0 < ENGINE_LOOK_MS / 1000.0 && atomic_load(&r->next) < r->n) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  size_t claimed = atomic_load(&r->next);
  double elapsed = fy_now() - t0;
  if (claimed >= r->n) {
    fy_log(FERRY_LOG_INFO,
           "the JPEG engine of cuda:%d is not started: the cores took every file in %.1f s",
           r->device, elapsed);
    return NULL;
  }
  double left = claimed ? elapsed * (double)(r->n - claimed) / (double)claimed : 1e9;
  if (left <= r->engine_min_s)
    fy_log(FERRY_LOG_INFO,
           "the JPEG engine of cuda:%d is not started: the cores finish in about %.1f s "
           "(engine_min_s %.1f)",
           r->device, left, r->engine_min_s);
  else if (listed > 0 && fy_gpu_hash_available(r->device) != FERRY_OK)
    engine_note(r);
  else
    start_engine(r, r->device);
  return NULL;
}

/* ------------------------------------------------------------ devices */

const char *fy_hash_device_name(int device, char buf[24]) {
  if (device < 0)
    snprintf(buf, 24, "cpu");
  else if (device == FERRY_DEVICE_OPENCL_ANY)
    snprintf(buf, 24, "opencl");
  else if (FERRY_DEVICE_IS_OPENCL(device))
    snprintf(buf, 24, "opencl:%d", device - FERRY_DEVICE_OPENCL);
  else
    snprintf(buf, 24, "cuda:%d", device);
  return buf;
}

int fy_hash_device_check(int device, ferry_hash_mode mode) {
  char name[24];
  fy_hash_device_name(device, name);
  if (FERRY_DEVICE_IS_OPENCL(device)) {
    if (mode != FERRY_HASH_COMPATIBLE)
      return fy_error(FERRY_EUNSUPPORTED,
                      "cannot hash on %s: fast mode's GPU part is nvJPEG's JPEG engine (CUDA); "
                      "OpenCL hashes in compatible mode",
                      name);
    fy_cl_device_info *d = NULL;
    int count = 0, platforms = 0;
    int rc = fy_cl_devices(&d, &count, &platforms);
    free(d);
    if (rc == FERRY_OK && device != FERRY_DEVICE_OPENCL_ANY &&
        device - FERRY_DEVICE_OPENCL >= count)
      rc = fy_error(FERRY_EUNSUPPORTED,
                    "OpenCL device %d does not exist (%d found; `ferry doctor` "
                    "lists them)",
                    device - FERRY_DEVICE_OPENCL, count);
    if (rc) {
      char why[512];
      snprintf(why, sizeof why, "%s", ferry_last_error());
      return fy_error(rc, "cannot hash on %s: %s", name, why);
    }
    return FERRY_OK;
  }
  if (mode != FERRY_HASH_COMPATIBLE)
    return FERRY_OK; /* fast mode: the engine beside the cores, or the cores with a note */
  int rc = fy_gpu_hash_available(device);
  if (rc) {
    char why[512];
    snprintf(why, sizeof why, "%s", ferry_last_error());
    return fy_error(rc, "cannot hash on GPU %s: %s", name, why);
  }
  return FERRY_OK;
}

/* ---------------------------------------------------------------- run */

static void run_free(fy_hash_run *r) {
  free(r->tid);
  free(r->part);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

int fy_hash_engine_min_s_check(double s) {
  if (s >= 0 && s <= FY_ENGINE_MIN_S_MAX)
    return FERRY_OK;
  return fy_error(FERRY_EINVAL,
                  "engine_min_s %g is not 0..%d seconds (fast mode on a GPU: the JPEG engine "
                  "starts when the cores would take longer than this; 0: at once)",
                  s, FY_ENGINE_MIN_S_MAX);
}

int fy_hash_run_start(const ferry_hash_options *o, size_t n, int threads, int device,
                      double engine_min_s, const fy_hash_sink *sink, fy_hash_run **out) {
  *out = NULL;
  int bad = fy_hash_engine_min_s_check(engine_min_s);
  if (bad)
    return bad;
  fy_hash_run *r = calloc(1, sizeof *r);
  if (!r)
    return fy_error(FERRY_ENOMEM, "out of memory");
  r->o = o;
  r->n = n;
  r->sink = *sink;
  atomic_init(&r->next, 0);
  pthread_mutex_init(&r->mu, NULL);
  if (threads <= 0) /* every core, shared among torchrun's processes of this node */
    threads = fy_share_cores();
  if (threads > MAX_THREADS)
    threads = MAX_THREADS;
  if ((size_t)threads > n)
    threads = n ? (int)n : 1;
  r->tid = calloc((size_t)threads, sizeof *r->tid);
  if (!r->tid) {
    run_free(r);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  unsigned gpu_kinds = o->kinds & FY_GPU_HASH_KINDS;
  int compat = o->mode == FERRY_HASH_COMPATIBLE;
  if (FERRY_DEVICE_IS_OPENCL(device) && !compat) {
    int rc = fy_hash_device_check(device, o->mode);
    run_free(r);
    return rc;
  }
  if (device >= 0 && compat && gpu_kinds && n) { /* colorhash alone: the CPU path is the same */
    r->part = calloc(n, sizeof *r->part);
    int rc = r->part ? fy_gpu_hash_queue_new(device, gpu_kinds, o->hash_size, 32, threads, gpu_done,
                                             r, &r->gpu)
                     : fy_error(FERRY_ENOMEM, "out of memory for %zu results", n);
    if (rc) {
      char why[512];
      snprintf(why, sizeof why, "%s", ferry_last_error());
      run_free(r);
      char name[24];
      return fy_error(rc, "cannot hash on GPU %s: %s", fy_hash_device_name(device, name), why);
    }
  }
  /* fast mode on a GPU: the cores start at once, the engine joins them
   * when the GPU is up (a fraction of a second), or starts first (the
   * test control FERRY_HASH_ENGINE_FIRST) */
  int engine_wanted = device >= 0 && !compat && n;
  long first = 0;
  fy_tc_long(FY_TC_HASH_ENGINE_FIRST, &first);
  if (engine_wanted && first)
    start_engine(r, device);
  for (int i = 0; i < threads; i++) {
    pthread_mutex_lock(&r->mu);
    r->alive++;
    pthread_mutex_unlock(&r->mu);
    if (pthread_create(&r->tid[r->started], NULL, worker, r) == 0) {
      r->started++;
    } else {
      pthread_mutex_lock(&r->mu);
      r->alive--;
      pthread_mutex_unlock(&r->mu);
    }
  }
  /* the GPU queue waits for `threads` producers: one for each thread that
   * did not start, except the one this thread becomes when none did */
  for (int i = r->started ? r->started : 1; r->gpu && i < threads; i++)
    fy_gpu_hash_queue_producer_done(r->gpu);
  if (engine_wanted && !first) {
    r->device = device;
    r->engine_min_s = engine_min_s;
    if (r->engine_min_s > 0)
      r->starter_started = pthread_create(&r->starter, NULL, engine_starter, r) == 0;
    if (!r->starter_started)
      start_engine(r, device);
  }
  if (!r->started) { /* no thread at all: the items are hashed here */
    pthread_mutex_lock(&r->mu);
    r->alive = 1;
    pthread_mutex_unlock(&r->mu);
    worker(r);
  }
  *out = r;
  return FERRY_OK;
}

int fy_hash_run_idle(fy_hash_run *r) {
  pthread_mutex_lock(&r->mu);
  int idle = r->alive == 0 && r->inflight == 0;
  pthread_mutex_unlock(&r->mu);
  return idle;
}

void fy_hash_run_finish(fy_hash_run *r, fy_hash_run_report *report) {
  if (!r)
    return;
  for (int i = 0; i < r->started; i++)
    pthread_join(r->tid[i], NULL);
  if (r->starter_started)
    pthread_join(r->starter, NULL); /* the engine, if it started, is r->engine now */
  fy_engine_stats es = {0, 0, 0};
  if (r->engine)
    fy_hash_engine_finish(r->engine, &es); /* every item it claimed was answered */
  if (r->gpu) {
    fy_gpu_hash_stats st; /* a GPU error was answered for each item it hit */
    (void)fy_gpu_hash_queue_finish(r->gpu, &st);
    fy_log(FERRY_LOG_DEBUG, "GPU hashing: %zu images in %zu batches, %.3f s uploading and hashing",
           st.images, st.batches, st.gpu_s);
  }
  if (report) {
    report->engine_files = es.engine;
    snprintf(report->note, sizeof report->note, "%s", r->note);
  }
  run_free(r);
}
