/* loader_int.h — the loader's state, shared by loader.c (threads, epochs,
 * the consumer's side), device.c (batches on a GPU) and watch.c (the stall
 * watchdog); its ring of slots and its memory cache are objects of their
 * own (ring.h, cache.h). */
#ifndef FY_LOADER_INT_H
#define FY_LOADER_INT_H

#include "core/numa.h"
#include "cuda/gpu.h"
#include "io/source.h"
#include "pipeline/cache.h"
#include "pipeline/engine_ctl.h"
#include "pipeline/pipeline.h"
#include "pipeline/ring.h"

#include <pthread.h>
#include <sched.h>

typedef struct fy_dec_arg {
  struct ferry_loader *L;
  int engine;
} fy_dec_arg;

struct ferry_loader {
  ferry_loader_options o;
  char *source_path;
  fy_source src;
  fy_store_params store;
  fy_store_params stage_store; /* device mode: CPU workers write u8 HWC */
  size_t sample_bytes;
  int64_t *order;         /* this epoch's positions -> source indices */
  int64_t *order_scratch; /* shards: fy_epoch_order_shards's scratch */
  /* the next epoch's, made ahead by a claiming thread (ring.h; NULL when
   * epoch_ahead is off), and its scratch */
  int64_t *order_next;
  int64_t *order_next_scratch;
  /* files the epoch ahead skipped (mu): said when that epoch starts (its
   * files may not be this epoch's), forgotten when another one does */
  struct fy_skip_note *ahead_skips;
  int ahead_nskips, ahead_capskips;
  int pinned;   /* the ring's host buffers are page-locked (pin_memory) */
  uint8_t *bad; /* per source index: known bad file */

  /* The ring of batch slots, its claims and the mutex `mu` that also
   * guards the fields marked (mu) here (ring.h says how). */
  fy_ring ring;
  pthread_mutex_t report_mu;
  int nworkers;
  pthread_t *threads;
  fy_worker_state *ws;
  /* the stall watchdog (watch.c) */
  int stall_ms;                       /* 0: never */
  int joined;                         /* the threads are stopped and joined (mu) */
  int stalled;                        /* a stall was reported: the loader stays failed (mu) */
  double progress_t;                  /* fy_now() when a sample last finished (mu) */
  int live;                           /* threads running (mu); each exit signals ready_cv */
  fy_note *wnotes;                    /* per worker */
  fy_note dnotes[FY_GPU_MAX_ENGINES]; /* per GPU decoder thread */
  ferry_stats stats;                  /* (mu); idle_s is the ring's */
  fy_pack *pack;                      /* the source is a pack (memory-mapped shards) */
  fy_cache cache;                     /* the memory cache (cache.h); off without cache_bytes */
  /* device mode (o.device >= 0) */
  fy_gpu *gpu;
  int gpu_threads; /* decoder threads feeding the JPEG engine */
  int engine_warned;
  fy_engine_ctl ctl; /* how many engine contexts decode (mu; engine_ctl.h) */
  pthread_t gpu_tid[FY_GPU_MAX_ENGINES];
  fy_dec_arg dec_args[FY_GPU_MAX_ENGINES];
  pthread_mutex_t dev_mu; /* the slots' device arenas and tables */
  int dev_mu_init;
  fy_buf *gpu_files;  /* per slot: file bytes of engine-decoded samples */
  size_t *arena_used; /* per slot */
  size_t *temp_used;  /* per slot */
  int *table_used;    /* per slot */
  /* per slot: staging places the CPU path took (the batch's upload is that
   * many images, not the whole batch); stage_of, per slot x batch: sample
   * k's place + 1 (0: none yet) */
  int *staged_n;
  int *stage_of;
  /* where the threads run (place.c): near the GPU on a host of several NUMA nodes */
  fy_numa_plan numa;
  pthread_attr_t place_attr; /* the threads' attributes when numa.placed */
  int place_attr_init;
  cpu_set_t caller_cpus; /* the opening thread's own CPUs, while it is bound */
  int caller_bound;
};

/* ferry_loader_open over a source already listed (pack building: any
 * bytes in a name survive, no list file in between); takes *src over and
 * clears it, whatever happens. options->source names it in messages. */
/* keep_positions: a batch keeps its own samples, shorter around skipped files, never
 * filled from later ones (the u8 pack: one shard per batch) */
int fy_loader_open_source(const ferry_loader_options *options, fy_source *src, int keep_positions,
                          ferry_loader **out);
/* A claiming thread that got FY_CLAIM_AHEAD (mu held on entry and on
 * return): makes the next epoch's order without mu and hands it to the
 * ring (loader.c). */
void fy_loader_make_ahead(ferry_loader *L);

/* place.c: the threads near the GPU (the numa option). fy_place_begin
 * decides where (L->numa; CPU mode: nowhere) and binds the calling thread
 * there until fy_place_end; fy_place_attr: the attributes the loader's
 * threads are created with (NULL: the defaults); fy_place_free undoes it
 * all. */
void fy_place_begin(ferry_loader *L);
void fy_place_end(ferry_loader *L);
const pthread_attr_t *fy_place_attr(const ferry_loader *L);
void fy_place_free(ferry_loader *L);

/* watch.c: the stall watchdog. */
/* Waits on cv (the ring's mu held) until signalled, or until stall_ms have
 * passed with no sample finished since max(t0, the last one): then returns 1. */
int fy_watch_wait(ferry_loader *L, pthread_cond_t *cv, double t0);
/* Reports a stall (mu held): L fails for good with FERRY_ETIMEOUT and a
 * message naming what each thread is doing; returns FERRY_ETIMEOUT. */
int fy_watch_stall(ferry_loader *L, const char *waiting_for, double waited);
/* What every thread is doing, as one line ("worker 3: decoding F for 61.0 s; ..."). */
void fy_watch_describe(const ferry_loader *L, char *buf, size_t cap);

/* device.c: the GPU mode, its decoder threads and the engine controller's decisions. */
int fy_dev_open(ferry_loader *L);
void fy_dev_join(ferry_loader *L); /* the decoder threads, once stopped */
void fy_dev_close(ferry_loader *L);
/* 1 while engine context `engine` should decode (mu held). */
int fy_dev_engine_on(const ferry_loader *L, int engine);
/* The consumer asks for batch b of the epoch (mu held): feeds the engine
 * controller (and parking, on the CPU too) and wakes the contexts and workers
 * it turns on. */
void fy_dev_asked(ferry_loader *L, int64_t b);
/* The decoder thread that feeds the hardware JPEG engine. */
void *fy_dev_decoder_main(void *arg);

/* device_slot.c: a slot's GPU side. */
/* Where a CPU worker writes sample k of slot s, and with which store. */
void *fy_dev_sample_dst(ferry_loader *L, slot *s, int k);
void fy_dev_sample_done(ferry_loader *L, slot *s, int k, int64_t idx, int epoch);
/* Resets slot s's per-batch device state when it gets a new batch (mu
 * held: the ring's on_assign). */
void fy_dev_slot_reset(ferry_loader *L, slot *s);
/* Compacts and launches a completed batch; FERRY_OK or an error. */
int fy_dev_finish(ferry_loader *L, slot *s);
/* Waits (up to timeout_ms; <= 0: for ever) for the batch's kernels; sets
 * data/device of the batch. FERRY_ETIMEOUT when they did not finish. */
int fy_dev_ready(ferry_loader *L, slot *s, int timeout_ms);
void fy_dev_release(ferry_loader *L, slot *s, void *stream);

/* A skipped file, kept until its epoch starts. */
typedef struct fy_skip_note {
  int64_t idx;
  int rc;
  char *msg;
} fy_skip_note;
/* Reports a skipped file once per loader (the on_skip callback, else a
 * warning), with msg; mu not held (run_sample.c). */
void fy_report_skip(ferry_loader *L, int64_t idx, int rc, const char *msg);

/* run_sample.c, for the CPU workers (loader.c) and the GPU decoder threads
 * (device.c): runs one claimed sample on the CPU path (mu not held). */
void fy_run_cpu_sample(ferry_loader *L, fy_worker_state *w, slot *s, int64_t pos, int epoch);
/* Marks position pos of slot s finished with status rc (mu not held): the
 * thread that finishes a batch's last sample completes the batch. */
void fy_sample_finished(ferry_loader *L, slot *s, int64_t pos, int rc);
/* A thread that got FY_CLAIM_SETTLE (mu held on entry and on return):
 * settles the next batch (fill.h): its holes take the pool's samples, run
 * here on the CPU path, then it completes the batch, or frees its slot
 * when the epoch ends short of it. */
void fy_settle(ferry_loader *L, fy_worker_state *w);

#endif
