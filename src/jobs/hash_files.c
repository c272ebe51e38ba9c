/* hash_files.c — ferry_hash_files (ferry.h): the one loop behind `ferry hash`
 * (CSV) and Python's ferry.hash(list), on the hashing driver (run.h) that
 * catalogs use too: each answer lands in the caller's arrays. */
#include "core/internal.h"
#include "hash/hash.h"
#include "hash/run.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct job {
  const char *const *paths;
  size_t n;
  ferry_hash_result *res;
  int *status;
  char **errors;
  atomic_size_t done; /* files answered, for progress */
} job;

static const char *job_path(void *user, size_t k) { return ((job *)user)->paths[k]; }

/* From the driver's threads, once per file: each writes only its own slot. */
static void job_done(void *user, size_t k, int status, const ferry_hash_result *r,
                     const char *error) {
  job *j = user;
  j->res[k] = *r;
  j->status[k] = status;
  if (status)
    j->errors[k] = strdup(error && *error ? error : ferry_strerror(status));
  atomic_fetch_add_explicit(&j->done, 1, memory_order_relaxed);
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
  o->engine_min_s = FY_ENGINE_MIN_S_DEFAULT;
}

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
  ferry_hash_options opts;
  int rc = fy_hash_options_take(o, &opts);
  if (!rc)
    rc = fy_hash_engine_min_s_check(run->engine_min_s);
  if (rc)
    return rc;
  o = &opts;
  job j = {paths, n, res, status, errors, 0};
  atomic_init(&j.done, 0);
  for (size_t i = 0; i < n; i++) {
    memset(&res[i], 0, sizeof res[i]);
    status[i] = FERRY_OK;
    errors[i] = NULL;
  }
  if (!n)
    return FERRY_OK;
  reporter rep;
  reporter_start(&rep, &j, run);
  fy_hash_sink sink = {job_path, job_done, &j};
  fy_hash_run *hr = NULL;
  rc = fy_hash_run_start(o, n, threads, device, run->engine_min_s, &sink, &hr);
  fy_hash_run_report rr;
  fy_hash_run_finish(hr, &rr); /* every file answered */
  if (rc == FERRY_OK) {
    info->engine_files = rr.engine_files;
    snprintf(info->note, sizeof info->note, "%s", rr.note);
  }
  reporter_stop(&rep, rc == FERRY_OK);
  return rc;
}
