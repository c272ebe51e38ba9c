/* test_engine_ctl.c — how many JPEG engine contexts decode
 * (src/pipeline/engine_ctl.c), on simulated loaders: CPU workers and
 * engine contexts make batches, a consumer takes them, and each context
 * may slow the consumer (a training step sharing the GPU). What a level
 * does shows a ring's length later. Decode-bound it keeps every context;
 * feeding a training step the cores keep up with, none; loader-bound, the
 * level that delivers most, its failed trials backing off; one long pause
 * of the consumer's or an epoch's refill of the ring does not decide. With
 * parking on, a training step the cores keep up with leaves the workers it
 * needs, no context, and its full rate; decode-bound nothing is parked; the
 * parked workers come back within seconds of the consumer speeding up.
 * Workers idle while the consumer waits (the ring all claimed) stop a
 * context only on trial: kept where the contexts add little, undone where
 * they add much. With shedding on, the workers park while the contexts
 * alone are faster, and stay on where they add. The default number of
 * workers beside the engine's feeding threads. */
#include "check.h"
#include "pipeline/engine_ctl.h"

#include <string.h>

#define RING 3
#define WORKERS 12

typedef struct sim {
  double cpu, eng; /* batches/s from all CPU workers, from each context */
  double consumer; /* batches/s the consumer takes at most (0: no limit) */
  double harm;     /* share of the consumer's rate each context takes */
  double jitter;   /* +- share of each interval */
  double starve;   /* with every context on, the share of the workers' time
                      the ring's samples are all claimed (their chunks in
                      flight): the workers idle; in proportion to the level */
  unsigned seed;
  int hist[RING];  /* levels the ring's batches were made at */
  int hista[RING]; /* and active workers */
  double t, idle, wait, time_at[4], total, batches;
} sim;

static double noise(sim *s) {
  s->seed = s->seed * 1103515245u + 12345u;
  return ((double)(s->seed >> 8 & 0xffff) / 65535.0 * 2 - 1) * s->jitter;
}

/* Interval and idle worker-seconds of one batch made at level k with act
 * of the WORKERS active; work: the consumer's own seconds in it (it waits
 * the rest). */
static void batch_at(const sim *s, int k, int act, double *dt, double *idle, double *work) {
  double cpu = s->cpu * act / WORKERS;
  double eng = s->eng;
  double made = cpu * (1 - s->starve * k / 3) + k * eng, rate = made, take = 0;
  if (s->consumer > 0) {
    take = s->consumer * (1 - s->harm * k);
    if (take < 1)
      take = 1;
    rate = take < made ? take : made;
  }
  double cpu_share = rate - k * eng; /* the contexts take their fill first */
  double busy = cpu_share <= 0 ? 0 : cpu_share >= cpu ? 1 : cpu_share / cpu;
  *dt = 1 / rate;
  *idle = (1 - busy) * act * *dt;
  *work = take > 0 ? 1 / take : 0;
}

/* Runs secs simulated seconds in epochs of epoch_n batches (the first
 * RING of each refill the ring: slow, not counted). */
static void run(sim *s, fy_engine_ctl *c, double secs, int epoch_n) {
  double end = s->t + secs;
  for (int b = 0; s->t < end; b = (b + 1) % epoch_n) {
    int k = s->hist[0], act = s->hista[0];
    memmove(s->hist, s->hist + 1, (RING - 1) * sizeof s->hist[0]);
    memmove(s->hista, s->hista + 1, (RING - 1) * sizeof s->hista[0]);
    s->hist[RING - 1] = c->level;
    s->hista[RING - 1] = c->park ? c->active : WORKERS;
    double dt, idle, work;
    batch_at(s, k, act, &dt, &idle, &work);
    dt *= 1 + noise(s);
    if (b < RING)
      dt *= 3, idle = 0.5 * WORKERS * dt;
    s->t += dt;
    s->idle += idle;
    s->wait += dt > work ? dt - work : 0;
    s->time_at[c->level] += dt;
    s->total += dt;
    s->batches += b >= RING;
    fy_engine_ctl_step(c, s->t, s->idle, s->wait, WORKERS, b >= RING);
  }
}

static void reset_share(sim *s) {
  memset(s->time_at, 0, sizeof s->time_at);
  s->total = 0;
  s->batches = 0;
}

static double share(const sim *s, int level) { return s->time_at[level] / s->total; }

static void start(sim *s, fy_engine_ctl *c) {
  fy_engine_ctl_init(c, 3, RING);
  for (int i = 0; i < RING; i++)
    s->hist[i] = 3, s->hista[i] = WORKERS;
}

static void test_decode_bound(void) {
  sim s = {.cpu = 50, .eng = 25, .jitter = 0.1, .seed = 1};
  fy_engine_ctl c;
  start(&s, &c);
  CHECK(c.level == 3);
  run(&s, &c, 600, 40);
  CHECK_MSG(c.level == 3, "decode-bound: %d contexts", c.level);
  CHECK_MSG(share(&s, 3) > 0.99, "decode-bound: all contexts %.1f %% of the time",
            100 * share(&s, 3));
  CHECK_MSG(c.changes == 0, "decode-bound: %d changes", c.changes);
}

static void test_training(void) {
  /* ResNet-50 on an H100: about 19.4 batches/s, each context slowing it */
  sim s = {.cpu = 40, .eng = 25, .consumer = 19.4, .harm = 0.05, .jitter = 0.05, .seed = 2};
  fy_engine_ctl c;
  start(&s, &c);
  run(&s, &c, 10, 500);
  CHECK_MSG(c.level == 0, "training: %d contexts after 10 s", c.level);
  reset_share(&s);
  run(&s, &c, 1800, 500);
  CHECK_MSG(share(&s, 0) > 0.999, "training: no context only %.1f %% of the time",
            100 * share(&s, 0));
  CHECK(c.level == 0);
}

/* 30 s to settle, then 600 s measured: the changes in those 600 s. */
static int settled_run_from(sim *s, fy_engine_ctl *c) {
  run(s, c, 30, 200);
  reset_share(s);
  int changes = c->changes;
  run(s, c, 600, 200);
  return c->changes - changes;
}

static int settled_run(sim *s, fy_engine_ctl *c) {
  start(s, c);
  return settled_run_from(s, c);
}

static void test_loader_bound(void) {
  /* the step could take more than the cores make; one context helps, a
   * second slows the step more than it adds */
  sim s = {.cpu = 45, .eng = 10, .consumer = 62, .harm = 0.2, .jitter = 0.05, .seed = 3};
  fy_engine_ctl c;
  int changes = settled_run(&s, &c);
  CHECK_MSG(share(&s, 1) > 0.9, "loader-bound: one context %.1f %% of the time (0: %.1f, 2: %.1f)",
            100 * share(&s, 1), 100 * share(&s, 0), 100 * share(&s, 2));
  CHECK_MSG(changes <= 30, "%d changes in 600 s: failed trials do not back off", changes);
}

static void test_engine_hurts(void) {
  /* loader-bound, but any context slows the step below what the cores
   * alone deliver */
  sim s = {.cpu = 45, .eng = 10, .consumer = 62, .harm = 0.5, .jitter = 0.05, .seed = 4};
  fy_engine_ctl c;
  int changes = settled_run(&s, &c);
  CHECK_MSG(share(&s, 0) > 0.95, "no context only %.1f %% of the time", 100 * share(&s, 0));
  /* its trials fail, each next one later: 4, 8, ... 64 s apart */
  CHECK_MSG(c.backoff_s == 64.0, "backoff %.0f s", c.backoff_s);
  CHECK_MSG(changes >= 10 && changes <= 30, "%d changes in 600 s", changes);
}

static void test_starved_keeps_contexts(void) {
  /* decode-bound, every context on, the workers idle 40 % of the time
   * because the contexts' chunks hold the ring (2 ranks on an H200): a
   * context fewer would lose far more than the workers gain; its trials
   * fail and back off */
  sim s = {.cpu = 50, .eng = 25, .starve = 0.4, .jitter = 0.05, .seed = 8};
  fy_engine_ctl c;
  int changes = settled_run(&s, &c);
  CHECK_MSG(share(&s, 3) > 0.9, "starved: all contexts %.1f %% of the time (2: %.1f)",
            100 * share(&s, 3), 100 * share(&s, 2));
  CHECK_MSG(c.wait_frac > 0.9 && c.idle_frac > 0.3, "starved: waiting %.2f, idle %.2f", c.wait_frac,
            c.idle_frac);
  CHECK_MSG(c.down_backoff_s == 64.0, "starved: backoff %.0f s", c.down_backoff_s);
  CHECK_MSG(changes >= 10 && changes <= 30, "starved: %d changes in 600 s", changes);
}

static void test_starved_slow_engine(void) {
  /* the same idle workers, but contexts that add little: each stop on
   * trial pays, down to the cores alone */
  sim s = {.cpu = 50, .eng = 2, .starve = 0.8, .jitter = 0.05, .seed = 9};
  fy_engine_ctl c;
  int changes = settled_run(&s, &c);
  CHECK_MSG(share(&s, 0) > 0.9, "slow engine: no context %.1f %% of the time (1: %.1f)",
            100 * share(&s, 0), 100 * share(&s, 1));
  CHECK_MSG(changes <= 30, "slow engine: %d changes in 600 s", changes);
}

static void test_follows_change(void) {
  sim s = {.cpu = 40, .eng = 25, .consumer = 19.4, .harm = 0.05, .jitter = 0.05, .seed = 5};
  fy_engine_ctl c;
  start(&s, &c);
  run(&s, &c, 60, 300);
  CHECK(c.level == 0);
  s.consumer = 0; /* training ends; a decode-bound pass (an export) begins */
  run(&s, &c, 10, 300);
  CHECK_MSG(c.level == 3, "decode-bound again: %d contexts after 10 s", c.level);
}

static void test_pauses(void) {
  /* decode-bound, but the consumer stops for 5 s every 7th batch (the
   * ring fills, the workers idle): the pauses do not decide */
  fy_engine_ctl c;
  fy_engine_ctl_init(&c, 3, RING);
  double t = 0, idle = 0, wait = 0;
  int at3 = 0;
  for (int i = 0; i < 4000; i++) {
    double dt = 1 / (50.0 + 25 * c.level), di = 0, dw = dt; /* it waits, then is away */
    if (i % 7 == 6)
      dt = 5.0, di = 4.9 * WORKERS, dw = 0;
    t += dt;
    idle += di;
    wait += dw;
    fy_engine_ctl_step(&c, t, idle, wait, WORKERS, 1);
    at3 += c.level == 3;
  }
  CHECK_MSG(at3 > 3900, "pauses: all contexts for %d of 4000 batches (%d changes)", at3, c.changes);
}

static void test_uncounted(void) {
  fy_engine_ctl c;
  fy_engine_ctl_init(&c, 3, RING);
  for (int i = 0; i < 1000; i++) /* every worker idle, but never steady state */
    CHECK(fy_engine_ctl_step(&c, i * 0.01, i * 0.01 * WORKERS, i * 0.01, WORKERS, 0) == 0);
  CHECK(c.level == 3 && c.n == 0 && c.changes == 0);
  fy_engine_ctl_init(&c, 0, 0); /* no engine: nothing to decide */
  CHECK(c.settle == 1 && c.level == 0);
  for (int i = 0; i < 1000; i++)
    fy_engine_ctl_step(&c, i * 0.01, 0, 0, WORKERS, 1);
  CHECK(c.level == 0);
}

static void test_park_training(void) {
  /* the cores make 40 batches/s, the step takes 19.4: 5.8 of 12 workers busy */
  sim s = {.cpu = 40, .eng = 25, .consumer = 19.4, .harm = 0.05, .jitter = 0.05, .seed = 6};
  sim base = s; /* the same without parking: its rate (the epochs' refills included) */
  fy_engine_ctl c;
  start(&base, &c);
  run(&base, &c, 30, 500);
  reset_share(&base);
  run(&base, &c, 600, 500);
  start(&s, &c);
  CHECK(c.park == 0 && c.active == 0); /* off unless asked */
  fy_engine_ctl_park(&c, WORKERS);
  CHECK(c.park == 1 && c.active == WORKERS && c.workers == WORKERS);
  run(&s, &c, 30, 500);
  reset_share(&s);
  int changes = c.changes;
  run(&s, &c, 600, 500);
  CHECK_MSG(c.level == 0 && share(&s, 0) > 0.999, "park: %d contexts, none %.1f %% of the time",
            c.level, 100 * share(&s, 0));
  CHECK_MSG(c.active >= 6 && c.active <= 9, "park: %d of %d workers active", c.active, WORKERS);
  double rate = s.batches / s.total, rate0 = base.batches / base.total;
  CHECK_MSG(rate > 0.995 * rate0, "park: the step ran at %.2f batches/s, %.2f without", rate,
            rate0);
  CHECK_MSG(c.changes - changes <= 6, "park: %d changes in 600 s", c.changes - changes);
  s.consumer = 0; /* decode-bound again: every worker back, then every context */
  run(&s, &c, 10, 500);
  CHECK_MSG(c.active == WORKERS && c.level == 3,
            "park: after 10 s decode-bound %d workers, %d "
            "contexts",
            c.active, c.level);
}

static void test_park_decode_bound(void) {
  sim s = {.cpu = 50, .eng = 25, .jitter = 0.1, .seed = 7};
  fy_engine_ctl c;
  start(&s, &c);
  fy_engine_ctl_park(&c, WORKERS);
  run(&s, &c, 600, 40);
  CHECK_MSG(c.active == WORKERS && c.level == 3 && c.changes == 0,
            "park, decode-bound: %d workers, %d contexts, %d changes", c.active, c.level,
            c.changes);
  fy_engine_ctl_park(&c, 1); /* one worker: nothing to park */
  CHECK(c.park == 0);
}

/* ferry's default workers beside the engine's feeding threads (the figures
 * of engine_ctl.h): every core without the engine; a worker a core the
 * feeding threads leave past twice their number; one core more left free
 * up to it, never fewer than one worker. */
static void test_default_workers(void) {
  static const int want[][3] = {
      /* cores, feeding threads, workers */
      {16, 0, 16}, {1, 0, 1}, {0, 0, 1}, {32, 4, 28}, {16, 4, 12}, {9, 4, 5}, {8, 4, 3},
      {7, 4, 2},   {6, 4, 1}, {4, 4, 1}, {1, 4, 1},   {3, 1, 2},   {2, 1, 1},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int w = fy_engine_default_workers(want[i][0], want[i][1]);
    CHECK_MSG(w == want[i][2], "%d cores, %d feeding: %d workers, not %d", want[i][0], want[i][1],
              w, want[i][2]);
  }
  for (int feed = 1; feed <= 8; feed++)
    for (int cores = 1; cores <= 64; cores++) {
      int w = fy_engine_default_workers(cores, feed);
      CHECK_MSG(w >= 1 && w <= cores && w <= fy_engine_default_workers(cores + 1, feed),
                "%d cores, %d feeding threads: %d workers", cores, feed, w);
    }
}

int main(void) {
  test_default_workers();
  test_decode_bound();
  test_training();
  test_loader_bound();
  test_engine_hurts();
  test_starved_keeps_contexts();
  test_starved_slow_engine();
  test_follows_change();
  test_pauses();
  test_uncounted();
  test_park_training();
  test_park_decode_bound();
  return check_done();
}
