/* run.h — the one hashing driver (run.c) behind ferry_hash_files (jobs/hash_files.c)
 * and catalog updates (jobs/catalog_update.c): work items 0..n-1, each a file
 * path, hashed on the cores; in compatible mode on a GPU the cores stop at
 * the pixels and a GPU hash queue hashes them in batches; in fast mode on a
 * GPU the JPEG engine's threads claim chunks of the same items beside the
 * cores. Every item is answered exactly once through the sink, from
 * whichever thread finished it. */
#ifndef FY_HASH_RUN_H
#define FY_HASH_RUN_H

#include "core/internal.h"

typedef struct fy_hash_sink {
  const char *(*path)(void *user, size_t k);
  /* status 0: r holds the hashes, size and format; otherwise item k failed
   * with `error` (r->format set when known). Called from several threads
   * at once: the sink locks what it shares. */
  void (*done)(void *user, size_t k, int status, const ferry_hash_result *r, const char *error);
  void *user;
} fy_hash_sink;

typedef struct fy_hash_run fy_hash_run;

/* A device's name for messages and reports: "cpu" (-1), "cuda:N",
 * "opencl:N", or "opencl" (FERRY_DEVICE_OPENCL_ANY); the CLI's too. */
const char *fy_hash_device_name(int device, char buf[24]);

/* FERRY_OK when `device` (>= 0: a CUDA device, or FERRY_DEVICE_OPENCL + N)
 * can hash in `mode`, else the reason ("cannot hash on GPU cuda:N: ...").
 * Compatible mode runs on either; fast mode's GPU part is nvJPEG's engine,
 * so an OpenCL device is refused there. Starts CUDA, not OpenCL (an
 * OpenCL device is only looked up in the loader's list). */
int fy_hash_device_check(int device, ferry_hash_mode mode);

/* engine_min_s of ferry_index_options and ferry_hash_files_options: fast
 * mode on a GPU starts the JPEG engine only when the cores, half a second
 * in, would take more than this many seconds for the rest (the engine's
 * start and close cost about a second of a core: 2,000 12 MP photos took
 * 0.78-0.86x the cores' time with it on an H100, 0.92-0.98x held back;
 * bench/CLAIMS.md C46). 0 starts it at once. */
#define FY_ENGINE_MIN_S_DEFAULT 2.5
#define FY_ENGINE_MIN_S_MAX 3600
/* FERRY_OK when s is 0..FY_ENGINE_MIN_S_MAX, else FERRY_EINVAL naming it. */
int fy_hash_engine_min_s_check(double s);

/* Starts hashing n items with `threads` CPU threads (<= 0: one per core)
 * on `device` (-1: the CPU; N: CUDA device N; FERRY_DEVICE_OPENCL + N:
 * OpenCL device N, compatible mode only), the JPEG engine of fast mode
 * held back as engine_min_s says. Errors (nothing started, nothing
 * answered): FERRY_EINVAL for engine_min_s, FERRY_ENOMEM, or the GPU's
 * queue refused ("cannot hash on GPU cuda:N: why"). When no thread can
 * start, the items are hashed in this thread before it returns. */
int fy_hash_run_start(const ferry_hash_options *o, size_t n, int threads, int device,
                      double engine_min_s, const fy_hash_sink *sink, fy_hash_run **out);

/* 1 once every item has been answered (every thread gone, nothing in
 * flight on the GPU or the engine): what a caller waiting for results
 * checks so that it never waits for answers that cannot come. */
int fy_hash_run_idle(fy_hash_run *r);

typedef struct fy_hash_run_report {
  size_t engine_files; /* items the JPEG engine decoded */
  char note[256];      /* why the JPEG engine was not used; "" when it was or was not asked */
} fy_hash_run_report;

/* Waits for every thread, the engine and the GPU queue; frees the run.
 * report may be NULL. */
void fy_hash_run_finish(fy_hash_run *r, fy_hash_run_report *report);

#endif
