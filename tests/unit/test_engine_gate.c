/* test_engine_gate.c — the JPEG engine's gate (src/cuda/engine_gate.c),
 * on the CPU: shared entrants overlap, an exclusive one overlaps nothing,
 * a waiting exclusive entrant holds new shared ones back (so it cannot
 * starve), and what a decoding state has seen grows only where it should. */
#include "check.h"
#include "cuda/engine_gate.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

static int inside, exclusive_inside, max_shared, overlaps;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void nap_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

static void *worker(void *arg) {
  long id = (long)arg;
  for (int i = 0; i < 200; i++) {
    int excl = (i + id) % 17 == 0;
    fy_engine_gate_enter(excl);
    pthread_mutex_lock(&mu);
    inside++;
    exclusive_inside += excl;
    if (exclusive_inside && inside > 1)
      overlaps++;
    if (!excl && inside > max_shared)
      max_shared = inside;
    pthread_mutex_unlock(&mu);
    nap_us(excl ? 300 : 100);
    pthread_mutex_lock(&mu);
    inside--;
    exclusive_inside -= excl;
    pthread_mutex_unlock(&mu);
    fy_engine_gate_leave(excl);
  }
  return NULL;
}

static void test_gate(void) {
  pthread_t t[6];
  for (long i = 0; i < 6; i++)
    CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
  for (int i = 0; i < 6; i++)
    pthread_join(t[i], NULL);
  CHECK_MSG(overlaps == 0, "an exclusive call overlapped %d times", overlaps);
  CHECK_MSG(max_shared > 1, "shared calls never overlapped (max %d)", max_shared);
  CHECK(inside == 0 && exclusive_inside == 0);
}

static int order[3], norder;
static void *late_shared(void *arg) {
  (void)arg;
  fy_engine_gate_enter(0);
  pthread_mutex_lock(&mu);
  order[norder++] = 2;
  pthread_mutex_unlock(&mu);
  fy_engine_gate_leave(0);
  return NULL;
}
static void *writer(void *arg) {
  (void)arg;
  fy_engine_gate_enter(1);
  pthread_mutex_lock(&mu);
  order[norder++] = 1;
  pthread_mutex_unlock(&mu);
  fy_engine_gate_leave(1);
  return NULL;
}

/* Until the gate has these entrants waiting (a busy machine may take long
 * to run a thread: no fixed nap), at most 60 s. */
static void wait_for(int exclusive, int shared) {
  int e = -1, sh = -1;
  for (int i = 0; i < 600000 && (e != exclusive || sh != shared); i++) {
    fy_engine_gate_waiting(&e, &sh);
    if (e != exclusive || sh != shared)
      nap_us(100);
  }
  CHECK_MSG(e == exclusive && sh == shared, "waiting: %d exclusive, %d shared; want %d, %d", e, sh,
            exclusive, shared);
}

/* A shared holder is in; an exclusive entrant waits; a shared entrant that
 * comes after it must go after it. */
static void test_writer_first(void) {
  norder = 0;
  fy_engine_gate_enter(0);
  pthread_t w, s;
  CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
  wait_for(1, 0); /* the writer is waiting now */
  CHECK(pthread_create(&s, NULL, late_shared, NULL) == 0);
  wait_for(1, 1); /* and the late shared entrant behind it */
  pthread_mutex_lock(&mu);
  CHECK(norder == 0); /* neither got in past the holder and the waiting writer */
  pthread_mutex_unlock(&mu);
  fy_engine_gate_leave(0);
  pthread_join(w, NULL);
  pthread_join(s, NULL);
  CHECK(norder == 2 && order[0] == 1 && order[1] == 2);
}

static void test_seen(void) {
  fy_engine_seen s;
  memset(&s, 0, sizeof s);
  CHECK(fy_engine_seen_grows(&s, 10, 10, 100, 2));
  fy_engine_seen_add(&s, 800, 300, 50000, 2);
  fy_engine_seen_add(&s, 300, 800, 40000, 2);
  CHECK(!fy_engine_seen_grows(&s, 800, 300, 50000, 2));
  CHECK(!fy_engine_seen_grows(&s, 400, 400, 1000, 2));
  CHECK(fy_engine_seen_grows(&s, 700, 700, 1000, 2)); /* more pixels than any one seen */
  CHECK(fy_engine_seen_grows(&s, 801, 10, 1000, 2));
  CHECK(fy_engine_seen_grows(&s, 10, 801, 1000, 2));
  CHECK(fy_engine_seen_grows(&s, 10, 10, 50001, 2)); /* a longer bitstream */
  CHECK(fy_engine_seen_grows(&s, 10, 10, 100, 0));   /* another chroma layout */
  fy_engine_seen_add(&s, 10, 10, 100, 0);
  CHECK(!fy_engine_seen_grows(&s, 10, 10, 100, 0));
  /* a preallocated box: everything inside it, any subsampling, is seen */
  CHECK(fy_engine_seen_box(&s, 256) == 1);
  CHECK(s.w == 1024 && s.h == 1024 && s.area == 1024 * 1024);
  CHECK(!fy_engine_seen_grows(&s, 1000, 1000, 100, 1));
  CHECK(!fy_engine_seen_grows(&s, 1024, 1024, 100, 3));
  CHECK(fy_engine_seen_grows(&s, 1025, 10, 100, 1));
  CHECK(fy_engine_seen_grows(&s, 10, 10, 60000, 1)); /* bitstreams are not in the box */
  CHECK(fy_engine_seen_box(&s, 256) == 0);
}

int main(void) {
  test_seen();
  test_writer_first();
  test_gate();
  return check_done();
}
