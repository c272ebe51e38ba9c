/* coeffs.c — resampling weights: Pillow's antialiased filters (bit-exact
 * fixed-point weights) and classic 2-tap bilinear interpolation. */
#include "image/resample.h"

#include <math.h>
#include <string.h>

#define FY_PI 3.14159265358979323846

/* A product rounded to double before it is added to anything. Pillow's
 * wheels do not fuse a * b + c into one multiply-add, and a fused center or
 * bicubic weight differs in the last bit, which moves a window edge or a
 * fixed-point weight now and then. The volatile store keeps compilers told
 * to fuse (-ffp-contract=fast, FMA targets) from doing it here. */
static double mul(double a, double b) {
  volatile double p = a * b;
  return p;
}

/* The filters, as functions of the distance in (scaled) source pixels. */
static double filter_box(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

static double filter_triangle(double x) {
  if (x < 0.0)
    x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

/* Keys' cubic with a = -0.5, written in the order Pillow evaluates it. */
static double filter_bicubic(double x) {
  const double a = -0.5;
  if (x < 0.0)
    x = -x;
  if (x < 1.0)
    return mul(mul(mul(a + 2.0, x) - (a + 3.0), x), x) + 1;
  if (x < 2.0)
    return mul(mul(mul(x - 5, x) + 8, x) - 4, a);
  return 0.0;
}

static double sinc(double x) {
  if (x == 0.0)
    return 1.0;
  x = x * FY_PI;
  return sin(x) / x;
}

static double filter_lanczos(double x) {
  if (-3.0 <= x && x < 3.0)
    return sinc(x) * sinc(x / 3);
  return 0.0;
}

typedef struct filter_def {
  double (*fn)(double);
  double support;
} filter_def;

static filter_def filter_of(ferry_filter filter) {
  switch (filter) {
  case FERRY_FILTER_AREA: return (filter_def){filter_box, 0.5};
  case FERRY_FILTER_BICUBIC: return (filter_def){filter_bicubic, 2.0};
  case FERRY_FILTER_LANCZOS: return (filter_def){filter_lanczos, 3.0};
  default: return (filter_def){filter_triangle, 1.0};
  }
}

int fy_coeffs_max_taps(ferry_filter filter, double in_span, int out) {
  if (filter == FERRY_FILTER_NEAREST)
    return 0;
  if (filter == FERRY_FILTER_BILINEAR)
    return 2;
  double scale = in_span / out;
  double support = filter_of(filter).support * (scale < 1.0 ? 1.0 : scale);
  /* Pillow's bound; computed in double because a huge reduction would
   * overflow int (the caller caps it at the axis length). */
  double taps = ceil(support) * 2 + 1;
  return taps > (double)(1 << 30) ? (1 << 30) : (int)taps;
}

/* Scratch layout: double w[max_taps]; int32 start[out], n[out],
 * k[out * max_taps]. */
size_t fy_coeffs_bytes(int out, int max_taps) {
  size_t ints, k, w;
  if (!fy_mul_size((size_t)out, (size_t)max_taps, &k) ||
      !fy_mul_size(k + 2 * (size_t)out, 4, &ints))
    return 0;
  w = (size_t)max_taps * sizeof(double);
  return ints > SIZE_MAX - w ? 0 : ints + w;
}

/* Fixed point with round-half-away, as Pillow's normalize_coeffs_8bpc. */
static int32_t to_fixed(double w) {
  double scaled = w * (double)(1 << FY_PRECISION_BITS);
  return w < 0 ? (int32_t)(-0.5 + scaled) : (int32_t)(0.5 + scaled);
}

/* One output pixel of a Pillow filter: its window [*xmin, *xmin + n) and
 * fixed-point weights in k. Same operations in the same order as Pillow's
 * precompute_coeffs, so the doubles, and then the weights, are identical. */
static int pillow_window(filter_def f, int in_size, double center, double support, double inv_scale,
                         double *w, int32_t *k, int *xmin_out) {
  double lo = center - support + 0.5, hi = center + support + 0.5;
  /* Clamped before the int conversion, which could overflow otherwise. */
  int xmin = lo < 0.0 ? 0 : (int)lo;
  int xmax = hi > (double)in_size ? in_size : (int)hi;
  int n = xmax - xmin, j;
  double ww = 0.0;
  for (j = 0; j < n; j++) {
    double d = (double)(j + xmin) - center + 0.5;
    w[j] = f.fn(mul(d, inv_scale));
    ww += w[j];
  }
  for (j = 0; j < n; j++) {
    if (ww != 0.0)
      w[j] /= ww;
    k[j] = to_fixed(w[j]);
  }
  *xmin_out = xmin;
  return n;
}

static void build_pillow(ferry_filter filter, int in_size, float in0, float in1, int out, double *w,
                         int32_t *start, int32_t *n, int32_t *k, int max_taps) {
  filter_def f = filter_of(filter);
  /* Pillow takes the box as float and subtracts in float. */
  float span = in1 - in0;
  double scale = (double)span / out;
  double filterscale = scale < 1.0 ? 1.0 : scale;
  double support = mul(f.support, filterscale);
  double inv_scale = 1.0 / filterscale;
  for (int i = 0; i < out; i++) {
    double center = (double)in0 + mul(i + 0.5, scale);
    int xmin;
    n[i] =
        pillow_window(f, in_size, center, support, inv_scale, w, k + (size_t)i * max_taps, &xmin);
    start[i] = xmin;
  }
}

/* Classic interpolation between the two nearest pixels (half-pixel
 * centres, edges clamped to the image as OpenCV does). */
static void build_bilinear(int in_size, float in0, float in1, int out, int32_t *start, int32_t *n,
                           int32_t *k, int max_taps) {
  double scale = (double)(in1 - in0) / out;
  for (int i = 0; i < out; i++) {
    double sx = (double)in0 + (i + 0.5) * scale - 0.5;
    int x = sx <= 0.0 ? 0 : (int)sx;
    double frac = sx <= 0.0 ? 0.0 : sx - x;
    if (x >= in_size - 1) {
      x = in_size - 1;
      frac = 0.0;
    }
    int32_t w1 = (int32_t)(frac * (double)(1 << FY_PRECISION_BITS) + 0.5);
    start[i] = x;
    n[i] = w1 ? 2 : 1;
    k[(size_t)i * max_taps] = (1 << FY_PRECISION_BITS) - w1;
    if (w1) /* then x + 1 < in_size, so max_taps is 2 */
      k[(size_t)i * max_taps + 1] = w1;
  }
}

/* Repacks the windows to one common length `taps` (zero weights pad them)
 * and keeps every padded window inside [first, last). */
static void pack_windows(fy_coeffs *c, const int32_t *n, int max_taps, int in_size, int32_t *tmp) {
  int taps = 0, first = in_size, last = 0, i;
  for (i = 0; i < c->out; i++) {
    if (n[i] > taps)
      taps = n[i];
    if (c->start[i] < first)
      first = c->start[i];
    if (c->start[i] + n[i] > last)
      last = c->start[i] + n[i];
  }
  if (taps == 0) /* only empty windows (an empty box at the edge) */
    taps = 1;
  if (last - first < taps) {
    last = first + taps > in_size ? in_size : first + taps;
    first = last - taps;
  }
  for (i = 0; i < c->out; i++) {
    int s = c->start[i] > last - taps ? last - taps : c->start[i];
    memcpy(tmp, c->k + (size_t)i * max_taps, (size_t)n[i] * sizeof(int32_t));
    int32_t *dst = c->k + (size_t)i * taps;
    memset(dst, 0, (size_t)taps * sizeof(int32_t));
    memcpy(dst + (c->start[i] - s), tmp, (size_t)n[i] * sizeof(int32_t));
    c->start[i] = s;
  }
  c->taps = taps;
  c->first = first;
  c->last = last;
}

void fy_coeffs_build(ferry_filter filter, int in_size, float in0, float in1, int out, int max_taps,
                     void *mem, fy_coeffs *c) {
  double *w = mem;
  int32_t *start = (int32_t *)(w + max_taps);
  int32_t *n = start + out;
  c->start = start;
  c->k = n + out;
  c->out = out;
  if (filter == FERRY_FILTER_BILINEAR)
    build_bilinear(in_size, in0, in1, out, start, n, c->k, max_taps);
  else
    build_pillow(filter, in_size, in0, in1, out, w, start, n, c->k, max_taps);
  pack_windows(c, n, max_taps, in_size, (int32_t *)w);
}

void fy_coeffs_shift(fy_coeffs *c, int offset) {
  for (int i = 0; i < c->out; i++)
    c->start[i] -= offset;
  c->first -= offset;
  c->last -= offset;
}

void fy_nearest_table(int in_size, float in0, float in1, int out, int32_t *index) {
  double step = (double)(in1 - in0) / out;
  double pos = (double)in0 + step * 0.5;
  for (int i = 0; i < out; i++) {
    /* Truncation, with everything left of 0 outside (Pillow's COORD). */
    int x = pos < 0.0 ? -1 : pos >= (double)in_size ? in_size : (int)pos;
    index[i] = x < in_size ? x : -1;
    pos += step;
  }
}
