/* hash_plan.h — the host side of the GPU hashes (cuda/hash_gpu.cu), in
 * plain C so that it compiles and is tested without CUDA: the job structs
 * the kernels read, the resampling tables (cached by size), and the plan of
 * a round of images (every job of every kernel, the scratch arenas' sizes
 * and offsets, the one upload's layout).
 *
 * A round is planned twice: first with the arena bases at 0 (sizing), then,
 * once the caller has device memory of those sizes, with the real bases:
 * job addresses are base + offset, so the two plans differ only by the
 * bases. Addresses are device addresses held as uint64_t (CUDA), or
 * offsets into the round's buffers with the bases at the arenas' offsets
 * (OpenCL: opencl/hash_cl.c). */
#ifndef FY_CUDA_HASH_PLAN_H
#define FY_CUDA_HASH_PLAN_H

#include "core/internal.h"
#include "cuda/hash_gpu.h"

#include "hash/hash_jobs.h" /* the job structs (shared with the kernels) */

/* A table of one axis (fy_resize_axis_table), in -> out pixels; in == -out:
 * the identity (a copy). v: start[out], then k[out * taps]. */
typedef struct fy_hp_table {
  int in, out, taps, first, last;
  int32_t *v;
  size_t entries;
  int off; /* entry offset in this round's upload; -1: not yet */
} fy_hp_table;

/* The Haar jobs of one step (all images' step k, one launch). */
typedef struct fy_hp_step {
  fy_hp_haar *v;
  size_t n, cap;
} fy_hp_step;

typedef struct fy_hash_plan {
  /* the round's jobs */
  fy_hp_pass *stage[2]; /* resampling: full-resolution reads, intermediates */
  size_t nstage[2], capstage[2];
  fy_hp_gray *gray;
  size_t ngray, capgray;
  fy_hp_step *steps;
  size_t nsteps, capsteps;
  fy_hp_hash *hash;
  size_t nhash, caphash;
  fy_hp_table **tabref; /* tables used, in upload order */
  size_t ntabref, captabref;
  size_t u8_bytes, dbl_bytes; /* arena sizes */
  int tab_entries;
  uint64_t u8_base, dbl_base, tab_base; /* device addresses (0 while sizing) */
  /* the upload (fy_hash_plan_layout): tables at 0, then the job arrays */
  long long tot[2]; /* items of each resampling stage */
  long long *wtot;  /* items of each Haar step (nsteps) */
  size_t *off_w;    /* offsets of each Haar step's jobs (nsteps) */
  size_t off_p[2], off_g, off_h, bytes;
  size_t capw;
  /* kept across rounds */
  fy_hp_table **cache; /* stable addresses: jobs are planned with them */
  size_t ncache, capcache;
  fy_buf scratch;
} fy_hash_plan;

/* FERRY_OK when images [0, n) can be hashed at size s (8 or 16; 1 or 3
 * channels, a pitch that holds a row), else FERRY_EINVAL with a message. */
int fy_hash_plan_check_images(const fy_gpu_hash_image *im, int n, int s);

/* A zeroed plan is ready; free releases everything. */
void fy_hash_plan_free(fy_hash_plan *P);
/* Empties the round (tables stay cached, up to a bound). */
void fy_hash_plan_reset(fy_hash_plan *P);
/* Plans images [0, n) with the bases as set (reset first). */
int fy_hash_plan_all(fy_hash_plan *P, const fy_gpu_hash_image *im, int n, unsigned kinds, int s);
/* Device bytes image im needs (grids, intermediates, L image, Haar
 * scratch, tables), from a sizing plan; 0 on failure. Leaves P reset. */
size_t fy_hash_plan_image_bytes(fy_hash_plan *P, const fy_gpu_hash_image *im, unsigned kinds,
                                int s);
/* How many images from im[0] go in one round: at most max_images, and
 * (beyond the first) no more than `budget` bytes of scratch and, when
 * `host`, of staged input; *in_bytes gets their staged input bytes. */
int fy_hash_plan_round(fy_hash_plan *P, const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                       int host, size_t budget, int max_images, size_t *in_bytes);
/* Sets each job's `begin` (item counts padded to multiples of 32), the
 * totals and the upload's offsets (256-aligned: tables at 0, then stage 0,
 * stage 1, gray, each Haar step, hash jobs; `bytes` in all). */
int fy_hash_plan_layout(fy_hash_plan *P);
/* Writes the upload (P->bytes) to dst. */
void fy_hash_plan_write(const fy_hash_plan *P, void *dst);

/* The hashes of images [0, n) from the kernels' output (words: image i,
 * grid k at (i * FY_HP_NGRID + k) * 4, four 64-bit words each): out[i]
 * as ferry_hash_pixels gives them in compatible mode (width, height,
 * kinds, exact = 1; format left as it is). CUDA and OpenCL alike. */
void fy_hash_plan_results(const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                          const uint64_t *words, ferry_hash_result *out);

/* 256-byte alignment of arena and upload offsets. */
static inline size_t fy_hp_align256(size_t n) { return (n + 255) & ~(size_t)255; }
/* Bytes of an image's rows as the staging packs them (pitch kept). */
static inline size_t fy_hp_image_len(const fy_gpu_hash_image *im) {
  return im->pitch * (size_t)(im->height - 1) + (size_t)im->width * im->channels;
}

#endif
