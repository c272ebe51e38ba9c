/* hash_gpu.h — imagehash's aHash, dHash, vertical dHash, pHash and wHash
 * of decoded images on a CUDA GPU, bit-identical to compatible mode
 * (src/hash/compat.c: Pillow's convert("L"), Pillow's Lanczos resize with
 * its fixed-point tables and pass order, scipy's DCT, pywt's Haar, numpy's
 * median). colorhash is not computed here: the caller counts it on the CPU
 * (fy_color_count_rgb) while the pixels are hot.
 *
 * Implemented in hash_gpu.cu (kernels and their launches; the host-side
 * plan is hash_plan.c, the batching queue hash_queue.c) with CUDA, or
 * hash_gpu_stub.c without (every call returns FERRY_EUNSUPPORTED "built
 * without CUDA").
 *
 * Per batch: an RGB -> L kernel (Pillow's integer formula), then the
 * resampling passes of every hash grid of every image as one flat list of
 * jobs per stage (stage 1 reads the full-resolution L image, stage 2 the
 * small intermediates), with the CPU resizer's own tables (built on the host
 * by fy_resize_axis_table, uploaded once per batch); then wHash's Haar
 * levels (one launch per level across the batch, 2x2-block-local doubles)
 * and one block per image for the thresholds, the DCT and the medians. The
 * double-precision kernels use explicit _rn intrinsics (and the file is
 * compiled with -fmad=false): no fused multiply-add, as on the CPU. */
#ifndef FY_CUDA_HASH_GPU_H
#define FY_CUDA_HASH_GPU_H

#include "core/internal.h"

/* The hashes the GPU computes: FERRY_HASH_ALL without colorhash. */
#define FY_GPU_HASH_KINDS (FERRY_HASH_ALL & ~FERRY_HASH_MASK(FERRY_HASH_COLORHASH))

/* One decoded 8-bit image: channels 3 (RGB interleaved, converted to L on
 * the device) or 1 (already Pillow's L). `data` is a device pointer for
 * fy_gpu_hash_batch / fy_gpu_hasher_run, a host pointer for
 * fy_gpu_hasher_run_host and the queue. */
typedef struct fy_gpu_hash_image {
  const uint8_t *data;
  int width, height, channels;
  size_t pitch; /* bytes per row */
} fy_gpu_hash_image;

/* FERRY_OK when device `device` can hash, else the reason as a ferry error
 * (FERRY_EUNSUPPORTED: built without CUDA, no device, no such device). */
int fy_gpu_hash_available(int device);
/* Without starting CUDA: 1 when the driver lists device `device`, 0 when
 * it cannot tell (fy_gpu_hash_available can), else a ferry error with the
 * reason (no such device; built without CUDA). */
int fy_gpu_listed(int device);

/* A reusable hashing context on one device: grow-only device and pinned
 * buffers, one stream. Not thread-safe (one thread drives it). */
typedef struct fy_gpu_hasher fy_gpu_hasher;

int fy_gpu_hasher_new(int device, fy_gpu_hasher **out);
void fy_gpu_hasher_free(fy_gpu_hasher *g);

/* Hashes n images in device memory: kinds & FY_GPU_HASH_KINDS (others are
 * ignored), hash size 8 or 16. out[i] gets width, height, kinds, exact = 1
 * and the hashes, exactly as ferry_hash_pixels() in compatible mode gives
 * them; format is left at 0. Images whose grids and scratch do not fit the
 * device budget together are run in several rounds. */
int fy_gpu_hasher_run(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n, unsigned kinds,
                      int hash_size, ferry_hash_result *out);
/* The same for images in host memory: copied through pinned staging and
 * uploaded in one transfer per round. */
int fy_gpu_hasher_run_host(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n, unsigned kinds,
                           int hash_size, ferry_hash_result *out);

/* The same for images staged in one pinned block [base, base + bytes)
 * (fy_gpu_hash_pinned_grow): uploaded as is in one transfer (the queue's
 * way, hash_queue.c: no copy on the host). */
int fy_gpu_hasher_run_pinned(fy_gpu_hasher *g, const void *base, size_t bytes,
                             const fy_gpu_hash_image *images, int n, unsigned kinds, int hash_size,
                             ferry_hash_result *out);
/* Pinned host memory for staging, grow-only: when *cap < n, *p is freed
 * and replaced by a larger block (device `device` current). */
int fy_gpu_hash_pinned_grow(int device, void **p, size_t *cap, size_t n);
void fy_gpu_hash_pinned_free(void *p);

/* The grid every signature starts from (src/hash/signature.c): the means
 * of each device image (RGB as Pillow's L) over the cells of a grid x grid
 * array, into out[i * grid * grid ..] on the host (floats, row-major). The
 * JPEG engine's files get their signatures from it (engine.c). */
int fy_gpu_hasher_grids(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n, int grid,
                        float *out);

/* One-shot form of fy_gpu_hasher_run (a context made and freed). */
int fy_gpu_hash_batch(int device, const fy_gpu_hash_image *images, int n, unsigned kinds,
                      int hash_size, ferry_hash_result *out);

/* Device memory for tests and benchmarks (images for fy_gpu_hasher_run):
 * allocation, upload of `bytes` from the host, release. */
int fy_gpu_hash_device_alloc(int device, size_t bytes, void **p);
int fy_gpu_hash_device_upload(int device, void *dst, const void *src, size_t bytes);
void fy_gpu_hash_device_free(int device, void *p);

/* ---------------------------------------------------- colorhash counts */

/* colorhash's pixel counts (struct fy_color_counts, hash/hash.h) of RGB
 * images in device memory, exactly as fy_color_count_rgb counts them on
 * the CPU (color_gpu.cu). One context per thread: its own stream and the
 * colour tables on the device. */
typedef struct fy_gpu_colorer fy_gpu_colorer;
struct fy_color_counts;

int fy_gpu_colorer_new(int device, fy_gpu_colorer **out);
void fy_gpu_colorer_free(fy_gpu_colorer *c);
/* images[i].channels must be 3; out[i] gets the counts of image i. */
int fy_gpu_color_counts(fy_gpu_colorer *c, const fy_gpu_hash_image *images, int n,
                        struct fy_color_counts *out);

/* ------------------------------------------------------- batching queue */

/* Many decoding threads, one GPU: a CUDA device, or OpenCL device N as
 * device = FERRY_DEVICE_OPENCL + N (FERRY_DEVICE_OPENCL_ANY: the first GPU,
 * opencl/hash_cl.c). Producers submit decoded host images
 * (copied at once into pinned staging, so the caller's buffer is free when
 * submit returns); the queue's own thread uploads and hashes a batch when it
 * holds `batch` images, when a producer waits for room, or when every
 * producer is done, while producers fill the other staging buffer. `done`
 * is called from the queue's thread for every submitted image, with the
 * hashes (r->hash, r->kinds, width, height) or an error status. */
typedef struct fy_gpu_hash_queue fy_gpu_hash_queue;
typedef void (*fy_gpu_hash_done)(void *user, size_t id, int status, const ferry_hash_result *r,
                                 const char *error);

int fy_gpu_hash_queue_new(int device, unsigned kinds, int hash_size, int batch, int producers,
                          fy_gpu_hash_done done, void *user, fy_gpu_hash_queue **out);
/* Thread-safe. Blocks while both staging buffers are full. */
int fy_gpu_hash_queue_submit(fy_gpu_hash_queue *q, size_t id, const fy_gpu_hash_image *im);
/* A producer will submit nothing more (call once per producer). */
void fy_gpu_hash_queue_producer_done(fy_gpu_hash_queue *q);

/* What the queue did (for benchmarks): batches run, images, seconds the
 * queue's thread spent uploading and hashing. */
typedef struct fy_gpu_hash_stats {
  size_t batches, images;
  double gpu_s;
} fy_gpu_hash_stats;

/* Waits until every submitted image is done, stops the thread and frees the
 * queue; *stats (may be NULL) gets what it did. Returns the first GPU
 * error, if any (the images it hit were reported through `done`). */
int fy_gpu_hash_queue_finish(fy_gpu_hash_queue *q, fy_gpu_hash_stats *stats);

#endif
