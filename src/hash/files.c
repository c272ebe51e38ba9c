/* files.c — ferry_hash_files (ferry.h): the one loop behind `ferry hash`
 * (CSV) and Python's ferry.hash(list); catalogs run their own around the
 * same parts (update.c journals each result as it arrives). CPU threads
 * take files one at a time from a shared counter; in compatible mode on a
 * GPU they stop at the pixels and a fy_gpu_hash_queue hashes them in
 * batches; in fast mode on a GPU the JPEG engine's threads claim chunks
 * from the same counter. */
#include "core/internal.h"
#include "cuda/hash_gpu.h"
#include "hash/engine.h"
#include "hash/hash.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 1024

typedef struct job {
  const char *const *paths;
  size_t n;
  const ferry_hash_options *o;
  atomic_size_t next;
  ferry_hash_result *res;
  int *status;
  char **errors;
  fy_gpu_hash_queue *q; /* compatible mode on a GPU */
  atomic_size_t done;   /* files answered, for progress */
} job;

static void fail(job *j, size_t i, int rc, const char *msg) {
  j->status[i] = rc;
  j->errors[i] = strdup(msg && *msg ? msg : ferry_strerror(rc));
}

static void answered(job *j) { atomic_fetch_add_explicit(&j->done, 1, memory_order_relaxed); }

static void *cpu_worker(void *arg) {
  job *j = arg;
  ferry_hasher *h = NULL;
  int rc0 = ferry_hasher_new(j->o, &h);
  for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
    int rc = rc0 ? rc0 : ferry_hash_file(h, j->paths[i], &j->res[i]);
    j->status[i] = rc;
    if (rc)
      fail(j, i, rc, ferry_last_error());
    answered(j);
  }
  ferry_hasher_free(h);
  return NULL;
}

static void run_threads(job *j, int threads, void *(*fn)(void *)) {
  pthread_t tid[MAX_THREADS];
  int started = 0;
  for (int t = 0; t < threads && t < MAX_THREADS; t++)
    started += pthread_create(&tid[started], NULL, fn, j) == 0;
  if (!started)
    fn(j);
  for (int t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
}

/* ------------------------------------------ compatible mode on a GPU */

/* From the queue's thread: the GPU's hashes join the worker's colorhash. */
static void gpu_done(void *user, size_t id, int status, const ferry_hash_result *r,
                     const char *error) {
  job *j = user;
  if (status) {
    fail(j, id, status, error ? error : "GPU hashing failed");
  } else {
    ferry_hash_result *out = &j->res[id];
    for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
      if (r->kinds & FERRY_HASH_MASK(k))
        out->hash[k] = r->hash[k];
    out->kinds |= r->kinds;
  }
  answered(j);
}

static void *gpu_worker(void *arg) {
  job *j = arg;
  fy_hash_ctx c;
  int rc0 = fy_hash_ctx_init(&c);
  for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
    fy_compat_image im; /* compatible mode's decode, colorhash counted (hasher.c) */
    int rc = rc0 ? rc0 : fy_compat_decode_file(&c, j->o, j->paths[i], &j->res[i], &im);
    int queued = 0;
    if (!rc && (j->o->kinds & FY_GPU_HASH_KINDS)) {
      rc = fy_gpu_hash_queue_submit(j->q, i, /* copies the pixels */
                                    &(fy_gpu_hash_image){im.p, im.w, im.h, im.channels, im.stride});
      queued = rc == FERRY_OK; /* gpu_done answers it */
    }
    if (rc)
      fail(j, i, rc, ferry_last_error());
    if (!queued)
      answered(j);
  }
  fy_hash_ctx_free(&c);
  fy_gpu_hash_queue_producer_done(j->q);
  return NULL;
}

static int compat_on_gpu(job *j, int device, int threads) {
  const ferry_hash_options *o = j->o;
  int rc = fy_gpu_hash_queue_new(device, o->kinds, o->hash_size, 32, threads, gpu_done, j, &j->q);
  if (rc) {
    char why[512];
    snprintf(why, sizeof why, "%s", ferry_last_error());
    return fy_error(rc, "cannot hash on GPU cuda:%d: %s", device, why);
  }
  run_threads(j, threads, gpu_worker);
  fy_gpu_hash_stats st;
  (void)fy_gpu_hash_queue_finish(j->q, &st); /* a GPU error was recorded for each file it hit */
  if (getenv("FERRY_GPU_HASH_STATS"))
    fprintf(stderr, "ferry: GPU hashing: %zu images in %zu batches, %.3f s uploading and hashing\n",
            st.images, st.batches, st.gpu_s);
  return FERRY_OK;
}

/* ------------------------------------- fast mode with the JPEG engine */

static size_t engine_claim(void *user, size_t max, size_t *ids) {
  job *j = user;
  size_t k = atomic_fetch_add(&j->next, max);
  size_t m = k >= j->n ? 0 : j->n - k < max ? j->n - k : max;
  for (size_t i = 0; i < m; i++)
    ids[i] = k + i;
  return m;
}

static const char *engine_path(void *user, size_t id) { return ((job *)user)->paths[id]; }

static void engine_done(void *user, size_t id, int status, const ferry_hash_result *r,
                        const char *error, int on_engine) {
  (void)on_engine;
  job *j = user;
  j->status[id] = status;
  if (status)
    fail(j, id, status, error);
  else
    j->res[id] = *r;
  answered(j);
}

/* ------------------------------------------------------------ progress */

typedef struct reporter {
  job *j;
  const ferry_hash_files_options *run;
  pthread_t tid;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;
} reporter;

static void *reporter_main(void *arg) {
  reporter *r = arg;
  pthread_mutex_lock(&r->mu);
  while (!r->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100000000;
    if (ts.tv_nsec >= 1000000000)
      ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    if (!r->stop)
      r->run->progress(r->run->progress_user,
                       atomic_load_explicit(&r->j->done, memory_order_relaxed), r->j->n);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static void reporter_start(reporter *r, job *j, const ferry_hash_files_options *run) {
  memset(r, 0, sizeof *r);
  r->j = j;
  r->run = run;
  if (!run->progress)
    return;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  r->started = pthread_create(&r->tid, NULL, reporter_main, r) == 0;
}

/* Stops the reporter; the last report (when the run went through) comes
 * from the calling thread. */
static void reporter_stop(reporter *r, int final) {
  if (r->started) {
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->tid, NULL);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
  }
  if (final && r->run->progress)
    r->run->progress(r->run->progress_user, atomic_load(&r->j->done), r->j->n);
}

/* ------------------------------------------------------------- run */

void ferry_hash_files_options_default(ferry_hash_files_options *o) {
  memset(o, 0, sizeof *o);
  o->device = -1;
}

static int hash_all(job *j, int threads, int device, ferry_hash_files_report *info);

int ferry_hash_files(const char *const *paths, size_t n, const ferry_hash_options *o,
                     const ferry_hash_files_options *run, ferry_hash_result *res, int *status,
                     char **errors, ferry_hash_files_report *info) {
  ferry_hash_files_options run_def;
  if (!run) {
    ferry_hash_files_options_default(&run_def);
    run = &run_def;
  }
  int threads = run->threads, device = run->device;
  ferry_hash_files_report local;
  if (!info)
    info = &local;
  memset(info, 0, sizeof *info);
  if ((!paths || !res || !status || !errors) && n)
    return fy_error(FERRY_EINVAL, "ferry_hash_files: NULL argument");
  ferry_hash_options def;
  if (!o) {
    ferry_hash_options_default(&def);
    o = &def;
  }
  int rc = fy_hash_options_check(o);
  if (rc)
    return rc;
  job j = {paths, n, o, 0, res, status, errors, NULL, 0};
  atomic_init(&j.next, 0);
  atomic_init(&j.done, 0);
  for (size_t i = 0; i < n; i++) {
    memset(&res[i], 0, sizeof res[i]);
    status[i] = FERRY_OK;
    errors[i] = NULL;
  }
  if (threads <= 0)
    threads = fy_num_cores();
  if (threads > MAX_THREADS)
    threads = MAX_THREADS;
  if ((size_t)threads > n)
    threads = n ? (int)n : 1;
  if (!n)
    return FERRY_OK;
  reporter rep;
  reporter_start(&rep, &j, run);
  rc = hash_all(&j, threads, device, info);
  reporter_stop(&rep, rc == FERRY_OK);
  return rc;
}

static fy_hash_engine *start_engine(job *j, int device, ferry_hash_files_report *info) {
  fy_engine_feed feed = {engine_claim, engine_path, engine_done, j};
  fy_hash_engine *e = NULL;
  if (fy_hash_engine_start(device, j->o, 0, &feed, &e) != FERRY_OK)
    snprintf(info->note, sizeof info->note, "the JPEG engine of cuda:%d is not used (%s)", device,
             ferry_last_error());
  return e;
}

static int hash_all(job *j, int threads, int device, ferry_hash_files_report *info) {
  const ferry_hash_options *o = j->o;
  if (device >= 0 && o->mode == FERRY_HASH_COMPATIBLE)
    return compat_on_gpu(j, device, threads);
  if (device < 0) {
    run_threads(j, threads, cpu_worker);
    return FERRY_OK;
  }
  /* fast mode on a GPU: the cores start at once, the engine joins them
   * when the GPU is up (a fraction of a second), or starts first
   * (FERRY_HASH_ENGINE_FIRST, for tests) */
  int first = getenv("FERRY_HASH_ENGINE_FIRST") != NULL;
  fy_hash_engine *e = first ? start_engine(j, device, info) : NULL;
  pthread_t tid[MAX_THREADS];
  int started = 0;
  for (int t = 0; t < threads; t++)
    started += pthread_create(&tid[started], NULL, cpu_worker, j) == 0;
  if (!first)
    e = start_engine(j, device, info);
  if (!started)
    cpu_worker(j);
  for (int t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
  if (e) {
    fy_engine_stats st;
    fy_hash_engine_finish(e, &st);
    info->engine_files = st.engine;
  }
  return FERRY_OK;
}
