/* ring.c — the loader's bounded ring of batch slots (ring.h). */
#include "pipeline/ring.h"

#include "core/internal.h"
#include "pipeline/pipeline.h"

#include <stdio.h>
#include <stdlib.h>

void fy_ring_init(fy_ring *r) {
  r->epoch = r->ahead_epoch = r->ahead_want = -1;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->work_cv, NULL);
  if (fy_watch_cond_init(&r->ready_cv) != 0)
    pthread_cond_init(&r->ready_cv, NULL);
}

int fy_ring_alloc(fy_ring *r, size_t bytes, int host) {
  size_t B = (size_t)r->batch_size;
  r->slots = calloc((size_t)r->nslots, sizeof *r->slots);
  if (!r->slots)
    return fy_error(FERRY_ENOMEM, "loader: out of memory");
  for (int i = 0; i < r->nslots; i++) {
    slot *s = &r->slots[i];
    s->number = -1;
    s->id = i;
    /* Page-aligned so the buffer can be pinned or handed to DLPack. On a
     * GPU the batch lives in device memory instead (device.c). */
    s->data = host ? aligned_alloc(4096, bytes) : NULL;
    s->failed = calloc(B, 1);
    s->labels = calloc(B, sizeof *s->labels);
    s->indices = calloc(B, sizeof *s->indices);
    if ((!s->data && host) || !s->failed || !s->labels || !s->indices)
      return fy_error(FERRY_ENOMEM, "loader: out of memory for %d batches of %zu bytes", r->nslots,
                      bytes);
  }
  return FERRY_OK;
}

void fy_ring_free(fy_ring *r) {
  for (int i = 0; r->slots && i < r->nslots; i++) {
    free(r->slots[i].data);
    free(r->slots[i].failed);
    free(r->slots[i].labels);
    free(r->slots[i].indices);
  }
  free(r->slots);
  r->slots = NULL;
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->work_cv);
  pthread_cond_destroy(&r->ready_cv);
}

int fy_ring_batch_count(const fy_ring *r, int64_t b) {
  int64_t start = b * r->batch_size, left = r->epoch_n - start;
  return (int)(left < r->batch_size ? left : r->batch_size);
}

/* Slots take batch numbers in order as they are freed, so a batch the
 * consumer keeps only takes its slot out of the ring. */
static slot *slot_of(fy_ring *r, int64_t b, int ahead) {
  for (int i = 0; i < r->nslots; i++)
    if (r->slots[i].number == b && r->slots[i].ahead == ahead)
      return &r->slots[i];
  return NULL;
}

slot *fy_ring_slot_of(fy_ring *r, int64_t b) { return slot_of(r, b, 0); }

int64_t fy_ring_batches(const fy_ring *r) {
  return r->fill_on ? fy_fill_batches(&r->fill) : r->num_batches;
}

fy_fill *fy_ring_fill_of(fy_ring *r, const slot *s) { return s->ahead ? &r->ahead_fill : &r->fill; }

/* Positions claims may take: the batches' own (the rest is the pool's). */
static int64_t own_end(const fy_ring *r, int ahead) {
  return r->fill_on ? fy_fill_own_end(ahead ? &r->ahead_fill : &r->fill) : r->epoch_n;
}

/* Slot s's own samples: those claimed, and those claims may still take. */
static int own_expected(const fy_ring *r, const slot *s) {
  int64_t start = s->number * r->batch_size, next = s->ahead ? r->ahead_pos : r->next_pos;
  int64_t end = own_end(r, s->ahead), claimed = next - start;
  if (end > next)
    claimed = end - start;
  return claimed <= 0 ? 0 : claimed >= r->batch_size ? r->batch_size : (int)claimed;
}

void fy_ring_refit(fy_ring *r, const slot *s) {
  for (int i = 0; i < r->nslots; i++) {
    slot *t = &r->slots[i];
    if (t != s && t->number >= 0 && t->ahead == s->ahead && t->state == SLOT_FILLING &&
        t->number >= fy_fill_own_end(fy_ring_fill_of(r, t)) / r->batch_size)
      t->expected = own_expected(r, t);
  }
}

int fy_ring_given_up_in_flight(const fy_ring *r) {
  for (int i = 0; r->fill_on && i < r->nslots; i++) {
    const slot *t = &r->slots[i];
    if (!t->ahead && t->state == SLOT_FILLING && t->number >= fy_ring_batches(r) &&
        t->done < t->expected)
      return 1;
  }
  return 0;
}

void fy_ring_settle_ready(fy_ring *r, const slot *s) {
  pthread_cond_broadcast(&r->work_cv);
  if (!s->ahead && s->number >= fy_ring_batches(r))
    pthread_cond_broadcast(&r->ready_cv);
}

slot *fy_ring_to_settle(fy_ring *r) {
  if (!r->fill_on || !r->epoch_active || r->stop)
    return NULL;
  slot *found = NULL;
  for (int i = 0; i < r->nslots; i++) {
    slot *t = &r->slots[i];
    if (t->number < 0 || t->state != SLOT_FILLING || t->done != t->expected)
      continue;
    if (t->ahead && (r->ahead_epoch < 0 || r->ahead_error))
      continue;
    fy_fill *f = fy_ring_fill_of(r, t);
    if (t->number >= fy_fill_batches(f)) {
      fy_ring_assign(r, t); /* a batch the epoch gave up: the slot takes another */
      i = -1;               /* (which may be done already: look again) */
      found = NULL;
      pthread_cond_broadcast(&r->work_cv);
    } else if (t->number == f->settled && (!found || (found->ahead && !t->ahead))) {
      found = t;
    }
  }
  return found;
}

void fy_ring_assign(fy_ring *r, slot *s) {
  s->ahead = 0;
  if (r->next_assign < fy_ring_batches(r)) {
    s->number = r->next_assign++;
    s->epoch = r->epoch;
    s->order = r->order;
  } else if (r->ahead_epoch >= 0 &&
             r->ahead_assign < (r->fill_on ? fy_fill_batches(&r->ahead_fill) : r->num_batches)) {
    s->number = r->ahead_assign++;
    s->epoch = r->ahead_epoch;
    s->order = r->ahead_order;
    s->ahead = 1;
  } else {
    s->number = -1;
  }
  s->state = SLOT_FILLING;
  s->done = 0;
  s->expected = s->number < 0 ? 0
                : r->fill_on  ? own_expected(r, s)
                              : fy_ring_batch_count(r, s->number);
  if (r->on_assign)
    r->on_assign(r->on_assign_user, s);
}

/* The CPU workers' idle time, integrated as their number idle changes. */
static void workers_idle(fy_ring *r, double now, int delta) {
  r->idle_acc = fy_ring_workers_idle_s(r, now);
  r->idle_t = now;
  r->idle_n += delta;
}

/* Up to max positions from *next on, all of one batch, when that batch
 * has a slot (of the epoch ahead or not): the first, or -1. */
static int64_t claim_from(fy_ring *r, int64_t *next, int ahead, int max, slot **out, int *n) {
  int64_t b = *next / r->batch_size;
  slot *s = slot_of(r, b, ahead);
  if (!s || s->state != SLOT_FILLING)
    return -1;
  int64_t end = (b + 1) * r->batch_size, pos = *next;
  if (end > own_end(r, ahead))
    end = own_end(r, ahead);
  *n = (int)(end - pos < max ? end - pos : max);
  *out = s;
  r->inflight += *n;
  *next += *n;
  return pos;
}

int64_t fy_ring_claim(fy_ring *r, struct fy_note *note, int worker, int max, slot **out, int *n) {
  for (;;) {
    if (r->stop)
      return -1;
    int64_t pos = -1;
    if (!r->settling && fy_ring_to_settle(r)) {
      r->settling = 1;
      r->inflight++;
      return FY_CLAIM_SETTLE;
    }
    if (r->epoch_active && r->next_pos < own_end(r, 0)) {
      if (!r->error)
        pos = claim_from(r, &r->next_pos, 0, max, out, n);
    } else if (r->epoch_active && r->ahead_want >= 0 && !r->ahead_busy) {
      r->ahead_busy = 1; /* the epoch's every position is claimed: make the next one's order */
      return FY_CLAIM_AHEAD;
    } else if (r->epoch_active && r->ahead_epoch >= 0 && !r->ahead_error &&
               r->ahead_pos < own_end(r, 1)) {
      pos = claim_from(r, &r->ahead_pos, 1, max, out, n);
    }
    if (pos >= 0)
      return pos;
    fy_note_set(note, FY_STAGE_IDLE, NULL, 0);
    double t0 = fy_now();
    if (worker)
      workers_idle(r, t0, 1);
    pthread_cond_wait(&r->work_cv, &r->mu);
    double t1 = fy_now();
    r->idle_s += t1 - t0;
    if (worker)
      workers_idle(r, t1, -1);
  }
}

double fy_ring_workers_idle_s(const fy_ring *r, double now) {
  return r->idle_acc + r->idle_n * (now - r->idle_t);
}

void fy_ring_fail(fy_ring *r, int rc) {
  if (!r->error) {
    r->error = rc;
    snprintf(r->error_msg, sizeof r->error_msg, "%s", ferry_last_error());
  }
}

void fy_ring_fail_at(fy_ring *r, const slot *s, int rc) {
  if (!s->ahead) {
    fy_ring_fail(r, rc);
  } else if (!r->ahead_error) {
    r->ahead_error = rc;
    snprintf(r->ahead_error_msg, sizeof r->ahead_error_msg, "%s", ferry_last_error());
  }
}

int fy_ring_sample_done(fy_ring *r, slot *s) {
  (void)r;
  return ++s->done == s->expected;
}

void fy_ring_batch_ready(fy_ring *r, slot *s) {
  (void)r;
  s->state = SLOT_READY;
}

void fy_ring_sample_out(fy_ring *r, int complete, int rc) {
  r->inflight--;
  /* The consumer waits for whole batches, an epoch change (drain, which
   * clears epoch_active) for no sample in flight: waking them for anything
   * else only costs context switches (with one worker, two per sample). */
  if (complete || (r->inflight == 0 && !r->epoch_active) || rc)
    pthread_cond_broadcast(&r->ready_cv);
}

static void drop_ahead(fy_ring *r) {
  r->ahead_epoch = r->ahead_want = -1;
  r->ahead_order = NULL;
  r->ahead_pos = r->ahead_assign = 0;
  r->ahead_error = 0;
}

/* Every slot not held and not kept takes a batch; held ones join when
 * released. Claims resume. */
static void reassign(fy_ring *r, int keep_ahead) {
  for (int i = 0; i < r->nslots; i++) {
    slot *s = &r->slots[i];
    if (s->state == SLOT_HELD) {
      /* The consumer still holds a batch of the last epoch (its loop
       * variable does): it stays valid; the slot joins this epoch's ring
       * when the batch is released. */
      s->number = -1;
      s->ahead = 0;
    } else if (keep_ahead && s->ahead) {
      s->ahead = 0; /* a batch of this epoch now, filled or filling */
    } else {
      fy_ring_assign(r, s);
    }
  }
  r->epoch_active = 1;
  pthread_cond_broadcast(&r->work_cv);
}

void fy_ring_start_epoch(fy_ring *r, int epoch, const int64_t *order) {
  r->next_pos = 0;
  r->next_batch = 0;
  r->next_assign = 0;
  r->error = 0;
  r->epoch = epoch;
  r->order = order;
  fy_fill_start(&r->fill, r->share_n, r->batch_size, r->drop_last);
  drop_ahead(r);
  reassign(r, 0);
}

void fy_ring_promote(fy_ring *r) {
  r->next_pos = r->ahead_pos;
  r->next_batch = 0;
  r->next_assign = r->ahead_assign;
  r->error = r->ahead_error;
  snprintf(r->error_msg, sizeof r->error_msg, "%s", r->ahead_error_msg);
  r->epoch = r->ahead_epoch;
  r->order = r->ahead_order;
  r->fill = r->ahead_fill;
  drop_ahead(r);
  /* the slots ahead first: the others take the batches after theirs */
  reassign(r, 1);
}

void fy_ring_want_ahead(fy_ring *r, int epoch) {
  r->ahead_want = epoch;
  pthread_cond_broadcast(&r->work_cv);
}

void fy_ring_ahead(fy_ring *r, int epoch, const int64_t *order) {
  r->ahead_busy = 0;
  pthread_cond_broadcast(&r->ready_cv); /* an epoch start may wait for this */
  if (r->ahead_want != epoch || r->stop)
    return;
  r->ahead_want = -1;
  drop_ahead(r);
  r->ahead_epoch = epoch;
  r->ahead_order = order;
  fy_fill_start(&r->ahead_fill, r->share_n, r->batch_size, r->drop_last);
  for (int i = 0; i < r->nslots; i++) {
    slot *s = &r->slots[i];
    if (s->number < 0 && s->state != SLOT_HELD)
      fy_ring_assign(r, s);
  }
  pthread_cond_broadcast(&r->work_cv);
}

void fy_ring_end_epoch(fy_ring *r) { r->epoch_active = 0; }

void fy_ring_stop(fy_ring *r) {
  r->stop = 1;
  pthread_cond_broadcast(&r->work_cv);
  pthread_cond_broadcast(&r->ready_cv); /* a consumer waiting for a batch */
}

slot *fy_ring_next(fy_ring *r, int *rc) {
  slot *s = NULL;
  *rc = FERRY_OK;
  if (r->next_batch >= fy_ring_batches(r))
    *rc = FERRY_END;
  else if (r->held >= r->nslots || !(s = fy_ring_slot_of(r, r->next_batch)))
    /* The latter only when every slot is held: batches are given out in
     * order. */
    *rc = fy_error(FERRY_ESTATE,
                   "loader: all %d batches of the ring are held; release one "
                   "before asking for the next",
                   r->nslots);
  return s;
}

void fy_ring_take(fy_ring *r, slot *s) {
  s->state = SLOT_HELD;
  r->held++;
  r->next_batch++;
}

slot *fy_ring_held(fy_ring *r, const ferry_batch *b) {
  for (int i = 0; i < r->nslots; i++)
    if (&r->slots[i].batch == b && r->slots[i].state == SLOT_HELD)
      return &r->slots[i];
  return NULL;
}

void fy_ring_put_back(fy_ring *r, slot *s) {
  r->held--;
  fy_ring_assign(r, s); /* also a slot held since an earlier epoch */
  pthread_cond_broadcast(&r->work_cv);
}
