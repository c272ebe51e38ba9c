/* loader_int.h — the loader's state, shared by loader.c (threads, ring,
 * epochs) and device.c (batches on a GPU). */
#ifndef FY_LOADER_INT_H
#define FY_LOADER_INT_H

#include "cuda/gpu.h"
#include "io/source.h"
#include "pipeline/cache.h"
#include "pipeline/engine_ctl.h"
#include "pipeline/pipeline.h"

#include <pthread.h>

enum slot_state { SLOT_FILLING, SLOT_READY, SLOT_HELD };

typedef struct slot {
  ferry_batch batch;
  int64_t number; /* batch of the epoch assigned to this slot, -1 none */
  int state;
  int done;        /* samples finished (ok or failed) */
  int expected;    /* samples in this batch */
  uint8_t *failed; /* per position: 1 when the file was skipped */
  int32_t *labels;
  int64_t *indices;
  void *data;
  int id; /* index in the ring */
} slot;

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
  int64_t *order;  /* this epoch's positions -> source indices */
  int64_t epoch_n; /* samples in this rank's epoch */
  int64_t num_batches;
  uint8_t *bad; /* per source index: known bad file */

  pthread_mutex_t mu;
  pthread_cond_t work_cv;  /* workers: a slot or an epoch became available */
  pthread_cond_t ready_cv; /* consumer: a batch became ready; epoch drained */
  pthread_mutex_t report_mu;
  int nslots;
  slot *slots;
  int nworkers;
  pthread_t *threads;
  fy_worker_state *ws;
  int stop;
  int epoch;
  int epoch_active;
  int64_t next_pos;    /* next sample position to claim */
  int64_t next_batch;  /* next batch the consumer takes */
  int64_t next_assign; /* next batch to give a free slot */
  int inflight;        /* samples being processed right now */
  int held;            /* batches handed out, not released */
  int error;           /* on_error = fail: first error of the epoch */
  char error_msg[4096];
  /* the stall watchdog (watch.c) */
  int stall_ms;                       /* 0: never */
  int stalled;                        /* a stall was reported: the loader stays failed */
  double progress_t;                  /* fy_now() when a sample last finished (mu) */
  int live;                           /* threads running (mu); each exit signals ready_cv */
  fy_note *wnotes;                    /* per worker */
  fy_note dnotes[FY_GPU_MAX_ENGINES]; /* per GPU decoder thread */
  ferry_stats stats;
  fy_pack *pack;  /* the source is a pack (memory-mapped shards) */
  fy_cache cache; /* the memory cache (cache.h); off without cache_bytes */
  /* device mode (o.device >= 0) */
  fy_gpu *gpu;
  int gpu_threads; /* decoder threads feeding the JPEG engine */
  int engine_warned;
  fy_engine_ctl ctl; /* how many engine contexts decode (mu; engine_ctl.h) */
  int engine_policy; /* FY_ENGINES_* (device.c) */
  int idle_n;        /* CPU workers idle now (mu) */
  double idle_acc;   /* their idle seconds, summed, up to idle_t (mu) */
  double idle_t;
  pthread_t gpu_tid[FY_GPU_MAX_ENGINES];
  fy_dec_arg dec_args[FY_GPU_MAX_ENGINES];
  pthread_mutex_t dev_mu; /* the slots' device arenas and tables */
  int dev_mu_init;
  fy_buf *gpu_files;  /* per slot: file bytes of engine-decoded samples */
  size_t *arena_used; /* per slot */
  size_t *temp_used;  /* per slot */
  int *table_used;    /* per slot */
  int *any_staged;    /* per slot */
};

/* ferry_loader_open over a source already listed (pack building: any
 * bytes in a name survive, no list file in between); takes *src over and
 * clears it, whatever happens. options->source names it in messages. */
int fy_loader_open_source(const ferry_loader_options *options, fy_source *src, ferry_loader **out);

/* watch.c: the stall watchdog. */
/* Waits on cv (mu held) until signalled, or until stall_ms have passed with
 * no sample finished since max(t0, the last one): then returns 1. */
int fy_watch_wait(ferry_loader *L, pthread_cond_t *cv, double t0);
/* Reports a stall (mu held): L fails for good with FERRY_ETIMEOUT and a
 * message naming what each thread is doing; returns FERRY_ETIMEOUT. */
int fy_watch_stall(ferry_loader *L, const char *waiting_for, double waited);
/* What every thread is doing, as one line ("worker 3: decoding F for 61.0 s; ..."). */
void fy_watch_describe(const ferry_loader *L, char *buf, size_t cap);
/* pthread_cond_init on CLOCK_MONOTONIC (fy_now's clock); 0 on success. */
int fy_watch_cond_init(pthread_cond_t *cv);

/* Loaders that ferry_loader_close() left behind, their threads still
 * blocked (a hung GPU call): a process with one should leave with _exit(),
 * since library destructors at exit() (nvJPEG's) can wait for those
 * threads' locks for ever. */
int fy_loader_abandoned(void);

/* device.c */
int fy_dev_open(ferry_loader *L);
void fy_dev_close(ferry_loader *L);
/* Where a CPU worker writes sample k of slot s, and with which store. */
void *fy_dev_sample_dst(ferry_loader *L, slot *s, int k);
void fy_dev_sample_done(ferry_loader *L, slot *s, int k, int64_t idx, int epoch);
/* Resets slot s's per-batch device state when it gets a new batch. */
void fy_dev_slot_reset(ferry_loader *L, slot *s);
/* Compacts and launches a completed batch; FERRY_OK or an error. */
int fy_dev_finish(ferry_loader *L, slot *s);
/* Waits (up to timeout_ms; <= 0: for ever) for the batch's kernels; sets
 * data/device of the batch. FERRY_ETIMEOUT when they did not finish. */
int fy_dev_ready(ferry_loader *L, slot *s, int timeout_ms);
void fy_dev_release(ferry_loader *L, slot *s, void *stream);
enum { FY_ENGINES_ADAPT, FY_ENGINES_ONE, FY_ENGINES_ALWAYS };
/* 1 while engine context `engine` should decode (mu held). */
int fy_dev_engine_on(const ferry_loader *L, int engine);
/* The consumer asks for batch b of the epoch (mu held): feeds the engine
 * policy and wakes the contexts it turns on. */
void fy_dev_asked(ferry_loader *L, int64_t b);
/* The decoder thread that feeds the hardware JPEG engine. */
void *fy_dev_decoder_main(void *arg);

/* loader.c, for device.c: runs one sample on the CPU path. */
void fy_run_cpu_sample(ferry_loader *L, fy_worker_state *w, slot *s, int64_t pos, int epoch);
/* loader.c, for device.c: claims up to max positions of one batch (mu
 * held, may wait, noting the thread idle meanwhile); returns the first
 * position and sets *n, or -1 to stop. */
int64_t fy_claim_chunk(ferry_loader *L, fy_note *note, slot **out, int max, int *n);
/* The CPU workers' idle seconds so far, summed (mu held). */
double fy_workers_idle_s(const ferry_loader *L, double now);
/* Marks position pos of slot s finished with status rc (mu not held). */
void fy_sample_finished(ferry_loader *L, slot *s, int64_t pos, int rc);

#endif
