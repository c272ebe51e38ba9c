/* yuv.cu — decoded video frames (NVDEC's NV12 / P016 surfaces: a luma plane
 * and an interleaved CbCr plane at half resolution) to upright 8-bit RGB in
 * device memory, for the batch kernels that resample them. Chroma is
 * upsampled bilinearly with MPEG-2/H.264 siting (co-sited horizontally,
 * centred between rows vertically); the colour matrix and range come from
 * the stream. */
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "cuda/gpu.h"
}
#define FY_CUDA_CONTEXT "CUDA (video frames)"
#include "cuda/cuda_check.h"

struct yuv_params {
  const uint8_t *luma, *chroma;
  int pitch, w, h, cw, ch, wide; /* wide: 16-bit samples */
  int orientation;               /* 1, 3, 6, 8 (EXIF) */
  float ys, yo, cs;              /* Y' = (Y - yo) * ys; C' = (C - 128) * cs */
  float rv, gu, gv, bu;          /* R = Y + rv V; G = Y - gu U - gv V; B = Y + bu U */
  uint8_t *dst;
  int dst_pitch;
};

__device__ static inline float sample(const uint8_t *row, int i, int wide) {
  return wide ? ((const uint16_t *)row)[i] * (1.0f / 256.0f) : (float)row[i];
}

/* (U, V) of chroma row cy, luma column x */
__device__ static inline void chroma_at(const yuv_params &p, int cy, int x, float *u, float *v) {
  const uint8_t *row = p.chroma + (size_t)cy * p.pitch;
  int c0 = x >> 1;
  if (x & 1) {
    int c1 = min(c0 + 1, p.cw - 1);
    *u = 0.5f * (sample(row, 2 * c0, p.wide) + sample(row, 2 * c1, p.wide));
    *v = 0.5f * (sample(row, 2 * c0 + 1, p.wide) + sample(row, 2 * c1 + 1, p.wide));
  } else {
    *u = sample(row, 2 * c0, p.wide);
    *v = sample(row, 2 * c0 + 1, p.wide);
  }
}

__device__ static inline uint8_t to_u8(float f) {
  return (uint8_t)fminf(fmaxf(f + 0.5f, 0.0f), 255.0f);
}

__global__ void k_yuv_rgb(yuv_params p) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= p.w || y >= p.h)
    return;
  float Y = sample(p.luma + (size_t)y * p.pitch, x, p.wide);
  /* chroma row centres sit at luma rows 2j + 0.5 */
  int j = y >> 1, j2 = (y & 1) ? min(j + 1, p.ch - 1) : max(j - 1, 0);
  float u0, v0, u1, v1;
  chroma_at(p, j, x, &u0, &v0);
  chroma_at(p, j2, x, &u1, &v1);
  float U = (0.75f * u0 + 0.25f * u1 - 128.0f) * p.cs;
  float V = (0.75f * v0 + 0.25f * v1 - 128.0f) * p.cs;
  Y = (Y - p.yo) * p.ys;
  int ox = x, oy = y;
  switch (p.orientation) {
  case 3: ox = p.w - 1 - x, oy = p.h - 1 - y; break;
  case 6: ox = p.h - 1 - y, oy = x; break;
  case 8: ox = y, oy = p.w - 1 - x; break;
  default: break;
  }
  uint8_t *o = p.dst + (size_t)oy * p.dst_pitch + (size_t)ox * 3;
  o[0] = to_u8(Y + p.rv * V);
  o[1] = to_u8(Y - p.gu * U - p.gv * V);
  o[2] = to_u8(Y + p.bu * U);
}

extern "C" int fy_gpu_yuv_to_rgb(const fy_gpu_yuv *f, uint8_t *dst, int dst_pitch, void *stream) {
  if (f->width < 1 || f->height < 1)
    return fy_error(FERRY_EINVAL, "video frame of size %dx%d", f->width, f->height);
  double kr = 0.299, kb = 0.114; /* BT.601 */
  if (f->matrix == FY_YUV_BT709)
    kr = 0.2126, kb = 0.0722;
  else if (f->matrix == FY_YUV_BT2020)
    kr = 0.2627, kb = 0.0593;
  double kg = 1 - kr - kb;
  yuv_params p;
  p.luma = (const uint8_t *)f->luma;
  p.chroma = (const uint8_t *)f->chroma;
  p.pitch = f->pitch;
  p.w = f->width;
  p.h = f->height;
  p.cw = (f->width + 1) / 2;
  p.ch = (f->height + 1) / 2;
  p.wide = f->wide;
  p.orientation = f->orientation;
  p.yo = f->full_range ? 0.0f : 16.0f;
  p.ys = f->full_range ? 1.0f : (float)(255.0 / 219.0);
  p.cs = f->full_range ? 1.0f : (float)(255.0 / 224.0);
  p.rv = (float)(2 * (1 - kr));
  p.bu = (float)(2 * (1 - kb));
  p.gu = (float)(2 * kb * (1 - kb) / kg);
  p.gv = (float)(2 * kr * (1 - kr) / kg);
  p.dst = dst;
  p.dst_pitch = dst_pitch;
  dim3 b(32, 8), g((f->width + 31) / 32, (f->height + 7) / 8);
  k_yuv_rgb<<<g, b, 0, (cudaStream_t)stream>>>(p);
  CU(cudaGetLastError(), "launching the colour conversion");
  return FERRY_OK;
}
