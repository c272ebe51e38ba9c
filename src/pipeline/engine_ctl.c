/* engine_ctl.c — how many JPEG engine contexts decode (engine_ctl.h). */
#include "pipeline/engine_ctl.h"

#include <stdlib.h>
#include <string.h>

#define WINDOW_S 0.5    /* a window spans at least this long */
#define WINDOW_N 8      /* and this many batch intervals */
#define IDLE_DOWN 0.25  /* workers idle this share: one context fewer */
#define IDLE_DOWN2 0.5  /* this share: two fewer */
#define IDLE_UP 0.05    /* workers idle less: try one more */
#define GAIN 1.03       /* a context on trial must make batches this much faster */
#define BACKOFF_MIN 4.0 /* s before the next trial after a failed one; doubles */
#define BACKOFF_MAX 64.0
#define PARK_IDLE 0.30 /* no context on and the workers idle this share: park some */
#define PARK_BUSY 0.85 /* as many stay as the window's busy workers over this */
#define WAIT_BOUND 0.5 /* the consumer waits this share of the window: the loader is the limit */

static void new_window(fy_engine_ctl *c, int settle) {
  c->left = settle;
  c->n = 0;
  c->span = 0;
}

int fy_engine_default_workers(int cores, int feed) {
  if (cores < 1)
    cores = 1;
  if (feed <= 0)
    return cores;
  if (cores > 2 * feed)
    return cores - feed;
  return cores - feed - 1 > 1 ? cores - feed - 1 : 1;
}

void fy_engine_ctl_init(fy_engine_ctl *c, int max, int settle) {
  memset(c, 0, sizeof *c);
  c->max = max < 0 ? 0 : max;
  c->level = c->max;
  c->settle = settle < 1 ? 1 : settle;
  c->t_last = -1;
  c->backoff_s = c->down_backoff_s = BACKOFF_MIN;
  new_window(c, c->settle);
}

void fy_engine_ctl_park(fy_engine_ctl *c, int workers) {
  c->park = workers > 1;
  c->workers = c->active = workers;
}

static double doubled(double backoff) {
  return backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The window's batches per second, the workers' idle share and the
 * consumer's waiting share. An interval over 4 times the median is the
 * consumer away (a checkpoint, an evaluation: the ring fills and the
 * workers idle): it counts as 4 times the median towards the rate and not
 * at all towards the shares, so a pause does not decide. */
static void measure(fy_engine_ctl *c, int workers) {
  double s[FY_CTL_MAX_DT], sum = 0, idle = 0, wait = 0;
  memcpy(s, c->dt, (size_t)c->n * sizeof s[0]);
  qsort(s, (size_t)c->n, sizeof s[0], cmp_double);
  double cap = 4 * s[c->n / 2];
  for (int i = 0; i < c->n; i++) {
    sum += c->dt[i] > cap ? cap : c->dt[i];
    idle += c->dt[i] > cap ? 0 : c->di[i];
    wait += c->dt[i] > cap ? 0 : c->dw[i];
  }
  c->rate = sum > 0 ? c->n / sum : 1e9;
  c->idle_frac = workers > 0 && sum > 0 ? idle / (sum * workers) : 0;
  c->wait_frac = sum > 0 ? wait / sum : 0;
}

/* A change on trial is kept only if it paid: a context started, batches
 * at least GAIN faster; a context stopped while the loader is the limit,
 * batches no more than GAIN slower. Else it is undone and the next trial
 * that way waits, doubling. */
static void judge_trial(fy_engine_ctl *c, double now) {
  int up = c->trial > 0;
  c->trial = 0;
  int paid = up ? c->rate >= c->rate_before * GAIN : c->rate * GAIN >= c->rate_before;
  double *backoff = up ? &c->backoff_s : &c->down_backoff_s;
  if (paid) {
    *backoff = BACKOFF_MIN;
    return;
  }
  c->level += up ? -1 : 1;
  c->why = up ? "the context on trial did not pay" : "the context stopped on trial was needed";
  *(up ? &c->no_up_until : &c->no_down_until) = now + *backoff;
  *backoff = doubled(*backoff);
}

static int decide(fy_engine_ctl *c, double now) {
  int was = c->level, was_active = c->active;
  int loader_bound = c->wait_frac > WAIT_BOUND;
  if (c->trial) {
    judge_trial(c, now);
  } else if (c->park && c->idle_frac < IDLE_UP && c->active < c->workers) {
    /* the parked workers first: the cores are there */
    c->active += (c->workers + 3) / 4;
    if (c->active > c->workers)
      c->active = c->workers;
    c->why = "the loader is the limit: parked CPU workers back";
  } else if (c->idle_frac < IDLE_UP && c->level < c->max && now >= c->no_up_until) {
    c->rate_before = c->rate;
    c->level++;
    c->trial = 1;
    c->why = "the loader is the limit: one more on trial";
  } else if (c->idle_frac > IDLE_DOWN && c->level > 0 && loader_bound) {
    /* idle workers while the consumer waits: the ring's samples are all
     * claimed (the contexts' chunks in flight), so the cores do not keep
     * up; whether a context fewer helps is measured, not assumed */
    if (now >= c->no_down_until) {
      c->rate_before = c->rate;
      c->level--;
      c->trial = -1;
      c->why = "the CPU workers idle while the consumer waits: one fewer on trial";
    }
  } else if (c->idle_frac > IDLE_DOWN && c->level > 0) {
    c->level -= c->idle_frac > IDLE_DOWN2 && c->level > 1 ? 2 : 1;
    c->why = "the CPU workers keep up";
  } else if (c->park && !loader_bound && c->level == 0 && c->idle_frac > PARK_IDLE &&
             c->active > 1) {
    double busy = c->active * (1 - c->idle_frac);
    int keep = (int)(busy / PARK_BUSY) + 1;
    c->active = keep < 1 ? 1 : keep < c->active ? keep : c->active - 1;
    c->why = "the consumer is the limit: CPU workers parked";
  }
  return c->level != was || c->active != was_active;
}

int fy_engine_ctl_step(fy_engine_ctl *c, double now, double idle_s, double wait_s, int workers,
                       int counted) {
  double dt = c->t_last >= 0 ? now - c->t_last : -1, di = idle_s - c->idle_last;
  double dw = wait_s - c->wait_last;
  c->t_last = counted ? now : -1;
  c->idle_last = idle_s;
  c->wait_last = wait_s;
  if (!counted || dt < 0)
    return 0;
  if (c->left > 0) { /* batches made before the last change still arrive */
    c->left--;
    return 0;
  }
  c->dt[c->n] = dt;
  c->dw[c->n] = dw;
  c->di[c->n++] = di;
  c->span += dt;
  if ((c->n < WINDOW_N || c->span < WINDOW_S) && c->n < FY_CTL_MAX_DT)
    return 0;
  measure(c, c->park ? c->active : workers);
  int changed = decide(c, now);
  c->changes += changed;
  new_window(c, changed ? c->settle : 0);
  return changed;
}
