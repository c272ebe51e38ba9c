/* test_watchdog.c — the loader's stall watchdog: a decode made to stall
 * (fy_fault_stall) past stall_timeout_ms gives FERRY_ETIMEOUT naming the
 * stage, the file and the thread, not a hang; the loader stays failed;
 * close returns while the stalled thread still sleeps; stalls shorter than
 * the time-out, or with the watchdog off, are only slow; stop wakes a
 * consumer waiting for a batch. */
#include "check.h"
#include "core/internal.h"
#include "ferry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *sample(void) {
  const char *s = getenv("FERRY_SAMPLE");
  return s ? s : "data/sample";
}

static void opts(ferry_loader_options *o, int timeout_ms) {
  ferry_loader_options_default(o);
  o->source = sample();
  o->batch_size = 4;
  o->width = o->height = 32;
  o->workers = 2;
  o->prefetch = 2;
  o->stall_timeout_ms = timeout_ms;
  o->on_skip = NULL;
}

/* Runs epoch 0 to its end or first error; returns the status. */
static int epoch(ferry_loader *L, int64_t *images) {
  ferry_batch *b;
  int rc;
  *images = 0;
  while ((rc = ferry_loader_next(L, &b)) == FERRY_OK) {
    *images += b->count;
    ferry_loader_release(L, b);
  }
  return rc;
}

static void test_stall_is_an_error(void) {
  ferry_loader_options o;
  opts(&o, 300);
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  fy_fault_stall_set(5, 4000); /* the 5th decode sleeps 4 s */
  double t0 = fy_now();
  int64_t n;
  int rc = epoch(L, &n);
  double waited = fy_now() - t0;
  char msg[4096];
  snprintf(msg, sizeof msg, "%s", ferry_last_error());
  CHECK_MSG(rc == FERRY_ETIMEOUT, "rc %d: %s", rc, msg);
  CHECK_MSG(strstr(msg, "loader: stalled: no sample finished for") != NULL, "%s", msg);
  CHECK_MSG(strstr(msg, "while waiting for batch") != NULL, "%s", msg);
  CHECK_MSG(strstr(msg, "stall_timeout_ms 300") != NULL, "%s", msg);
  /* names the thread, what it does and the file */
  const char *w = strstr(msg, ": decoding ");
  CHECK_MSG(w && strstr(msg, "worker ") && strstr(w, sample()) && strstr(w, " for "), "%s", msg);
  CHECK_MSG(waited < 3.5, "the error came after %.1f s, the stall lasts 4 s", waited);
  CHECK(!strcmp(ferry_strerror(FERRY_ETIMEOUT), "stalled past a time-out"));
  /* the loader stays failed: no hang on the next call or a new epoch */
  ferry_batch *b;
  CHECK(ferry_loader_next(L, &b) == FERRY_ETIMEOUT);
  CHECK(b == NULL);
  CHECK(strstr(ferry_last_error(), "stalled") != NULL);
  CHECK(ferry_loader_start_epoch(L, 1) == FERRY_ETIMEOUT);
  /* close gives up on the sleeping thread instead of waiting 4 s */
  t0 = fy_now();
  ferry_loader_close(L);
  double closed = fy_now() - t0;
  CHECK_MSG(closed < 2.5, "close took %.1f s", closed);
  fy_fault_stall_set(0, 0);
}

static void test_short_stall_is_only_slow(void) {
  ferry_loader_options o;
  opts(&o, 3000);
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  fy_fault_stall_set(3, 400); /* shorter than the time-out */
  int64_t n;
  int rc = epoch(L, &n);
  CHECK_MSG(rc == FERRY_END, "rc %d: %s", rc, ferry_last_error());
  CHECK(n == ferry_loader_epoch_size(L) - 1); /* truncated.jpg is skipped */
  /* a second epoch works as usual */
  CHECK(ferry_loader_start_epoch(L, 1) == FERRY_OK);
  CHECK(epoch(L, &n) == FERRY_END);
  ferry_loader_close(L);
  fy_fault_stall_set(0, 0);
}

static void test_watchdog_off(void) {
  ferry_loader_options o;
  opts(&o, -1); /* wait for ever */
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  fy_fault_stall_set(2, 600);
  int64_t n;
  CHECK(epoch(L, &n) == FERRY_END);
  CHECK(n == ferry_loader_epoch_size(L) - 1);
  ferry_loader_close(L);
  fy_fault_stall_set(0, 0);
}

/* A close while a worker is in a stall shorter than the time-out waits
 * for it and joins every thread (nothing left behind). */
static void test_close_waits_for_short_stall(void) {
  ferry_loader_options o;
  opts(&o, 5000);
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  fy_fault_stall_set(1, 500);
  ferry_batch *b;
  CHECK(ferry_loader_start_epoch(L, 0) == FERRY_OK);
  double t0 = fy_now();
  ferry_loader_close(L);
  (void)b;
  CHECK(fy_now() - t0 < 4.0);
  fy_fault_stall_set(0, 0);
}

typedef struct waiter {
  ferry_loader *L;
  int rc;
  double returned;
} waiter;

static void *wait_next(void *arg) {
  waiter *w = arg;
  ferry_batch *b = NULL;
  w->rc = ferry_loader_next(w->L, &b);
  w->returned = fy_now();
  return NULL;
}

/* ferry_loader_stop while the consumer waits for a batch that a stalled
 * decode holds back: the consumer returns FERRY_ESTATE at once; stop
 * returns once that decode ends, every thread joined. */
static void test_stop_wakes_a_waiting_consumer(void) {
  ferry_loader_options o;
  opts(&o, 5000);
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  fy_fault_stall_set(1, 1500);
  CHECK(ferry_loader_start_epoch(L, 0) == FERRY_OK);
  waiter w = {L, -1, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, wait_next, &w) == 0);
  struct timespec nap = {0, 300 * 1000000L};
  nanosleep(&nap, NULL);
  double t0 = fy_now();
  int rc = ferry_loader_stop(L);
  double stopped = fy_now();
  pthread_join(t, NULL);
  CHECK_MSG(rc == FERRY_OK, "stop: %d %s", rc, ferry_last_error());
  CHECK_MSG(w.rc == FERRY_ESTATE, "the waiting consumer got %d", w.rc);
  CHECK_MSG(w.returned - t0 < 0.5, "the waiting consumer returned %.2f s after stop",
            w.returned - t0);
  CHECK_MSG(stopped - t0 > 0.5, "stop returned after %.2f s, before the stalled decode ended",
            stopped - t0);
  ferry_batch *b;
  CHECK(ferry_loader_next(L, &b) == FERRY_ESTATE);
  CHECK(strstr(ferry_last_error(), "stopped") != NULL);
  CHECK(ferry_loader_stop(L) == FERRY_OK); /* again: harmless */
  ferry_loader_close(L);
  CHECK(ferry_loaders_abandoned() == 0);
  fy_fault_stall_set(0, 0);
}

int main(void) {
  test_stop_wakes_a_waiting_consumer();
  test_short_stall_is_only_slow();
  test_watchdog_off();
  test_close_waits_for_short_stall();
  test_stall_is_an_error(); /* last: it leaves a sleeping thread behind */
  return check_done();
}
