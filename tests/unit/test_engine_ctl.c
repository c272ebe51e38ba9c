/* test_engine_ctl.c — the controller of the extra JPEG engine contexts
 * (src/pipeline/engine_ctl.c), on simulated consumers: the batch interval
 * a consumer sees depends on the setting in force a ring's length earlier.
 * Decode-bound (on is faster) it settles on, a training step (on is
 * slower) off, a tie off; one long pause of the consumer's or an epoch's
 * refill does not decide; a consumer that changes is followed; holds
 * double while the choice stays. */
#include "check.h"
#include "pipeline/engine_ctl.h"

#include <math.h>
#include <string.h>

#define RING 4

typedef struct sim {
  double off_dt, on_dt; /* batch interval with the extras off, on (s) */
  double jitter;        /* +- fraction of the interval */
  unsigned seed;
  int hist[RING]; /* settings of the last RING batches */
  double t, on_s, total_s;
  int changes;
} sim;

static double noise(sim *s) {
  s->seed = s->seed * 1103515245u + 12345u;
  return ((double)(s->seed >> 8 & 0xffff) / 65535.0 * 2 - 1) * s->jitter;
}

/* Runs the consumer for secs simulated seconds, an epoch of epoch_n
 * batches at a time (the first RING of each not counted). */
static void run(sim *s, fy_engine_ctl *c, double secs, int epoch_n) {
  double end = s->t + secs;
  for (int b = 0; s->t < end; b = (b + 1) % epoch_n) {
    int made_on = s->hist[0];
    memmove(s->hist, s->hist + 1, (RING - 1) * sizeof s->hist[0]);
    s->hist[RING - 1] = c->on;
    double dt = (made_on ? s->on_dt : s->off_dt) * (1 + noise(s));
    if (b < RING)
      dt *= 3; /* the refill at an epoch's start: slow, never counted */
    s->t += dt;
    s->total_s += dt;
    s->on_s += c->on ? dt : 0;
    s->changes += fy_engine_ctl_step(c, s->t, b >= RING);
  }
}

static void test_decode_bound(void) {
  sim s = {.off_dt = 1 / 60.0, .on_dt = 1 / 100.0, .jitter = 0.1, .seed = 1};
  fy_engine_ctl c;
  fy_engine_ctl_init(&c, RING);
  CHECK(c.on == 0);
  run(&s, &c, 600, 40);
  CHECK_MSG(c.on == 1, "decode-bound: extras left %s", c.on ? "on" : "off");
  CHECK_MSG(s.on_s / s.total_s > 0.97, "decode-bound: extras on %.1f %% of the time",
            100 * s.on_s / s.total_s);
  CHECK_MSG(c.hold_s == 64.0, "hold %.0f s after many equal choices", c.hold_s);
  CHECK_MSG(c.rate[1] > c.rate[0] * 1.4, "rates off %.1f on %.1f", c.rate[0], c.rate[1]);
  CHECK_MSG(c.probes >= 5 && c.probes <= 30, "%d probes in 600 s", c.probes);
}

static void test_training(void) {
  /* ResNet-50 on an H100: about 51 ms a step with the extras off, 58 ms on */
  sim s = {.off_dt = 0.0515, .on_dt = 0.058, .jitter = 0.05, .seed = 2};
  fy_engine_ctl c;
  fy_engine_ctl_init(&c, RING);
  run(&s, &c, 1800, 500);
  CHECK_MSG(c.on == 0, "training: extras left on");
  CHECK_MSG(s.on_s / s.total_s < 0.03, "training: extras on %.1f %% of the time",
            100 * s.on_s / s.total_s);
}

static void test_tie(void) {
  sim s = {.off_dt = 0.02, .on_dt = 0.0198, .jitter = 0.02, .seed = 3};
  fy_engine_ctl c;
  fy_engine_ctl_init(&c, RING);
  run(&s, &c, 300, 100);
  CHECK_MSG(s.on_s / s.total_s < 0.05, "1 %% faster: extras on %.1f %% of the time",
            100 * s.on_s / s.total_s);
}

static void test_pause_and_refill(void) {
  /* decode-bound, but every window holds a long pause (an evaluation)
   * and tiny epochs refill the ring often: the median still decides */
  fy_engine_ctl c;
  fy_engine_ctl_init(&c, RING);
  double t = 0;
  int settled = 0;
  for (int i = 0; i < 4000; i++) {
    int b = i % 9; /* 9-batch epochs: 5 counted intervals each */
    double dt = (c.on ? 0.01 : 0.02) * (b < RING ? 5 : 1);
    if (i % 7 == 6)
      dt = 5.0; /* the consumer away */
    t += dt;
    fy_engine_ctl_step(&c, t, b >= RING);
    settled += c.probes > 0 && c.on;
  }
  CHECK_MSG(c.probes >= 1, "no probe finished (%d)", c.probes);
  CHECK_MSG(c.on == 1, "pauses decided: extras off (off %.1f, on %.1f batches/s)", c.rate[0],
            c.rate[1]);
  CHECK_MSG(settled > 2000, "extras on for %d of 4000 batches", settled);
}

static void test_follows_change(void) {
  sim s = {.off_dt = 1 / 60.0, .on_dt = 1 / 100.0, .jitter = 0.05, .seed = 4};
  fy_engine_ctl c;
  fy_engine_ctl_init(&c, RING);
  run(&s, &c, 300, 200);
  CHECK(c.on == 1);
  /* the consumer becomes a training step */
  s.off_dt = 0.05, s.on_dt = 0.06;
  s.on_s = s.total_s = 0;
  run(&s, &c, 70, 200); /* at most one 64 s hold, then a probe */
  CHECK_MSG(c.on == 0, "did not follow the consumer: extras still on");
  s.on_s = s.total_s = 0;
  run(&s, &c, 600, 200);
  CHECK_MSG(s.on_s / s.total_s < 0.03, "after the change: extras on %.1f %% of the time",
            100 * s.on_s / s.total_s);
}

static void test_uncounted(void) {
  fy_engine_ctl c;
  fy_engine_ctl_init(&c, RING);
  for (int i = 0; i < 1000; i++)
    CHECK(fy_engine_ctl_step(&c, i * 0.01, 0) == 0);
  CHECK(c.on == 0 && c.probes == 0 && c.n == 0);
  /* a settle of less than one batch still waits one */
  fy_engine_ctl_init(&c, 0);
  CHECK(c.settle == 1);
}

int main(void) {
  test_decode_bound();
  test_training();
  test_tie();
  test_pause_and_refill();
  test_follows_change();
  test_uncounted();
  return check_done();
}
