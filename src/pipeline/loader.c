/* loader.c — worker threads filling the ring of preallocated batch slots
 * (ring.c), in epoch order, for one consumer: open and close, epochs, the
 * consumer's side (next, release), the worker threads and the CPU path of
 * a sample.
 *
 * Free slots take the epoch's batch numbers in order, as they are freed (a
 * batch the consumer keeps only takes its own slot out of the ring, also
 * across epochs). Workers claim sample positions in order; a worker may
 * only claim a position whose batch has a slot. The worker that completes
 * a batch closes its gaps (skipped files) and marks it ready. The consumer
 * takes batches in order. */
#include "pipeline/loader_int.h"
#include "pipeline/options.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct worker_arg {
  ferry_loader *L;
  int id;
} worker_arg;

static void *worker_run(void *arg) {
  worker_arg *a = arg;
  ferry_loader *L = a->L;
  int a_id = a->id;
  fy_worker_state *w = &L->ws[a_id];
  w->note = &L->wnotes[a_id];
  free(a);
  fy_thread_name("ferry-worker");
  pthread_mutex_lock(&L->ring.mu);
  for (;;) {
    slot *s = NULL;
    int n;
    /* parked while the consumer does not need this worker (engine_ctl.h);
     * work_cv is broadcast when workers come back and when the ring stops */
    if (L->ctl.park && a_id >= L->ctl.active && !L->ring.stop) {
      fy_note_set(w->note, FY_STAGE_PARKED, NULL, 0);
      pthread_cond_wait(&L->ring.work_cv, &L->ring.mu);
      continue;
    }
    /* u8 pack samples are a copy each: claim several per lock. */
    int64_t pos = fy_ring_claim(&L->ring, w->note, 1,
                                L->pack && L->pack->kind == FY_PACK_KIND_U8 ? 16 : 1, &s, &n);
    if (pos == FY_CLAIM_AHEAD) {
      fy_loader_make_ahead(L);
      continue;
    }
    if (pos == FY_CLAIM_SETTLE) {
      fy_settle(L, w);
      continue;
    }
    if (pos < 0)
      break;
    int epoch = s->epoch;
    pthread_mutex_unlock(&L->ring.mu);
    for (int i = 0; i < n; i++)
      fy_run_cpu_sample(L, w, s, pos + i, epoch);
    pthread_mutex_lock(&L->ring.mu);
  }
  fy_note_set(w->note, FY_STAGE_IDLE, NULL, 0);
  L->live--; /* ferry_loader_close waits for this, bounded */
  pthread_cond_broadcast(&L->ring.ready_cv);
  pthread_mutex_unlock(&L->ring.mu);
  return NULL;
}

#define FY_MAX_BATCH_BYTES_DEFAULT (4ull << 30)

/* Bytes of one batch of the ring (page-rounded), or 0 when that, or the
 * whole ring, does not fit in size_t / under max_batch_bytes (error set). */
static size_t check_ring(const ferry_loader *L) {
  uint64_t limit = L->o.max_batch_bytes ? L->o.max_batch_bytes : FY_MAX_BATCH_BYTES_DEFAULT;
  size_t bytes = 0, ring = 0;
  int ok =
      fy_mul_size((size_t)L->o.batch_size, L->sample_bytes, &bytes) && bytes <= SIZE_MAX - 4095;
  bytes = ok ? (bytes + 4095) & ~(size_t)4095 : 0;
  ok = ok && fy_mul_size(bytes, (size_t)L->ring.nslots, &ring);
  if (ok && (uint64_t)ring <= limit)
    return bytes;
  char need[32];
  if (ok)
    snprintf(need, sizeof need, "%zu", ring);
  else
    snprintf(need, sizeof need, "more than %zu", (size_t)SIZE_MAX);
  fy_error(FERRY_ETOO_LARGE,
           "loader: the batch ring needs %s bytes (%d batches of %d samples of %zu bytes), over "
           "the max_batch_bytes limit of %llu bytes; raise max_batch_bytes (ferry load "
           "--max-batch-mb) or lower batch_size, prefetch or the output size",
           need, L->ring.nslots, L->o.batch_size, L->sample_bytes, (unsigned long long)limit);
  return 0;
}

/* The ring's length when the options leave it to ferry (prefetch 0): 4
 * batches; 6 on a GPU with the JPEG engine, whose chunks of 64 samples in
 * 4 contexts otherwise claim the whole ring and leave the CPU workers
 * idle (decode-bound on an H100, medians of three runs, resize / random
 * crops: 27,100 / 31,900 images/s with a ring of 3 and 3 contexts, 32,100
 * / 32,200 with 6 and 4; a ring of 10 is slower again, each batch's share
 * of device_memory for the engine's output running short;
 * bench/CLAIMS.md C17). Shortened, down to 3, to fit max_batch_bytes. */
static int default_prefetch(ferry_loader *L) {
  if (L->o.prefetch)
    return L->o.prefetch;
  fy_ring *r = &L->ring;
  r->nslots = 3;
  if (!check_ring(L))
    return 3; /* the error comes from alloc_slots, naming the limit */
  int want = L->o.device >= 0 && L->o.hw_decode ? 6 : 4;
  for (r->nslots = want; r->nslots > 3 && !check_ring(L); r->nslots--)
    ;
  return r->nslots;
}

/* Unregisters what pin_memory page-locked (slots registered before a
 * failure included: unregistering one that is not is harmless). */
static void unpin(ferry_loader *L) {
  for (int i = 0; L->o.pin_memory >= 0 && L->ring.slots && i < L->ring.nslots; i++)
    if (L->ring.slots[i].data)
      fy_gpu_host_unregister(L->ring.slots[i].data);
  L->pinned = 0;
}

int ferry_loader_pinned(const ferry_loader *L) { return L && L->pinned; }

static int alloc_slots(ferry_loader *L) {
  size_t bytes = check_ring(L);
  if (!bytes)
    return FERRY_ETOO_LARGE;
  int rc = fy_ring_alloc(&L->ring, bytes, L->o.device < 0);
  if (rc == FERRY_OK && L->o.device < 0 && L->o.pin_memory >= 0) {
    int ok = 1;
    for (int i = 0; ok && i < L->ring.nslots; i++)
      ok = fy_gpu_host_register(L->o.pin_memory, L->ring.slots[i].data, bytes) == FERRY_OK;
    L->pinned = ok;
    if (!ok) { /* as torch's pin_memory without a GPU: said, then unpinned */
      fy_log(FERRY_LOG_WARNING, "pin_memory: batches not pinned: %s", ferry_last_error());
      fy_error_clear();
      unpin(L);
    }
  }
  for (int i = 0; rc == FERRY_OK && i < L->ring.nslots; i++) {
    slot *s = &L->ring.slots[i];
    ferry_batch *bt = &s->batch;
    bt->data = s->data;
    bt->labels = s->labels;
    bt->indices = s->indices;
    bt->channels = 3;
    bt->height = L->o.height;
    bt->width = L->o.width;
    bt->layout = L->o.layout;
    bt->dtype = L->o.dtype;
    bt->device = L->o.device;
  }
  return rc;
}

static int start_threads(ferry_loader *L) {
  /* Placed near the GPU (place.c): the cores of that placement; else this
   * process's share of the node's (ferry_default_threads). On a GPU with
   * the JPEG engine, its decoder threads (device.c: 4, and they decode on
   * the CPU while their context is off) take cores of that share and the
   * workers the rest (engine_ctl.h says how many): 2 ranks of 16 workers
   * on 32 cores loaded 15 % fewer images than of 12, the engine taking
   * 55 % of them instead of 67 % (2 x H200, bench/CLAIMS.md C31). */
  int cores = L->numa.placed ? fy_cpus_count(&L->numa.cpus) : fy_share_cores();
  L->nworkers = L->o.workers ? L->o.workers : fy_engine_default_workers(cores, L->gpu_threads);
  /* options.park_workers (off by default: it frees cores but made no run
   * faster, bench/CLAIMS.md C33): the workers a consumer-bound run does not
   * need are parked (engine_ctl.h); on a GPU with the engine once its
   * controller has stopped the contexts */
  if (L->o.park_workers) {
    pthread_mutex_lock(&L->ring.mu);
    if (!L->gpu) /* the controller without contexts: it parks only */
      fy_engine_ctl_init(&L->ctl, 0, L->ring.nslots);
    fy_engine_ctl_park(&L->ctl, L->nworkers);
    pthread_mutex_unlock(&L->ring.mu);
  }
  L->threads = calloc((size_t)L->nworkers, sizeof *L->threads);
  L->ws = calloc((size_t)L->nworkers, sizeof *L->ws);
  L->wnotes = calloc((size_t)L->nworkers, sizeof *L->wnotes);
  if (!L->threads || !L->ws || !L->wnotes)
    return fy_error(FERRY_ENOMEM, "loader: out of memory");
  for (int i = 0; i < L->nworkers; i++) {
    worker_arg *a = malloc(sizeof *a);
    if (!a)
      return fy_error(FERRY_ENOMEM, "loader: out of memory");
    *a = (worker_arg){L, i};
    pthread_mutex_lock(&L->ring.mu);
    L->live++;
    pthread_mutex_unlock(&L->ring.mu);
    if (pthread_create(&L->threads[i], fy_place_attr(L), worker_run, a) != 0) {
      free(a);
      L->nworkers = i;
      pthread_mutex_lock(&L->ring.mu);
      L->live--;
      pthread_mutex_unlock(&L->ring.mu);
      return fy_error(FERRY_ENOMEM, "loader: cannot start worker thread %d", i);
    }
  }
  return FERRY_OK;
}

/* A pack as the source: its samples, labels and original paths. */
static int open_pack(ferry_loader *L) {
  L->pack = calloc(1, sizeof *L->pack);
  if (!L->pack)
    return fy_error(FERRY_ENOMEM, "out of memory");
  int rc = fy_pack_open(L->pack, L->o.source);
  if (rc) {
    free(L->pack);
    L->pack = NULL;
    return rc;
  }
  memset(&L->src, 0, sizeof L->src);
  char path[4096];
  for (int64_t i = 0; rc == FERRY_OK && i < L->pack->count; i++) {
    const fy_pack_shard *s = &L->pack->shards[L->pack->sample_shard[i]];
    fy_pack_entry e;
    fy_pack_entry_get(s, L->pack->sample_index[i], &e);
    snprintf(path, sizeof path, "%.*s", (int)e.path_len, s->strings + e.path_off);
    rc = fy_source_add(&L->src, path, e.label);
  }
  if (rc == FERRY_OK && L->src.count == 0)
    rc = fy_error(FERRY_EEMPTY, "%s: the pack holds no samples", L->o.source);
  return rc;
}

static int open_loader(const ferry_loader_options *options, fy_source *given, int keep_positions,
                       ferry_loader **out);

int ferry_loader_open(const ferry_loader_options *options, ferry_loader **out) {
  return open_loader(options, NULL, 0, out);
}

int fy_loader_open_source(const ferry_loader_options *options, fy_source *src, int keep_positions,
                          ferry_loader **out) {
  return open_loader(options, src, keep_positions, out);
}

int ferry_loader_open_paths(const ferry_loader_options *options, const char *const *paths,
                            const int32_t *labels, int64_t count, ferry_loader **out) {
  if (!options || !out || (!paths && count))
    return fy_error(FERRY_EINVAL, "ferry_loader_open_paths: NULL argument");
  *out = NULL;
  if (count < 0)
    return fy_error(FERRY_EINVAL, "ferry_loader_open_paths: count %lld < 0", (long long)count);
  char what[64];
  snprintf(what, sizeof what, "a list of %lld path(s)", (long long)count);
  ferry_loader_options o = *options;
  if (!o.source)
    o.source = what;
  fy_source src;
  int rc = fy_source_from_paths(&src, o.source, paths, labels, count);
  return rc ? rc : open_loader(&o, &src, 0, out);
}

/* Opens a loader over options->source, or over `given` (taken over, and
 * cleared, whatever happens) when not NULL. */
static int open_loader(const ferry_loader_options *options, fy_source *given, int keep_positions,
                       ferry_loader **out) {
  fy_source src_given = {0};
  if (given) {
    src_given = *given;
    memset(given, 0, sizeof *given);
  }
  if (!options || !out) {
    fy_source_free(&src_given);
    return fy_error(FERRY_EINVAL, "ferry_loader_open: NULL argument");
  }
  *out = NULL;
  int rc = fy_loader_options_check(options);
  if (rc) {
    fy_source_free(&src_given);
    return rc;
  }
  ferry_loader *L = calloc(1, sizeof *L);
  if (!L) {
    fy_source_free(&src_given);
    return fy_error(FERRY_ENOMEM, "loader: out of memory");
  }
  L->o = *options;
  L->source_path = strdup(options->source);
  L->o.source = L->source_path;
  fy_ring_init(&L->ring);
  pthread_mutex_init(&L->report_mu, NULL);
  L->stall_ms = L->o.stall_timeout_ms == 0  ? 60000
                : L->o.stall_timeout_ms < 0 ? 0
                                            : L->o.stall_timeout_ms;
  L->progress_t = fy_now();
  L->store = (fy_store_params){L->o.layout,
                               L->o.dtype,
                               0,
                               L->o.normalize,
                               {L->o.mean[0], L->o.mean[1], L->o.mean[2]},
                               {L->o.std[0], L->o.std[1], L->o.std[2]},
                               0};
  L->stage_store = (fy_store_params){FERRY_LAYOUT_HWC, FERRY_U8, 0, 0, {0, 0, 0}, {1, 1, 1}, 0};
  L->sample_bytes = (size_t)3 * L->o.width * L->o.height * ferry_dtype_size(L->o.dtype);
  L->ring.batch_size = L->o.batch_size;
  L->ring.nslots = L->o.prefetch = default_prefetch(L);
  /* A ring larger than the last-level cache is written with streaming
   * stores where samples are plain copies (packs, the memory cache). */
  size_t ring = (size_t)L->ring.nslots * (size_t)L->o.batch_size, min_ring = fy_stream_min_bytes();
  L->store.stream = ring * L->sample_bytes > min_ring;
  L->stage_store.stream = ring * 3 * L->o.width * L->o.height > min_ring;
  /* The ring's size is known from the options: refuse it before walking
   * the source. */
  if (given)
    L->src = src_given; /* owned by L from here on: freed with it */
  rc = !L->source_path  ? FERRY_ENOMEM
       : !check_ring(L) ? FERRY_ETOO_LARGE
       : given ? (L->src.count ? FERRY_OK : fy_error(FERRY_EEMPTY, "%s: no images", L->o.source))
       : fy_pack_is(L->o.source)
           ? open_pack(L)
           : fy_source_open_stall(&L->src, L->o.source, L->o.stall_timeout_ms);
  if (rc == FERRY_OK) {
    size_t scratch = ((size_t)L->src.nshards * 2 + 1) * sizeof *L->order_scratch;
    L->order = malloc((size_t)L->src.count * sizeof *L->order);
    L->bad = calloc((size_t)L->src.count, 1);
    L->order_scratch = L->src.shard ? malloc(scratch) : NULL;
    if (L->o.epoch_ahead) {
      L->order_next = malloc((size_t)L->src.count * sizeof *L->order);
      L->order_next_scratch = L->src.shard ? malloc(scratch) : NULL;
    }
    rc = L->order && L->bad && (L->order_scratch || !L->src.shard) &&
                 (!L->o.epoch_ahead || (L->order_next && (L->order_next_scratch || !L->src.shard)))
             ? FERRY_OK
             : fy_error(FERRY_ENOMEM, "loader: out of memory");
  }
  if (rc == FERRY_OK) {
    int64_t n = L->src.count, w = L->o.world_size;
    fy_ring *r = &L->ring;
    r->epoch_n = L->o.drop_last ? n / w : (n - L->o.rank + w - 1) / w;
    r->num_batches = L->o.drop_last ? r->epoch_n / L->o.batch_size
                                    : (r->epoch_n + L->o.batch_size - 1) / L->o.batch_size;
    r->share_n = r->epoch_n;
    r->drop_last = L->o.drop_last;
    r->fill_on = L->o.on_error == FERRY_ON_ERROR_SKIP && !keep_positions;
    if (L->o.drop_last)
      r->epoch_n = r->num_batches * L->o.batch_size;
    rc = alloc_slots(L);
  }
  if (rc == FERRY_OK && L->o.cache_bytes)
    rc = fy_cache_init(&L->cache, L->src.count,
                       L->o.device >= 0 ? (size_t)3 * L->o.width * L->o.height : L->sample_bytes,
                       L->o.cache_bytes);
  if (rc == FERRY_OK)
    fy_place_begin(L); /* near the GPU: its pinned staging and the threads */
  if (rc == FERRY_OK && L->o.device >= 0)
    rc = fy_dev_open(L);
  if (rc == FERRY_OK)
    rc = start_threads(L);
  fy_place_end(L);
  if (rc) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
    ferry_loader_close(L);
    return fy_error(rc, "%s", msg);
  }
  *out = L;
  return FERRY_OK;
}

int64_t ferry_loader_source_size(const ferry_loader *L) { return L->src.count; }
int64_t ferry_loader_epoch_size(const ferry_loader *L) { return L->ring.epoch_n; }
int64_t ferry_loader_num_batches(const ferry_loader *L) { return L->ring.num_batches; }
int ferry_loader_num_classes(const ferry_loader *L) { return L->src.num_classes; }
int ferry_loader_num_workers(const ferry_loader *L) { return L->nworkers; }
int ferry_loader_num_workers_active(const ferry_loader *L) {
  ferry_loader *M = (ferry_loader *)L;
  pthread_mutex_lock(&M->ring.mu);
  int n = L->ctl.park ? L->ctl.active : L->nworkers;
  pthread_mutex_unlock(&M->ring.mu);
  return n;
}
int ferry_loader_prefetch(const ferry_loader *L) { return L->ring.nslots; }

const char *ferry_loader_path(const ferry_loader *L, int64_t i) {
  return i >= 0 && i < L->src.count ? fy_source_path(&L->src, i) : NULL;
}

int32_t ferry_loader_label(const ferry_loader *L, int64_t i) {
  return i >= 0 && i < L->src.count ? L->src.labels[i] : -1;
}

const char *ferry_loader_class_name(const ferry_loader *L, int label) {
  if (!L->src.class_names || label < 0 || label >= L->src.num_classes)
    return NULL;
  return L->src.class_names[label];
}

/* Stops claiming and waits until no sample is being processed (mu held):
 * FERRY_OK, or FERRY_ETIMEOUT when that stalls. */
static int drain(ferry_loader *L) {
  fy_ring_end_epoch(&L->ring);
  double t0 = fy_now();
  while (L->ring.inflight > 0)
    if (fy_watch_wait(L, &L->ring.ready_cv, t0))
      return fy_watch_stall(L, "the samples of the last epoch still in flight", fy_now() - t0);
  return FERRY_OK;
}

/* Epoch `epoch`'s order into `order` (and the shards' `scratch`). */
static void make_order(ferry_loader *L, int epoch, int64_t *order, int64_t *scratch) {
  int64_t n = L->src.shard ? fy_epoch_order_shards(&L->src, L->o.shuffle, L->o.shuffle_buffer,
                                                   L->o.seed, epoch, L->o.rank, L->o.world_size,
                                                   L->o.drop_last, order, scratch)
                           : fy_epoch_order(L->src.count, L->o.shuffle, L->o.seed, epoch, L->o.rank,
                                            L->o.world_size, L->o.drop_last, order);
  (void)n; /* equals epoch_n, or more with drop_last (trailing partial batch) */
}

void fy_loader_make_ahead(ferry_loader *L) {
  int epoch = L->ring.ahead_want;
  /* nothing reads order_next now: the epoch's slots read order, and any
   * earlier epoch ahead was started (its order is `order` now) or dropped */
  pthread_mutex_unlock(&L->ring.mu);
  make_order(L, epoch, L->order_next, L->order_next_scratch);
  pthread_mutex_lock(&L->ring.mu);
  fy_ring_ahead(&L->ring, epoch, L->order_next);
}

/* Waits (mu held) until no sample of a batch the epoch gave up is in
 * flight: their slots still read the epoch's order (fy_ring_promote). */
static int wait_given_up(ferry_loader *L) {
  double t0 = fy_now();
  while (fy_ring_given_up_in_flight(&L->ring))
    if (fy_watch_wait(L, &L->ring.ready_cv, t0))
      return fy_watch_stall(L, "the samples of batches the last epoch gave up", fy_now() - t0);
  return FERRY_OK;
}

static int stopped_error(void) {
  return fy_error(FERRY_ESTATE, "loader: stopped (ferry_loader_stop): close it");
}

/* Waits (mu held) until no thread makes the order of an epoch ahead. */
static int wait_ahead_made(ferry_loader *L) {
  double t0 = fy_now();
  while (L->ring.ahead_busy)
    if (fy_watch_wait(L, &L->ring.ready_cv, t0))
      return fy_watch_stall(L, "the next epoch's order", fy_now() - t0);
  return FERRY_OK;
}

int ferry_loader_start_epoch(ferry_loader *L, int epoch) {
  if (!L || epoch < 0)
    return fy_error(FERRY_EINVAL, "ferry_loader_start_epoch: bad argument");
  fy_ring *r = &L->ring;
  pthread_mutex_lock(&r->mu);
  /* Started ahead, and every batch of the epoch taken (none of its samples
   * in flight): the consumer goes on where the workers are. Otherwise
   * nothing of the epoch (or of the one ahead) may be in flight. */
  if (r->stop) {
    pthread_mutex_unlock(&r->mu);
    return stopped_error();
  }
  int ok = !L->stalled && wait_ahead_made(L) == FERRY_OK;
  int ahead = ok && r->ahead_epoch == epoch;
  if (ok && !(ahead && r->next_batch >= fy_ring_batches(r)))
    ok = drain(L) == FERRY_OK;
  else if (ok)
    ok = wait_given_up(L) == FERRY_OK;
  if (!ok) {
    int rc = fy_error(FERRY_ETIMEOUT, "%s", r->error_msg);
    pthread_mutex_unlock(&r->mu);
    return rc;
  }
  /* the files the epoch ahead skipped: said below when it starts, else forgotten (the epoch
   * that reads them again says them) */
  fy_skip_note *said = L->ahead_skips;
  int nsaid = L->ahead_nskips;
  L->ahead_skips = NULL;
  L->ahead_nskips = L->ahead_capskips = 0;
  if (ahead) { /* its slots read order_next: it becomes the epoch's order */
    int64_t *t = L->order;
    L->order = L->order_next;
    L->order_next = t;
    t = L->order_scratch;
    L->order_scratch = L->order_next_scratch;
    L->order_next_scratch = t;
    fy_ring_promote(r);
  } else {
    for (int i = 0; i < nsaid; i++)
      free(said[i].msg);
    nsaid = 0;
    make_order(L, epoch, L->order, L->order_scratch);
    fy_ring_start_epoch(r, epoch, L->order);
  }
  if (L->o.epoch_ahead && epoch < INT_MAX)
    fy_ring_want_ahead(r, epoch + 1);
  pthread_mutex_unlock(&r->mu);
  for (int i = 0; i < nsaid; i++) {
    fy_report_skip(L, said[i].idx, said[i].rc, said[i].msg);
    free(said[i].msg);
  }
  free(said);
  return FERRY_OK;
}

int ferry_loader_next(ferry_loader *L, ferry_batch **out) {
  if (!L || !out)
    return fy_error(FERRY_EINVAL, "ferry_loader_next: NULL argument");
  *out = NULL;
  if (L->ring.epoch < 0) { /* before the first epoch (set by fy_ring_start_epoch) */
    int rc = ferry_loader_start_epoch(L, 0);
    if (rc)
      return rc;
  }
  fy_ring *r = &L->ring;
  pthread_mutex_lock(&r->mu);
  int rc = FERRY_OK;
  slot *s = NULL;
  if (L->stalled) {
    rc = fy_error(FERRY_ETIMEOUT, "%s", r->error_msg);
  } else if (r->stop) {
    rc = stopped_error();
  } else if ((s = fy_ring_next(r, &rc))) {
    double t0 = fy_now();
    int b = (int)r->next_batch;
    if ((L->gpu || L->ctl.park) && !r->error)
      fy_dev_asked(L, b);
    while (!r->error && !r->stop && (!s || s->state != SLOT_READY)) {
      if (fy_watch_wait(L, &r->ready_cv, t0)) {
        char what[96];
        snprintf(what, sizeof what, "batch %d of epoch %d", b, r->epoch);
        fy_watch_stall(L, what, fy_now() - t0);
      }
      if (r->next_batch >= fy_ring_batches(r))
        break;                   /* the epoch ended short of b: files were skipped (fill.h) */
      s = fy_ring_slot_of(r, b); /* the same slot, unless b's was freed */
    }
    L->stats.wait_s += fy_now() - t0;
    if (r->error) {
      rc = fy_error(r->error, "%s", r->error_msg);
    } else if (r->next_batch >= fy_ring_batches(r)) {
      rc = FERRY_END;
      s = NULL;
    } else if (!s || s->state != SLOT_READY) {
      rc = stopped_error();
    } else {
      fy_ring_take(r, s);
      *out = &s->batch;
    }
    if (rc == FERRY_OK && L->gpu) {
      pthread_mutex_unlock(&r->mu);
      t0 = fy_now();
      rc = fy_dev_ready(L, s, L->stall_ms); /* the batch's kernels have run */
      pthread_mutex_lock(&r->mu);
      L->stats.wait_s += fy_now() - t0;
      if (rc == FERRY_ETIMEOUT) {
        char what[128];
        snprintf(what, sizeof what, "the GPU kernels of batch %d of epoch %d", b, r->epoch);
        rc = fy_watch_stall(L, what, fy_now() - t0);
      }
      if (rc)
        *out = NULL;
    }
  }
  pthread_mutex_unlock(&r->mu);
  return rc;
}

void ferry_loader_release_on_stream(ferry_loader *L, ferry_batch *b, void *stream) {
  if (!L || !b)
    return;
  pthread_mutex_lock(&L->ring.mu);
  slot *s = fy_ring_held(&L->ring, b);
  if (s) {
    if (L->gpu)
      fy_dev_release(L, s, stream);
    fy_ring_put_back(&L->ring, s);
  }
  pthread_mutex_unlock(&L->ring.mu);
}

void ferry_loader_release(ferry_loader *L, ferry_batch *b) {
  ferry_loader_release_on_stream(L, b, NULL);
}

void ferry_loader_get_stats(const ferry_loader *L, ferry_stats *st) {
  ferry_loader *M = (ferry_loader *)L;
  pthread_mutex_lock(&M->ring.mu);
  *st = L->stats;
  st->idle_s = L->ring.idle_s;
  pthread_mutex_unlock(&M->ring.mu);
}

/* Loaders left behind by ferry_loader_close (threads still blocked): kept
 * reachable here, never freed, since those threads may yet wake and touch
 * them. */
static pthread_mutex_t abandoned_mu = PTHREAD_MUTEX_INITIALIZER;
static ferry_loader *abandoned[64];
static int abandoned_n;

static void abandon(ferry_loader *L) {
  char threads[3072];
  pthread_mutex_lock(&L->ring.mu);
  int n = L->live;
  fy_watch_describe(L, threads, sizeof threads);
  pthread_mutex_unlock(&L->ring.mu);
  fy_log(FERRY_LOG_WARNING,
         "loader closed with %d thread%s still blocked after %.1f s (%s); %s and the "
         "loader's memory are left behind",
         n, n == 1 ? "" : "s", L->stall_ms * 1e-3, threads, n == 1 ? "it" : "they");
  for (int i = 0; i < L->nworkers; i++)
    pthread_detach(L->threads[i]);
  for (int i = 0; i < L->gpu_threads; i++)
    pthread_detach(L->gpu_tid[i]);
  pthread_mutex_lock(&abandoned_mu);
  if (abandoned_n < (int)(sizeof abandoned / sizeof abandoned[0]))
    abandoned[abandoned_n++] = L;
  pthread_mutex_unlock(&abandoned_mu);
}

int ferry_loaders_abandoned(void) {
  pthread_mutex_lock(&abandoned_mu);
  int n = abandoned_n;
  pthread_mutex_unlock(&abandoned_mu);
  return n;
}

/* Stops and joins the threads: FERRY_OK, or FERRY_ETIMEOUT when one stays
 * blocked past the stall time-out (a hung GPU call, a dead network mount);
 * then none is joined. */
static int stop_threads(ferry_loader *L) {
  pthread_mutex_lock(&L->ring.mu);
  fy_ring_stop(&L->ring);
  /* Threads finish the sample in hand, then exit. */
  double t0 = fy_now();
  int stuck = 0;
  while (L->live > 0 && !stuck)
    stuck = fy_watch_wait(L, &L->ring.ready_cv, t0);
  int join = !stuck && !L->joined, live = L->live;
  L->joined |= join;
  pthread_mutex_unlock(&L->ring.mu);
  if (stuck)
    return fy_error(FERRY_ETIMEOUT, "loader: %d thread%s still blocked after %.1f s", live,
                    live == 1 ? "" : "s", L->stall_ms * 1e-3);
  for (int i = 0; join && i < L->nworkers; i++)
    pthread_join(L->threads[i], NULL);
  if (join)
    fy_dev_join(L);
  return FERRY_OK;
}

int ferry_loader_stop(ferry_loader *L) {
  if (!L)
    return fy_error(FERRY_EINVAL, "ferry_loader_stop: NULL loader");
  return stop_threads(L);
}

void ferry_loader_close(ferry_loader *L) {
  if (!L)
    return;
  /* a thread blocked for longer than the stall time-out is left behind with
   * the loader's memory rather than hanging here */
  if (stop_threads(L) != FERRY_OK) {
    abandon(L);
    return;
  }
  fy_dev_close(L);
  for (int i = 0; L->ws && i < L->nworkers; i++)
    fy_worker_state_free(&L->ws[i]);
  free(L->ws);
  free(L->wnotes);
  free(L->threads);
  free(L->order);
  free(L->order_scratch);
  free(L->order_next);
  free(L->order_next_scratch);
  for (int i = 0; i < L->ahead_nskips; i++)
    free(L->ahead_skips[i].msg);
  free(L->ahead_skips);
  free(L->bad);
  fy_cache_free(&L->cache);
  fy_source_free(&L->src);
  if (L->pack) {
    fy_pack_close(L->pack);
    free(L->pack);
  }
  free(L->source_path);
  if (L->pinned)
    unpin(L);
  fy_ring_free(&L->ring);
  fy_place_free(L);
  pthread_mutex_destroy(&L->report_mu);
  free(L);
}
