/* engine_ctl.h — whether the JPEG engine's extra contexts should decode,
 * from the rate at which the consumer takes batches. Pure arithmetic over
 * the times it is given (no clock, no locks), so it is tested on the CPU.
 *
 * The loader decodes with one engine context and the CPU workers; two more
 * contexts help when decoding is the limit and hurt when the consumer is
 * (a training step: its batches wait for their slowest engine chunk while
 * the step holds the GPU). Which case holds is measured, not guessed: now
 * and then the controller takes the consumer's batch interval with the
 * extra contexts off and then on, keeps the faster (on only when clearly
 * faster), and holds it for an interval that doubles while the choice
 * stays the same. */
#ifndef FY_ENGINE_CTL_H
#define FY_ENGINE_CTL_H

#define FY_CTL_WINDOW 12 /* batch intervals measured per setting */

typedef struct fy_engine_ctl {
  int on;     /* the extra contexts decode */
  int settle; /* batches each setting runs before it is measured */
  int phase;  /* FY_CTL_* below */
  int left;   /* batches left to settle in this phase */
  int n;      /* intervals measured in this phase */
  double dt[FY_CTL_WINDOW];
  double rate[2]; /* measured batches/s with the extras off, on */
  double t_last;  /* when the consumer asked for its last counted batch; < 0 none */
  double until;   /* hold the choice until then */
  double hold_s;  /* the current hold */
  int chosen;     /* the last probe's choice */
  int probes;     /* probes finished (stats, tests) */
} fy_engine_ctl;

enum { FY_CTL_HOLD, FY_CTL_OFF, FY_CTL_ON };

/* settle: batches in flight when a setting changes (the ring's size). */
void fy_engine_ctl_init(fy_engine_ctl *c, int settle);
/* The consumer asks for a batch at time now (s); counted = 0 where the
 * interval since the last one is no steady-state interval (the ring's
 * first fill of an epoch). Returns 1 when the choice changed. */
int fy_engine_ctl_step(fy_engine_ctl *c, double now, int counted);

#endif
