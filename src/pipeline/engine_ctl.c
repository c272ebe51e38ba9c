/* engine_ctl.c — the extra JPEG engine contexts, on or off by measured
 * consumer rate (engine_ctl.h). */
#include "pipeline/engine_ctl.h"

#include <stdlib.h>
#include <string.h>

#define HOLD_MIN_S 4.0  /* first hold after a probe that changed the choice */
#define HOLD_MAX_S 64.0 /* holds double up to this while the choice stays */
#define ON_GAIN 1.03    /* on must be this much faster: off costs the GPU less */

void fy_engine_ctl_init(fy_engine_ctl *c, int settle) {
  memset(c, 0, sizeof *c);
  c->settle = settle < 1 ? 1 : settle;
  c->t_last = -1;
  c->hold_s = HOLD_MIN_S;
  c->phase = FY_CTL_OFF; /* probe at once: off, then on */
  c->left = c->settle;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Batches per second over the phase: the median interval, so that one
 * pause of the consumer's own (a checkpoint, an evaluation) does not
 * decide. */
static double phase_rate(fy_engine_ctl *c) {
  qsort(c->dt, (size_t)c->n, sizeof c->dt[0], cmp_double);
  double med = c->dt[c->n / 2];
  return med > 0 ? 1.0 / med : 1e9;
}

static void start_phase(fy_engine_ctl *c, int phase) {
  c->phase = phase;
  c->left = c->settle;
  c->n = 0;
}

int fy_engine_ctl_step(fy_engine_ctl *c, double now, int counted) {
  int was = c->on;
  double dt = c->t_last >= 0 ? now - c->t_last : -1;
  c->t_last = counted ? now : -1;
  if (!counted || dt < 0)
    return 0;
  if (c->phase == FY_CTL_HOLD) {
    if (now >= c->until) {
      start_phase(c, FY_CTL_OFF);
      c->on = 0;
    }
    return c->on != was;
  }
  c->on = c->phase == FY_CTL_ON;
  if (c->left > 0) { /* batches made under the last setting still arrive */
    c->left--;
    return c->on != was;
  }
  c->dt[c->n++] = dt;
  if (c->n < FY_CTL_WINDOW)
    return c->on != was;
  c->rate[c->phase == FY_CTL_ON] = phase_rate(c);
  if (c->phase == FY_CTL_OFF) {
    start_phase(c, FY_CTL_ON);
    c->on = 1;
    return c->on != was;
  }
  int choice = c->rate[1] > c->rate[0] * ON_GAIN;
  int same = c->probes > 0 && choice == c->chosen;
  c->hold_s = same ? (c->hold_s * 2 > HOLD_MAX_S ? HOLD_MAX_S : c->hold_s * 2) : HOLD_MIN_S;
  c->chosen = choice;
  c->on = choice;
  c->probes++;
  c->phase = FY_CTL_HOLD;
  c->until = now + c->hold_s;
  return c->on != was;
}
