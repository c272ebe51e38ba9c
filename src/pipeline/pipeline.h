/* pipeline.h — internals of the loader: epoch order, per-sample work. */
#ifndef FY_PIPELINE_H
#define FY_PIPELINE_H

#include "codec/codec.h"
#include "image/image.h"
#include "io/source.h"
#include "pack/pack.h"

#include <pthread.h>

/* The positions of an epoch for one rank: a permutation of the source
 * (identity without shuffle), then every world_size-th element from rank.
 * With drop_last every rank gets floor(n / world) samples; without, every
 * sample appears exactly once across ranks. Writes into order (n entries
 * of scratch) and returns this rank's count. */
int64_t fy_epoch_order(int64_t n, int shuffle, uint64_t seed, int epoch, int rank, int world,
                       int drop_last, int64_t *order);

/* The same for WebDataset shards (src->shard set): a contiguous run of the
 * (shuffled) shards' samples per rank, shuffled within a window of
 * `buffer` positions (0: 1000). scratch holds 2 * nshards + 1 entries. */
int64_t fy_epoch_order_shards(const fy_source *src, int shuffle, int buffer, uint64_t seed,
                              int epoch, int rank, int world, int drop_last, int64_t *order,
                              int64_t *scratch);

/* Random streams used per sample, so results depend only on (seed, epoch,
 * sample index), never on which thread ran it. */
enum { FY_STREAM_SHUFFLE = 1, FY_STREAM_CROP = 2, FY_STREAM_FLIP = 3 };

/* Crop box (fractional, upright source coordinates) for a sample. */
void fy_plan_box(const ferry_loader_options *o, uint64_t seed, int epoch, int64_t index, int src_w,
                 int src_h, fy_box *box);
/* Whether a sample is flipped. */
int fy_plan_flip(const ferry_loader_options *o, uint64_t seed, int epoch, int64_t index);

/* What one loader thread is doing now, for the stall watchdog (watch.c):
 * written by its own thread, read by the consumer when it has waited too
 * long. Fields are accessed atomically; `what` points to memory that lives
 * as long as the loader (a source path) or to a string literal. */
enum {
  FY_STAGE_IDLE = 0, /* waiting for a sample to claim */
  FY_STAGE_READ,     /* reading `what` */
  FY_STAGE_DECODE,   /* decoding `what` */
  FY_STAGE_RESIZE,   /* resampling and storing `what` */
  FY_STAGE_COPY,     /* copying `what` from a pack or the memory cache */
  FY_STAGE_ENGINE,   /* `count` images on the GPU's JPEG engine */
  FY_STAGE_PARKED    /* a worker the consumer does not need (engine_ctl.h) */
};

typedef struct fy_note {
  int stage;
  int count;
  const char *what;
  int64_t since_us; /* fy_now() in microseconds when the stage began */
} fy_note;

/* Notes that thread n is now at `stage` (NULL n: nothing). */
void fy_note_set(fy_note *n, int stage, const char *what, int count);
/* watch.c: pthread_cond_init on CLOCK_MONOTONIC (fy_now's clock, the
 * watchdog's deadlines); 0 on success. */
int fy_watch_cond_init(pthread_cond_t *cv);

/* One worker's reusable state. */
typedef struct fy_worker_state {
  fy_buf file;
  fy_decoder dec;
  fy_resize_ctx rs;
  fy_buf resized;
  fy_buf whole; /* exact centre crops: the whole image resized, before the crop */
  double read_s, decode_s, transform_s;
  fy_note *note; /* this thread's note for the watchdog, or NULL */
} fy_worker_state;

void fy_worker_state_free(fy_worker_state *w);

/* Reads (a file, or a shard's member), decodes, crops, resizes and stores
 * sample `index` of src into dst (one sample of the output tensor). Errors
 * name the file. */
int fy_process_sample(fy_worker_state *w, const ferry_loader_options *o,
                      const fy_store_params *store, const fy_source *src, int epoch, int64_t index,
                      void *dst);

/* The same for sample `index` of a pack: u8, no decoding, resampled only
 * when the output size differs or a random crop is asked for; JPEG, decoded
 * from the mapping as fy_process_sample decodes a file (errors name
 * "DIR/shard-NNNNN.fpk sample K"). */
int fy_process_pack_sample(fy_worker_state *w, const ferry_loader_options *o,
                           const fy_store_params *store, const fy_pack *p, int epoch, int64_t index,
                           void *dst);

#endif
