/* hash_jobs.h — the jobs the GPU hash kernels read, as one declaration that
 * C (cuda/hash_plan.c writes them), CUDA (cuda/hash_gpu.cu) and OpenCL C
 * (opencl/hash.cl: the program's source takes this file as it is) compile
 * to the same layout: 64-bit fields first or 8-aligned, then 32-bit ones,
 * no pointers. Addresses are 64-bit numbers: device addresses for CUDA,
 * byte offsets into the round's buffers for OpenCL (opencl/hash_cl.c). */
#ifndef FY_HASH_HASH_JOBS_H
#define FY_HASH_HASH_JOBS_H

#ifdef __OPENCL_C_VERSION__
typedef ulong fy_u64;
typedef long fy_i64;
#else
#include <stdint.h>
typedef uint64_t fy_u64;
typedef int64_t fy_i64;
#endif

#define FY_HP_NGRID 5 /* ahash, dhash, dhash_v, phash, whash */
#define FY_HP_PREC 22 /* Pillow's fixed point (image/resample.h) */

/* One resampling pass: out(line, i) = clip8(bias + sum_t src(line,
 * start[i] - shift + t) * k[i][t]), src(line, pos) = src[line * sl + pos *
 * sp], out(line, i) = dst[line * dl + i * dp]. Items: lines * out, times
 * 32 in warp mode (32 items per output share its taps), padded to 32. */
typedef struct fy_hp_pass {
  fy_u64 src, dst, start, k;
  fy_i64 sl, sp, dl, dp;
  int lines, out, taps, shift;
  int warp;      /* 32 items per output (long windows) */
  int line_fast; /* consecutive items take consecutive lines (vertical) */
  fy_i64 begin;  /* the job's first item */
} fy_hp_pass;

/* RGB -> L of one image. */
typedef struct fy_hp_gray {
  fy_u64 src, dst;
  fy_i64 pitch;
  int w, h;
} fy_hp_gray;

/* One Haar step of one image (wavelet.c): type 0 analysis keeping the
 * detail bands, 1 synthesis, 2 analysis of the approximation only. h: the
 * half size (analysis output / synthesis input is h x h). */
typedef struct fy_hp_haar {
  int type, h, zero, from_u8;
  fy_u64 in, out, bands;
  fy_i64 begin;
} fy_hp_haar;

/* The thresholds of one image. */
typedef struct fy_hp_hash {
  fy_u64 grid[FY_HP_NGRID]; /* u8 grids, row-major, packed */
  fy_u64 wlow;              /* wHash: s x s doubles */
  int s;
  unsigned kinds;
} fy_hp_hash;

#endif
