/* run_sample.c — one sample on the CPU path, into its slot (the batch in
 * host memory, or the GPU's u8 staging), for the CPU workers (loader.c)
 * and for the GPU decoder threads' samples that the JPEG engine does not
 * take (device.c); and what follows when any sample finishes: the skip or
 * fail policy, the stats, and the batch's completion by the thread that
 * finishes its last sample (compacted around skipped files on the host,
 * or by the GPU's kernels: device_slot.c). The ring's state changes
 * through ring.c, under its mutex (ring.h). */
#include "pipeline/loader_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fy_report_skip(ferry_loader *L, int64_t idx, int rc, const char *msg) {
  /* Each bad file is reported once per loader, not once per epoch. */
  if (__atomic_exchange_n(&L->bad[idx], 1, __ATOMIC_ACQ_REL))
    return;
  const char *path = fy_source_path(&L->src, idx);
  pthread_mutex_lock(&L->report_mu);
  if (L->o.on_skip)
    L->o.on_skip(L->o.on_skip_user, path, rc, msg);
  else
    fy_log(FERRY_LOG_WARNING, "skipped %s", msg[0] ? msg : path);
  pthread_mutex_unlock(&L->report_mu);
}

/* Moves the images and labels of successful samples to the front. */
static void compact(ferry_loader *L, slot *s) {
  int k = 0;
  for (int i = 0; i < s->expected; i++) {
    if (s->failed[i])
      continue;
    if (k != i) {
      memmove((char *)s->data + (size_t)k * L->sample_bytes,
              (char *)s->data + (size_t)i * L->sample_bytes, L->sample_bytes);
      s->labels[k] = s->labels[i];
      s->indices[k] = s->indices[i];
    }
    k++;
  }
  s->batch.count = k;
}

static void finish_batch(ferry_loader *L, slot *s, int any_failed) {
  s->batch.count = s->expected;
  if (any_failed)
    compact(L, s);
  s->batch.nbytes = (size_t)s->batch.count * L->sample_bytes;
}

/* Closes a batch whose every sample is done: compacts around skipped files
 * (on the host, or on the device with the kernels) and marks it ready. */
static void complete_batch(ferry_loader *L, slot *s) {
  int any = 0, rc = FERRY_OK;
  for (int i = 0; i < s->expected; i++)
    any |= s->failed[i];
  if (L->gpu)
    rc = fy_dev_finish(L, s);
  else if (!L->gpu)
    finish_batch(L, s, any);
  s->batch.index = (int)s->number;
  s->batch.epoch = s->epoch;
  pthread_mutex_lock(&L->ring.mu);
  if (rc)
    fy_ring_fail_at(&L->ring, s, rc);
  fy_ring_batch_ready(&L->ring, s);
  L->stats.batches++;
}

/* A file the epoch ahead skipped is said when that epoch starts (loader.c):
 * 1 when kept for then, 0 when it is to be said now (not ahead, or no
 * memory to keep it). */
static int keep_skip(ferry_loader *L, slot *s, int64_t idx, int rc) {
  pthread_mutex_lock(&L->ring.mu);
  int kept = 0;
  if (s->ahead) {
    if (L->ahead_nskips == L->ahead_capskips) {
      int cap = L->ahead_capskips ? 2 * L->ahead_capskips : 16;
      fy_skip_note *v = realloc(L->ahead_skips, (size_t)cap * sizeof *v);
      if (v) {
        L->ahead_skips = v;
        L->ahead_capskips = cap;
      }
    }
    char *msg = L->ahead_nskips < L->ahead_capskips ? strdup(ferry_last_error()) : NULL;
    if (msg) {
      L->ahead_skips[L->ahead_nskips++] = (fy_skip_note){idx, rc, msg};
      kept = 1;
    }
  }
  pthread_mutex_unlock(&L->ring.mu);
  return kept;
}

void fy_sample_finished(ferry_loader *L, slot *s, int64_t pos, int rc) {
  int k = (int)(pos - s->number * L->o.batch_size);
  int64_t idx = s->order[pos];
  if (rc && L->o.on_error == FERRY_ON_ERROR_SKIP && !keep_skip(L, s, idx, rc))
    fy_report_skip(L, idx, rc, ferry_last_error());
  s->failed[k] = rc != FERRY_OK;
  pthread_mutex_lock(&L->ring.mu);
  if (rc && L->o.on_error == FERRY_ON_ERROR_FAIL)
    fy_ring_fail_at(&L->ring, s, rc);
  if (!L->ring.fill_on) { /* filling counts them when it settles the batch */
    L->stats.images += rc == FERRY_OK;
    L->stats.skipped += rc != FERRY_OK;
  }
  L->progress_t = fy_now(); /* the watchdog's clock */
  int complete = fy_ring_sample_done(&L->ring, s);
  if (complete && L->ring.fill_on) {
    /* the batch settles in its turn, by a claiming thread (fy_settle) */
    fy_ring_settle_ready(&L->ring, s);
    complete = 0;
  } else if (complete) {
    /* This thread alone touches the slot now: close the gaps unlocked.
     * It stays in flight until the batch is ready, so that an epoch
     * change waits for it. */
    pthread_mutex_unlock(&L->ring.mu);
    complete_batch(L, s); /* locks mu again */
  }
  fy_ring_sample_out(&L->ring, complete, rc);
  pthread_mutex_unlock(&L->ring.mu);
}

/* Runs position pos of slot s's order into place k of the slot. */
static int run_into(ferry_loader *L, fy_worker_state *w, slot *s, int k, int64_t pos, int epoch) {
  int64_t idx = s->order[pos];
  const char *path = fy_source_path(&L->src, idx);
  s->labels[k] = L->src.labels[idx];
  s->indices[k] = idx;
  /* On a GPU the CPU side makes the staged u8 image; else the sample. */
  void *dst = L->gpu ? fy_dev_sample_dst(L, s, k) : (char *)s->data + (size_t)k * L->sample_bytes;
  const fy_store_params *store = L->gpu ? &L->stage_store : &L->store;
  int rc, cached = 0;
  if (fy_cache_on(&L->cache) || L->pack) /* files say "reading" themselves (sample.c) */
    fy_note_set(w->note, FY_STAGE_COPY, path, 0);
  if (__atomic_load_n(&L->bad[idx], __ATOMIC_ACQUIRE)) {
    rc = FERRY_ECORRUPT; /* known bad: reported already, not read again */
  } else if ((cached = fy_cache_get(&L->cache, idx, dst, store->stream))) {
    rc = FERRY_OK;
  } else {
    rc = L->pack ? fy_process_pack_sample(w, &L->o, store, L->pack, epoch, idx, dst)
                 : fy_process_sample(w, &L->o, store, &L->src, epoch, idx, dst);
    if (rc == FERRY_OK)
      fy_cache_put(&L->cache, idx, dst);
  }
  if (rc == FERRY_OK && L->gpu)
    fy_dev_sample_done(L, s, k, idx, epoch);
  pthread_mutex_lock(&L->ring.mu);
  /* Stage times move to the loader's totals under the lock. */
  L->stats.read_s += w->read_s;
  L->stats.decode_s += w->decode_s;
  L->stats.transform_s += w->transform_s;
  L->stats.cached += cached;
  w->read_s = w->decode_s = w->transform_s = 0;
  pthread_mutex_unlock(&L->ring.mu);
  return rc;
}

void fy_run_cpu_sample(ferry_loader *L, fy_worker_state *w, slot *s, int64_t pos, int epoch) {
  int k = (int)(pos - s->number * L->o.batch_size);
  fy_sample_finished(L, s, pos, run_into(L, w, s, k, pos, epoch));
}

/* The next replacement for batch b of slot s (mu not held), or -1. */
static int64_t take_replacement(ferry_loader *L, slot *s, int64_t b) {
  pthread_mutex_lock(&L->ring.mu);
  int64_t pos = fy_fill_take(fy_ring_fill_of(&L->ring, s), b);
  fy_ring_refit(&L->ring, s); /* a batch given up expects only what was claimed */
  pthread_mutex_unlock(&L->ring.mu);
  return pos;
}

void fy_settle(ferry_loader *L, fy_worker_state *w) {
  fy_ring *r = &L->ring;
  slot *s = fy_ring_to_settle(r);
  if (!s) {
    r->settling = 0;
    fy_ring_sample_out(r, 0, 0);
    return;
  }
  int64_t b = s->number;
  int B = L->o.batch_size, epoch = s->epoch, count = 0, skipped = 0;
  /* a batch past the full ones (the short last) is all pool */
  int tail = b >= fy_fill_own_end(fy_ring_fill_of(r, s)) / B, out = 0;
  pthread_mutex_unlock(&r->mu);
  for (int k = 0; k < B; k++) {
    if (!tail && !s->failed[k]) {
      count++;
      continue;
    }
    skipped += !tail;
    s->failed[k] = 1;
    while (!out) {
      int64_t pos = take_replacement(L, s, b);
      if (pos < 0) {
        out = 1; /* the pool is empty: this batch is the epoch's last */
        break;
      }
      int rc = run_into(L, w, s, k, pos, epoch);
      pthread_mutex_lock(&r->mu);
      L->progress_t = fy_now();
      pthread_mutex_unlock(&r->mu);
      if (rc == FERRY_OK) {
        s->failed[k] = 0;
        count++;
        break;
      }
      skipped++;
      if (!keep_skip(L, s, s->order[pos], rc))
        fy_report_skip(L, s->order[pos], rc, ferry_last_error());
    }
  }
  pthread_mutex_lock(&r->mu);
  s->expected = B; /* places 0..B-1, the holes left marked failed */
  int delivered = fy_fill_settle(fy_ring_fill_of(r, s), b, count);
  fy_ring_refit(r, s);
  L->stats.skipped += (uint64_t)skipped;
  if (delivered) {
    L->stats.images += (uint64_t)count;
    pthread_mutex_unlock(&r->mu);
    complete_batch(L, s); /* locks mu again */
  } else {
    fy_ring_assign(r, s); /* short with drop_last, or empty: not delivered */
  }
  r->settling = 0;
  fy_ring_to_settle(r); /* frees the slots of batches given up */
  pthread_cond_broadcast(&r->work_cv);
  fy_ring_sample_out(r, 1, 0);
}
