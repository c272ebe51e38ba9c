/* engine.h — fast-mode hashing with the GPU's JPEG engine beside the CPU.
 *
 * The hardware JPEG decoder of A100/H100-class GPUs is a separate unit
 * from the SMs and from the CPU cores: while the CPU threads hash files in
 * fast mode (DC coefficients), engine threads claim chunks of the same
 * work, decode the colour JPEGs the engine accepts to their luma plane in
 * device memory (RGB when colorhash is asked for) and hash them there with
 * the GPU hash kernels (compatible mode's formulas on the full-resolution
 * pixels: closer to imagehash than the DC path; colorhash counted on the
 * GPU as the CPU counts it). Files the engine does not take (other
 * formats, grayscale, progressive, damaged, over the limits) are hashed on
 * the CPU by the engine thread itself, so nothing is lost; the split
 * follows the speed of each side.
 *
 * The two paths agree to a few bits (docs/DEDUP.md has the measured
 * figures); which one hashed a file depends on timing. A run that must
 * be reproducible bit for bit uses the CPU alone, or compatible mode. */
#ifndef FY_HASH_ENGINE_H
#define FY_HASH_ENGINE_H

#include "core/internal.h"

/* Where the engine threads take their work from and give it back. Every
 * callback may be called from several engine threads at once. */
typedef struct fy_engine_feed {
  /* Claims up to `max` work items into ids; returns how many (0: none
   * left). Shares its counter with the caller's CPU threads. */
  size_t (*claim)(void *user, size_t max, size_t *ids);
  const char *(*path)(void *user, size_t id);
  /* status 0: r has the hashes, width, height and format; otherwise the
   * file failed with `error` (r->format set when known). on_engine: 1 when
   * the JPEG engine decoded it, 0 when the CPU hashed it in fast mode. */
  void (*done)(void *user, size_t id, int status, const ferry_hash_result *r, const char *error,
               int on_engine);
  void *user;
} fy_engine_feed;

typedef struct fy_engine_stats {
  size_t engine; /* files decoded by the JPEG engine */
  size_t cpu;    /* files the engine threads hashed on the CPU */
  size_t chunks;
} fy_engine_stats;

typedef struct fy_hash_engine fy_hash_engine;

/* Starts `threads` engine threads (0: the default, 3) on GPU `device` for
 * fast-mode options o. FERRY_EUNSUPPORTED with the reason when they cannot
 * run there (built without CUDA, no device, no JPEG engine); the caller
 * then hashes on the CPU alone. */
int fy_hash_engine_start(int device, const ferry_hash_options *o, int threads,
                         const fy_engine_feed *feed, fy_hash_engine **out);
/* Waits until the threads have found nothing more to claim and every file
 * they claimed is done; frees the engine. *stats may be NULL. */
void fy_hash_engine_finish(fy_hash_engine *e, fy_engine_stats *stats);

#endif
