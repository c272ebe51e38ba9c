/* engine_ctl.h — how many JPEG engine contexts decode, from what the loader
 * measures. Pure arithmetic over the times it is given (no clock, no
 * locks), so it is tested on the CPU.
 *
 * The engine helps when decoding is the limit and hurts when the consumer
 * is (a training step: while the step holds the GPU each engine job takes
 * longer, a batch waits for its slowest chunk, and the step waits for its
 * batch; bench/CLAIMS.md C22). The sign is the CPU workers: while they sit
 * idle a quarter of the time the cores alone keep up, and a context stops
 * (two while they idle half the time; down to none). Not while the
 * consumer waits over half the time: then the workers idle because every
 * sample of the ring is claimed, the contexts' chunks in flight (2 ranks
 * decode-bound on 2 x H200, bench/CLAIMS.md C33), and a context stops on trial,
 * restarted if batches then come over 3 % slower (the next such trial
 * waits 4 s, doubling to 64 s). While the workers are never idle (under
 * 5 %) the loader is the limit and a context starts, on trial:
 * it stays only if batches then come at least 3 % faster; if not, it stops
 * and the next trial waits 4 s, doubling to 64 s. Windows of at least
 * 0.5 s and 8 batches, measured once the batches made before a change
 * have passed (the ring's length), and never across an epoch's refill of
 * the ring.
 *
 * Parking (fy_engine_ctl_park; the loader option park_workers, off by
 * default; a CPU loader has the controller with no context, for this
 * alone): once no
 * context decodes and the workers still idle over 30 % of the time, the
 * consumer is the limit and the loader parks the workers it does not need,
 * so that fewer threads decode at once beside the consumer's own and the
 * cores are free for other work (2 ranks of DDP training on 2 x H200 kept
 * 4 of 12 workers a rank active at the same step rate, no run faster;
 * bench/CLAIMS.md C33): as many stay as the window kept busy, over 0.85. When
 * the workers left are never idle, a quarter of all come back at once,
 * before any context is tried. */
#ifndef FY_ENGINE_CTL_H
#define FY_ENGINE_CTL_H

#define FY_CTL_MAX_DT 256 /* batch intervals kept per window */

typedef struct fy_engine_ctl {
  int level;                           /* contexts decoding (0: the CPU workers alone) */
  int max;                             /* contexts there are */
  int settle;                          /* batches after a change before measuring */
  int left;                            /* batches still to settle */
  int n;                               /* intervals in this window */
  double dt[FY_CTL_MAX_DT];            /* the window's batch intervals */
  double di[FY_CTL_MAX_DT];            /* worker-seconds idle in each */
  double dw[FY_CTL_MAX_DT];            /* seconds the consumer waited in each */
  double span;                         /* seconds they cover */
  double t_last, idle_last, wait_last; /* at the consumer's last request; t_last < 0: none */
  int trial; /* 1: a context started on trial, -1: one stopped; rate_before is the rate
                before */
  double rate_before;
  double no_up_until, backoff_s, no_down_until, down_backoff_s;
  double rate, idle_frac, wait_frac; /* the last window's: batches/s, idle share of the
                                        workers, share of the time the consumer waited */
  const char *why;                   /* the last change's reason, for messages */
  int changes;
  int park;    /* 1: park the workers the consumer does not need */
  int workers; /* CPU workers there are (with park) */
  int active;  /* of them, those that claim samples; the rest are parked */
} fy_engine_ctl;

/* ferry's default number of CPU workers on `cores` cores beside `feed`
 * threads feeding the JPEG engine (0: no engine, every core a worker).
 * The feeding threads are latency-bound: every core they wait for slows
 * the engine. Past 2 x feed cores, a worker a core they leave (16 cores,
 * 4 threads: 12 workers, 36,842-38,039 images/s on an H200 against
 * 33,603-36,184 with 8 or 10); up to it, one core more is left free, at
 * least one worker (8 cores: 3 workers, 31,169 / 31,185 images/s against
 * 24,014-25,873 with 7 and 29,292 for the engine alone; bench/CLAIMS.md
 * C16, 2026-11-29). */
int fy_engine_default_workers(int cores, int feed);

/* max contexts, starting with all of them (the ring's first fill is always
 * decode-bound); settle: the ring's length in batches. */
void fy_engine_ctl_init(fy_engine_ctl *c, int max, int settle);
/* Parks workers the consumer does not need, of `workers` (all active at
 * first). */
void fy_engine_ctl_park(fy_engine_ctl *c, int workers);
/* The consumer asks for a batch at time now (s); idle_s: the CPU workers'
 * idle time so far (summed, growing); wait_s: the consumer's time waiting
 * for batches so far (growing); workers: how many (with park: the
 * active ones, c->active, whatever is passed); counted = 0 where
 * the interval since the last request is not steady state (the ring's
 * first fill of an epoch). Returns 1 when the level or the active workers
 * changed. */
int fy_engine_ctl_step(fy_engine_ctl *c, double now, double idle_s, double wait_s, int workers,
                       int counted);

#endif
