/* resample_f.c — fast mode's small float image operations: a separable
 * Lanczos-3 with Pillow's geometry (so fast hashes sample the picture where
 * compatible ones do), an exact-area box average, and integer-factor box
 * reductions of decoded pixels. The images here are a few hundred pixels
 * across: plain loops are fast enough. */
#include "hash/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sinc(double x) {
  if (x == 0.0)
    return 1.0;
  x *= M_PI;
  return sin(x) / x;
}

static double lanczos3(double x) { return x > -3.0 && x < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0; }

/* Weights of output i along an axis: source [start, start + n), as
 * Pillow's precompute_coeffs places them, in double. */
static int lanczos_weights(double in0, double in1, int in_size, int out, int i, double *k, int kmax,
                           int *start) {
  double scale = (in1 - in0) / out, fs = scale > 1.0 ? scale : 1.0, support = 3.0 * fs;
  double center = in0 + (i + 0.5) * scale, ss = 1.0 / fs, ww = 0;
  int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
  if (xmin < 0)
    xmin = 0;
  if (xmax > in_size)
    xmax = in_size;
  int n = xmax - xmin;
  if (n > kmax)
    n = kmax;
  for (int x = 0; x < n; x++) {
    k[x] = lanczos3((x + xmin - center + 0.5) * ss);
    ww += k[x];
  }
  for (int x = 0; x < n; x++)
    k[x] = ww != 0.0 ? k[x] / ww : 0.0;
  *start = xmin;
  return n;
}

/* Area weights of output i: overlap of source pixels with
 * [in0 + i s, in0 + (i + 1) s). */
static int box_weights(double in0, double in1, int in_size, int out, int i, double *k, int kmax,
                       int *start) {
  double scale = (in1 - in0) / out, a = in0 + i * scale, b = a + scale, ww = 0;
  int x0 = (int)floor(a), x1 = (int)ceil(b);
  if (x0 < 0)
    x0 = 0;
  if (x1 > in_size)
    x1 = in_size;
  if (x1 <= x0) { /* degenerate: nearest pixel */
    x0 = (int)a < in_size ? (int)a : in_size - 1;
    k[0] = 1;
    *start = x0;
    return 1;
  }
  int n = x1 - x0 < kmax ? x1 - x0 : kmax;
  for (int x = 0; x < n; x++) {
    double lo = x0 + x > a ? x0 + x : a, hi = x0 + x + 1 < b ? x0 + x + 1 : b;
    k[x] = hi > lo ? hi - lo : 0;
    ww += k[x];
  }
  for (int x = 0; x < n; x++)
    k[x] /= ww;
  *start = x0;
  return n;
}

typedef int (*weights_fn)(double, double, int, int, int, double *, int, int *);

static int resample(const float *src, int sw, int sh, const double box[4], float *dst, int dw,
                    int dh, weights_fn weights, fy_buf *scratch) {
  int kmax = sw > sh ? sw : sh;
  size_t need = (size_t)dw * sh * sizeof(double) + (size_t)kmax * sizeof(double);
  int rc = fy_buf_reserve(scratch, need);
  if (rc)
    return fy_error(rc, "hash: out of memory resampling");
  double *tmp = scratch->p, *k = tmp + (size_t)dw * sh;
  /* horizontal: every source row to dw columns */
  for (int x = 0; x < dw; x++) {
    int start, n = weights(box[0], box[2], sw, dw, x, k, kmax, &start);
    for (int y = 0; y < sh; y++) {
      const float *row = src + (size_t)y * sw + start;
      double acc = 0;
      for (int t = 0; t < n; t++)
        acc += row[t] * k[t];
      tmp[(size_t)y * dw + x] = acc;
    }
  }
  /* vertical */
  for (int y = 0; y < dh; y++) {
    int start, n = weights(box[1], box[3], sh, dh, y, k, kmax, &start);
    for (int x = 0; x < dw; x++) {
      double acc = 0;
      for (int t = 0; t < n; t++)
        acc += tmp[(size_t)(start + t) * dw + x] * k[t];
      dst[(size_t)y * dw + x] = (float)acc;
    }
  }
  return FERRY_OK;
}

int fy_lanczos_f(const float *src, int sw, int sh, const double box[4], float *dst, int dw, int dh,
                 fy_buf *scratch) {
  return resample(src, sw, sh, box, dst, dw, dh, lanczos_weights, scratch);
}

int fy_box_f(const float *src, int sw, int sh, const double box[4], float *dst, int dw, int dh,
             fy_buf *scratch) {
  return resample(src, sw, sh, box, dst, dw, dh, box_weights, scratch);
}

static inline float pillow_lf(const uint8_t *p) {
  return (float)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
}

void fy_reduce_u8(const uint8_t *src, int w, int h, size_t stride, int channels, int f, float *gray,
                  uint8_t *rgb) {
  int ow = (w + f - 1) / f, oh = (h + f - 1) / f;
  for (int oy = 0; oy < oh; oy++) {
    int y0 = oy * f, y1 = y0 + f < h ? y0 + f : h;
    for (int ox = 0; ox < ow; ox++) {
      int x0 = ox * f, x1 = x0 + f < w ? x0 + f : w;
      double sg = 0, sr = 0, sgc = 0, sb = 0;
      for (int y = y0; y < y1; y++) {
        const uint8_t *p = src + (size_t)y * stride + (size_t)x0 * channels;
        for (int x = x0; x < x1; x++, p += channels) {
          if (channels == 1) {
            sg += p[0];
          } else {
            sg += pillow_lf(p);
            sr += p[0];
            sgc += p[1];
            sb += p[2];
          }
        }
      }
      double n = (double)(x1 - x0) * (y1 - y0);
      size_t o = (size_t)oy * ow + ox;
      gray[o] = (float)(sg / n);
      if (rgb) {
        uint8_t *q = rgb + o * 3;
        if (channels == 1) {
          q[0] = q[1] = q[2] = (uint8_t)(sg / n + 0.5);
        } else {
          q[0] = (uint8_t)(sr / n + 0.5);
          q[1] = (uint8_t)(sgc / n + 0.5);
          q[2] = (uint8_t)(sb / n + 0.5);
        }
      }
    }
  }
}
