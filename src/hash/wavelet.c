/* wavelet.c — the Haar transforms of imagehash's whash, with PyWavelets'
 * arithmetic (mode "symmetric", which for the Haar filter on even lengths
 * never reads past the edge):
 *
 *   analysis    a[o] = c * x[2o+1] + c * x[2o]      (dec_lo = [c, c])
 *               d[o] = -c * x[2o+1] + c * x[2o]     (dec_hi = [-c, c])
 *   synthesis   y[2i]   = c * a[i] + c * d[i]       (rec_lo = [c, c])
 *               y[2i+1] = c * a[i] - c * d[i]       (rec_hi = [c, -c])
 *
 * with c = 0.7071067811865476 (the butterflies: hash/haar_core.h, shared
 * with the GPU), in PyWavelets' order: a 2-D level transforms
 * along rows of the array (axis -2) first, then along columns (axis -1);
 * the inverse goes the other way. Keeping this order and these products
 * keeps every double identical to pywt's, which matters where block
 * averages tie with their median (flat areas). */
#include "hash/haar_core.h"
#include "hash/hash.h"

#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* Along axis -2 of an h x w array (pairs of rows): lo/hi are (h/2) x w. */
static void analyse_rows(const double *x, int h, int w, double *lo, double *hi) {
  for (int o = 0; o < h / 2; o++) {
    const double *r0 = x + (size_t)(2 * o) * w, *r1 = r0 + w;
    double *a = lo + (size_t)o * w;
    for (int j = 0; j < w; j++)
      a[j] = fy_haar_lo(r1[j], r0[j]);
    if (hi) {
      double *d = hi + (size_t)o * w;
      for (int j = 0; j < w; j++)
        d[j] = fy_haar_hi(r1[j], r0[j]);
    }
  }
}

/* Along axis -1 of an h x w array (pairs of columns): h x (w/2) each. */
static void analyse_cols(const double *x, int h, int w, double *lo, double *hi) {
  int w2 = w / 2;
  for (int i = 0; i < h; i++) {
    const double *r = x + (size_t)i * w;
    double *a = lo + (size_t)i * w2;
    for (int o = 0; o < w2; o++)
      a[o] = fy_haar_lo(r[2 * o + 1], r[2 * o]);
    if (hi) {
      double *d = hi + (size_t)i * w2;
      for (int o = 0; o < w2; o++)
        d[o] = fy_haar_hi(r[2 * o + 1], r[2 * o]);
    }
  }
}

/* Inverse along axis -1: a, d are h x w2; out is h x (2 w2). */
static void synth_cols(const double *a, const double *d, int h, int w2, double *out) {
  for (int i = 0; i < h; i++) {
    const double *ra = a + (size_t)i * w2, *rd = d + (size_t)i * w2;
    double *y = out + (size_t)i * 2 * w2;
    for (int k = 0; k < w2; k++) {
      y[2 * k] = fy_haar_even(ra[k], rd[k]);
      y[2 * k + 1] = fy_haar_odd(ra[k], rd[k]);
    }
  }
}

/* Inverse along axis -2: a, d are h2 x w; out is (2 h2) x w. */
static void synth_rows(const double *a, const double *d, int h2, int w, double *out) {
  for (int k = 0; k < h2; k++) {
    const double *ra = a + (size_t)k * w, *rd = d + (size_t)k * w;
    double *y0 = out + (size_t)(2 * k) * w, *y1 = y0 + w;
    for (int j = 0; j < w; j++) {
      y0[j] = fy_haar_even(ra[j], rd[j]);
      y1[j] = fy_haar_odd(ra[j], rd[j]);
    }
  }
}

size_t fy_haar_scratch_doubles(int n) {
  /* x (n^2) + detail bands of every level (< n^2) + two n^2/2 temporaries */
  return (size_t)n * n * 3 + 16;
}

void fy_haar_remove_ll(double *x, int n, double *scratch) {
  /* Analysis down to 1 x 1, keeping the detail bands (ad, da, dd) of each
   * level, largest first, in `bands`. */
  double *bands = scratch;              /* < n^2 doubles in all */
  double *ta = scratch + (size_t)n * n; /* n^2 / 2 */
  double *td = ta + (size_t)n * n / 2;  /* n^2 / 2 */
  size_t off = 0;
  int m = n;
  while (m > 1) {
    int h = m / 2;
    size_t q = (size_t)h * h;
    double *ad = bands + off, *da = ad + q, *dd = da + q;
    analyse_rows(x, m, m, ta, td);  /* a, d: h x m */
    analyse_cols(ta, h, m, x, ad);  /* aa -> x (h x h), ad */
    analyse_cols(td, h, m, da, dd); /* da, dd */
    off += 3 * q;
    m = h;
  }
  x[0] = x[0] * 0; /* imagehash: coeffs[0] *= 0 */
  /* Synthesis back up, smallest level first. */
  while (m < n) {
    int h = m;
    size_t q = (size_t)h * h;
    off -= 3 * q;
    const double *ad = bands + off, *da = ad + q, *dd = da + q;
    synth_cols(x, ad, h, h, ta);  /* a: h x 2h */
    synth_cols(da, dd, h, h, td); /* d: h x 2h */
    synth_rows(ta, td, h, 2 * h, x);
    m = 2 * h;
  }
}

void fy_haar_ll(double *x, int n, int levels, double *scratch) {
  int m = n;
  for (int l = 0; l < levels && m > 1; l++) {
    int h = m / 2;
    analyse_rows(x, m, m, scratch, NULL); /* a: h x m */
    analyse_cols(scratch, h, m, x, NULL); /* aa: h x h, into x */
    m = h;
  }
}
