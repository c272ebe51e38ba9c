/* watch.c — the loader's stall watchdog. Every loader thread notes what it
 * is doing (stage, file, since when: fy_note_set). The consumer's waits
 * (a batch, its GPU kernels, an epoch change) and ferry_loader_close() are
 * bounded: when no sample has finished for stall_timeout_ms while the
 * consumer waits, the loader fails with FERRY_ETIMEOUT and a message,
 * built here from the notes, that names what each thread was waiting on.
 * A stall is never silent and never a hang. */
#include "pipeline/loader_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void fy_note_set(fy_note *n, int stage, const char *what, int count) {
  if (!n)
    return;
  __atomic_store_n(&n->what, what, __ATOMIC_RELAXED);
  __atomic_store_n(&n->count, count, __ATOMIC_RELAXED);
  __atomic_store_n(&n->since_us, (int64_t)(fy_now() * 1e6), __ATOMIC_RELAXED);
  __atomic_store_n(&n->stage, stage, __ATOMIC_RELEASE);
}

typedef struct text {
  char *p;
  size_t cap, len;
} text;

static void put(text *t, const char *fmt, ...) {
  if (t->len + 1 >= t->cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  t->len += (size_t)n;
  if (t->len >= t->cap) { /* cut: say so */
    t->len = t->cap - 1;
    if (t->cap > 4)
      memcpy(t->p + t->cap - 4, "...", 4);
  }
}

/* One thread's note as text: "decoding FILE for 61.2 s". */
static void describe(text *t, const ferry_loader *L, const fy_note *n, int engine) {
  int stage = __atomic_load_n(&n->stage, __ATOMIC_ACQUIRE);
  const char *what = __atomic_load_n(&n->what, __ATOMIC_RELAXED);
  int count = __atomic_load_n(&n->count, __ATOMIC_RELAXED);
  double secs = fy_now() - (double)__atomic_load_n(&n->since_us, __ATOMIC_RELAXED) * 1e-6;
  what = what ? what : "?";
  switch (stage) {
  case FY_STAGE_IDLE: put(t, "waiting for work"); break;
  case FY_STAGE_READ: put(t, "reading %s", what); break;
  case FY_STAGE_DECODE: put(t, "decoding %s", what); break;
  case FY_STAGE_RESIZE: put(t, "resizing %s", what); break;
  case FY_STAGE_COPY: put(t, "copying %s", what); break;
  case FY_STAGE_PARKED: put(t, "parked"); break;
  case FY_STAGE_ENGINE:
    put(t, "%d images on the GPU JPEG engine (%s)", count,
        L->gpu && engine >= 0 ? fy_gpu_engine_phase(L->gpu, engine) : "?");
    break;
  default: put(t, "?"); break;
  }
  put(t, " for %.1f s", secs);
}

void fy_watch_describe(const ferry_loader *L, char *buf, size_t cap) {
  text t = {buf, cap, 0};
  buf[0] = '\0';
  int idle = 0, parked = 0;
  for (int i = 0; i < L->nworkers; i++) {
    int stage = __atomic_load_n(&L->wnotes[i].stage, __ATOMIC_ACQUIRE);
    if (stage == FY_STAGE_IDLE || stage == FY_STAGE_PARKED) {
      idle += stage == FY_STAGE_IDLE;
      parked += stage == FY_STAGE_PARKED;
      continue;
    }
    put(&t, "%sworker %d: ", t.len ? "; " : "", i);
    describe(&t, L, &L->wnotes[i], -1);
  }
  for (int i = 0; i < L->gpu_threads; i++) {
    put(&t, "%sGPU decoder %d: ", t.len ? "; " : "", i);
    describe(&t, L, &L->dnotes[i], i);
  }
  if (idle)
    put(&t,
        "%s%d of %d workers waiting for work (the ring is full or the epoch's samples are "
        "all claimed)",
        t.len ? "; " : "", idle, L->nworkers);
  if (parked)
    put(&t, "%s%d of %d workers parked (the consumer did not need them)", t.len ? "; " : "", parked,
        L->nworkers);
}

int fy_watch_stall(ferry_loader *L, const char *waiting_for, double waited) {
  if (!L->stalled) {
    char threads[3072];
    fy_watch_describe(L, threads, sizeof threads);
    snprintf(L->ring.error_msg, sizeof L->ring.error_msg,
             "loader: stalled: no sample finished for %.1f s while waiting for %s "
             "(stall_timeout_ms %d; ferry load --stall-timeout, Python stall_timeout=); "
             "threads: %s",
             waited, waiting_for, L->stall_ms, threads[0] ? threads : "none");
    L->stalled = 1;
    L->ring.error = FERRY_ETIMEOUT;
  }
  return fy_error(FERRY_ETIMEOUT, "%s", L->ring.error_msg);
}

int fy_watch_wait(ferry_loader *L, pthread_cond_t *cv, double t0) {
  if (L->stall_ms <= 0) {
    pthread_cond_wait(cv, &L->ring.mu);
    return 0;
  }
  double base = L->progress_t > t0 ? L->progress_t : t0;
  double deadline = base + L->stall_ms * 1e-3;
  if (fy_now() >= deadline)
    return 1;
  struct timespec ts;
  ts.tv_sec = (time_t)deadline;
  ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L)
    ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  int rc = pthread_cond_timedwait(cv, &L->ring.mu, &ts);
  base = L->progress_t > t0 ? L->progress_t : t0;
  return rc == ETIMEDOUT && fy_now() >= base + L->stall_ms * 1e-3;
}

int fy_watch_cond_init(pthread_cond_t *cv) {
  pthread_condattr_t a;
  if (pthread_condattr_init(&a) != 0)
    return -1;
  /* fy_now() is CLOCK_MONOTONIC: the deadlines above are on that clock */
  int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  rc = rc ? rc : pthread_cond_init(cv, &a);
  pthread_condattr_destroy(&a);
  return rc;
}
