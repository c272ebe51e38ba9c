/* ring.h — the loader's bounded ring of batch slots, its claims and its
 * mutex.
 *
 * Free slots take the epoch's batch numbers in order, as they are freed (a
 * batch the consumer keeps only takes its own slot out of the ring, also
 * across epochs). Threads claim sample positions in order; a position can
 * only be claimed once its batch has a slot. The thread that finishes a
 * batch's last sample completes it and marks it ready. The consumer takes
 * batches in order and releases them in any order.
 *
 * Locking. `mu` guards every field of fy_ring but the geometry (nslots,
 * batch_size, epoch_n, num_batches, slots[] and on_assign: set by the
 * loader's open before any thread starts, read-only after). Functions marked (mu held) expect it
 * held; none takes it. The same mutex guards the loader's state marked
 * (mu) in loader_int.h (stats, epoch, the watchdog's clock, live threads,
 * the engine control): callers lock r->mu themselves and act on ring and
 * loader state in one critical section. Outside ring.c, ring fields are
 * read with mu held and changed only through these functions, but for
 * error / error_msg, which the watchdog (watch.c) also sets. work_cv wakes
 * claiming threads (a slot or an epoch became available, stop); ready_cv
 * the consumer and ferry_loader_close (a batch became ready, a sample
 * failed, an epoch drained, a thread left); it runs on CLOCK_MONOTONIC,
 * the watchdog's clock. A slot's samples are written by the threads that
 * claimed them, without mu; the one that finishes the last completes the
 * batch, also without mu, and holds no lock while it does.
 *
 * The next epoch ahead. Once every batch of the epoch has a slot, the
 * slots freed after that take the first batches of the epoch the loader
 * expects next (fy_ring_ahead), so that the consumer does not wait for a
 * whole batch when it starts that epoch: such a slot is `ahead`, claims go
 * to it only when every position of the epoch is claimed, and the consumer
 * is not given it. Starting that epoch keeps those slots and their
 * positions (fy_ring_promote); starting another one discards them, as it
 * does the rest (fy_ring_start_epoch). A slot carries its epoch and that
 * epoch's order, which is what its samples read. */
#ifndef FY_RING_H
#define FY_RING_H

#include "ferry.h"
#include "pipeline/fill.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct fy_note;

enum slot_state { SLOT_FILLING, SLOT_READY, SLOT_HELD };

typedef struct slot {
  ferry_batch batch;
  int64_t number; /* batch of the epoch assigned to this slot, -1 none */
  int state;
  int done;        /* samples finished (ok or failed) */
  int expected;    /* its own samples claimed or to claim (with filling, the tail: 0) */
  uint8_t *failed; /* per position: 1 when the file was skipped */
  int32_t *labels;
  int64_t *indices;
  void *data;
  int id; /* index in the ring */
  /* the batch's epoch, and that epoch's sample order (position -> index);
   * ahead: of the epoch after the one the consumer takes (mu) */
  int epoch;
  const int64_t *order;
  int ahead;
} slot;

typedef struct fy_ring {
  pthread_mutex_t mu;
  pthread_cond_t work_cv;  /* claimers: a slot or an epoch became available */
  pthread_cond_t ready_cv; /* consumer: a batch became ready; epoch drained */
  /* geometry */
  int nslots;
  slot *slots;
  int batch_size;
  int64_t epoch_n;     /* samples in this rank's epoch */
  int64_t num_batches; /* planned: an upper bound when files are skipped */
  /* Filling (fill.h): on with on_error=skip, holes of a batch take the
   * pool's samples; share_n: the rank's samples in the order, the tail
   * drop_last leaves out included (the first pool) */
  int fill_on;
  int drop_last;
  int64_t share_n;
  /* Called (mu held) when a slot takes a new batch: the GPU's per-batch
   * state (device.c); NULL: nothing. */
  void (*on_assign)(void *user, slot *s);
  void *on_assign_user;
  /* claims (mu) */
  int stop;            /* the loader closes: claims return -1 */
  int epoch_active;    /* 0 between epochs (and while one drains) */
  int64_t next_pos;    /* next sample position to claim */
  int64_t next_batch;  /* next batch the consumer takes */
  int64_t next_assign; /* next batch to give a free slot */
  int inflight;        /* samples claimed, not finished (a completing batch's last too) */
  int held;            /* batches handed out, not released */
  int error;           /* the epoch's first error: claims stop, the consumer gets it */
  char error_msg[4096];
  int epoch;            /* the epoch the consumer takes, -1 before the first */
  const int64_t *order; /* its order */
  /* the next epoch ahead (mu): its number (-1: none), order, next position
   * to claim and next batch to give a slot, and its first error, which
   * becomes the epoch's when it starts */
  int ahead_epoch;
  const int64_t *ahead_order;
  int64_t ahead_pos, ahead_assign;
  int ahead_error;
  char ahead_error_msg[4096];
  /* the epoch whose order a claiming thread should make, once the epoch
   * has no position left to claim (-1: none), and whether one does */
  int ahead_want;
  int ahead_busy;
  /* the fill of the epoch and of the epoch ahead (mu), and whether a
   * thread settles a batch now (batches settle one at a time, in order) */
  fy_fill fill, ahead_fill;
  int settling;
  /* waits to claim (mu) */
  double idle_s;   /* every thread's, summed (ferry_stats.idle_s) */
  int idle_n;      /* CPU workers idle now */
  double idle_acc; /* their idle seconds, summed, up to idle_t */
  double idle_t;
} fy_ring;

/* Initialises the mutex and conditions (the slots come with
 * fy_ring_alloc). */
void fy_ring_init(fy_ring *r);
/* Allocates nslots slots of batch_size samples, each with a page-aligned
 * host buffer of `bytes` when host (on a GPU, batches live in device
 * memory); FERRY_OK or FERRY_ENOMEM (error set). */
int fy_ring_alloc(fy_ring *r, size_t bytes, int host);
/* Frees the slots and destroys the mutex and conditions. */
void fy_ring_free(fy_ring *r);

/* Samples in batch b of the epoch. */
int fy_ring_batch_count(const fy_ring *r, int64_t b);
/* The slot that carries batch b of this epoch (not the one ahead), or
 * NULL when no slot was free for it yet (mu held). */
slot *fy_ring_slot_of(fy_ring *r, int64_t b);
/* Gives slot s the next batch of the epoch, else of the epoch ahead, or
 * none (mu held). */
void fy_ring_assign(fy_ring *r, slot *s);

/* Claims up to max positions of one batch (mu held; waits on work_cv
 * while there are none, noting the thread idle in `note`, and counting its
 * wait as a CPU worker's when `worker`); returns the first position and
 * sets *out and *n, or -1 once the ring stops, or FY_CLAIM_AHEAD: the
 * caller makes the order of epoch ahead_want, without mu, then calls
 * fy_ring_ahead (ahead_busy is set meanwhile). */
#define FY_CLAIM_AHEAD (-2)
/* ... or FY_CLAIM_SETTLE: the caller settles the batch fy_ring_to_settle
 * gives (run_sample.c: fy_settle), in flight meanwhile. */
#define FY_CLAIM_SETTLE (-3)
int64_t fy_ring_claim(fy_ring *r, struct fy_note *note, int worker, int max, slot **out, int *n);
/* Batches this epoch delivers at most, as it stands (mu held). */
int64_t fy_ring_batches(const fy_ring *r);
/* The fill of slot s's epoch (mu held). */
fy_fill *fy_ring_fill_of(fy_ring *r, const slot *s);
/* The slot whose batch settles next, all its own samples done, or NULL
 * (mu held); frees on the way the slots of batches the epoch gave up. */
slot *fy_ring_to_settle(fy_ring *r);
/* After the fill of slot s's epoch changed (a batch given up, the epoch
 * ended early): slots of batches past the bound expect only the samples
 * claimed already, and are freed once those are done (mu held). */
void fy_ring_refit(fy_ring *r, const slot *s);
/* 1 while samples of a batch the epoch gave up are still in flight (mu
 * held): its slot keeps the epoch's number and order until they finish,
 * so the epoch ahead is promoted only after (fy_ring_promote). */
int fy_ring_given_up_in_flight(const fy_ring *r);
/* Slot s's own samples are all done and its batch waits to settle (mu
 * held): wakes the claiming threads, and the consumer when the batch was
 * given up (an epoch start may wait for it). */
void fy_ring_settle_ready(fy_ring *r, const slot *s);
/* The CPU workers' idle seconds so far, summed (mu held). */
double fy_ring_workers_idle_s(const fy_ring *r, double now);

/* The epoch fails with rc (nonzero) and ferry_last_error()'s message,
 * unless it failed already (mu held). */
void fy_ring_fail(fy_ring *r, int rc);
/* The same for slot s's epoch: the next one's error waits until it starts
 * (mu held). */
void fy_ring_fail_at(fy_ring *r, const slot *s, int rc);
/* A sample of slot s finished (mu held): 1 when it was the batch's last,
 * the caller then completes the batch (it stays in flight meanwhile). */
int fy_ring_sample_done(fy_ring *r, slot *s);
/* Slot s's batch is complete (mu held). */
void fy_ring_batch_ready(fy_ring *r, slot *s);
/* A claimed sample is out of flight (mu held): wakes the consumer when it
 * may be waiting for this one (its batch completed, it failed, or it was
 * the last in flight of a draining epoch). */
void fy_ring_sample_out(fy_ring *r, int complete, int rc);

/* A new epoch, with its order (mu held; nothing in flight): positions and
 * the error restart, the epoch ahead is dropped, every slot not held takes
 * a batch (held ones join when released), claims resume. */
void fy_ring_start_epoch(fy_ring *r, int epoch, const int64_t *order);
/* The epoch ahead becomes the epoch (mu held; none of the epoch's samples
 * in flight): its slots, positions and error stay, the other slots not
 * held take its next batches, claims resume. */
void fy_ring_promote(fy_ring *r);
/* Asks for the epoch ahead: a claiming thread makes its order once the
 * epoch has no position left (mu held). */
void fy_ring_want_ahead(fy_ring *r, int epoch);
/* The order of the epoch asked for is made: slots freed once every batch
 * of the epoch has one take its batches (mu held). */
void fy_ring_ahead(fy_ring *r, int epoch, const int64_t *order);
/* Claims stop until the next epoch starts (mu held). */
void fy_ring_end_epoch(fy_ring *r);
/* Claims stop for good (mu held). */
void fy_ring_stop(fy_ring *r);

/* The slot of the batch the consumer takes next (mu held), or NULL with
 * *rc FERRY_END after the epoch's last, or an error (error set) when every
 * slot is held. */
slot *fy_ring_next(fy_ring *r, int *rc);
/* The consumer takes slot s's batch, ready (mu held). */
void fy_ring_take(fy_ring *r, slot *s);
/* The held slot whose batch is b, or NULL (mu held). */
slot *fy_ring_held(fy_ring *r, const ferry_batch *b);
/* The consumer gives held slot s back: it takes the next batch (mu held). */
void fy_ring_put_back(fy_ring *r, slot *s);

#endif
