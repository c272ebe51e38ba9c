/* dct.c — the DCT-II that scipy.fftpack.dct computes (type 2, no
 * normalisation), reproduced operation for operation so that pHash
 * thresholds the very same doubles that imagehash does.
 *
 * scipy runs pocketfft: the DCT-II of length N is a real backward FFT
 * (halfcomplex to real) of a butterflied input, followed by a twiddle pass.
 * The FFT is FFTPACK's radix-4/radix-2 backward passes with pocketfft's
 * twiddle factors (cos/sin of multiples of 2 pi / n, built from two small
 * tables as pocketfft's sincos_2pibyn does). The rounding of every step
 * matters only where two coefficients tie with the median (flat or
 * one-pixel-wide images), but there it decides the hash, so nothing here is
 * rearranged. The transform itself is hash/dct_core.h (shared with the
 * GPU); this file builds its plan. Floating-point contraction (FMA) would
 * change the results: the file must be compiled without it (GCC in ISO C
 * mode does not contract; clang is told below). */
#include "hash/hash.h"

#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ------------------------------------------------------------ twiddles */

/* pocketfft's sincos_2pibyn(n): e^(2 pi i idx / n) for 0 <= idx < n. */
typedef struct unity_roots {
  size_t n, mask, shift;
  double v1r[FY_DCT_MAX], v1i[FY_DCT_MAX], v2r[FY_DCT_MAX], v2i[FY_DCT_MAX];
} unity_roots;

static void root_calc(size_t x, size_t n, double ang, double *re, double *im) {
  x <<= 3;
  if (x < 4 * n) { /* first half */
    if (x < 2 * n) {
      if (x < n) {
        *re = cos((double)x * ang), *im = sin((double)x * ang);
        return;
      }
      *re = sin((double)(2 * n - x) * ang), *im = cos((double)(2 * n - x) * ang);
      return;
    }
    x -= 2 * n;
    if (x < n) {
      *re = -sin((double)x * ang), *im = cos((double)x * ang);
      return;
    }
    *re = -cos((double)(2 * n - x) * ang), *im = sin((double)(2 * n - x) * ang);
    return;
  }
  x = 8 * n - x;
  if (x < 2 * n) {
    if (x < n) {
      *re = cos((double)x * ang), *im = -sin((double)x * ang);
      return;
    }
    *re = sin((double)(2 * n - x) * ang), *im = -cos((double)(2 * n - x) * ang);
    return;
  }
  x -= 2 * n;
  if (x < n) {
    *re = -sin((double)x * ang), *im = -cos((double)x * ang);
    return;
  }
  *re = -cos((double)(2 * n - x) * ang), *im = -sin((double)(2 * n - x) * ang);
}

static void roots_init(unity_roots *u, size_t n) {
  const long double pi = 3.141592653589793238462643383279502884197L;
  double ang = (double)(0.25L * pi / (long double)n);
  size_t nval = (n + 2) / 2;
  u->n = n;
  u->shift = 1;
  while (((size_t)1 << u->shift) * ((size_t)1 << u->shift) < nval)
    u->shift++;
  u->mask = ((size_t)1 << u->shift) - 1;
  u->v1r[0] = 1, u->v1i[0] = 0;
  for (size_t i = 1; i <= u->mask; i++)
    root_calc(i, n, ang, &u->v1r[i], &u->v1i[i]);
  size_t n2 = (nval + u->mask) / (u->mask + 1);
  u->v2r[0] = 1, u->v2i[0] = 0;
  for (size_t i = 1; i < n2; i++)
    root_calc(i * (u->mask + 1), n, ang, &u->v2r[i], &u->v2i[i]);
}

static void root_get(const unity_roots *u, size_t idx, double *re, double *im) {
  int conj = 0;
  if (2 * idx > u->n) {
    idx = u->n - idx;
    conj = 1;
  }
  double ar = u->v1r[idx & u->mask], ai = u->v1i[idx & u->mask];
  double br = u->v2r[idx >> u->shift], bi = u->v2i[idx >> u->shift];
  *re = ar * br - ai * bi;
  double i = ar * bi + ai * br;
  *im = conj ? -i : i;
}

/* ------------------------------------------------------------- plan */

int fy_dct_plan_init(fy_dct_plan *p, int n) {
  if (n < 4 || n > FY_DCT_MAX || (n & (n - 1)))
    return FERRY_EINVAL;
  memset(p, 0, sizeof *p);
  p->n = n;
  /* pocketfft's factorisation: fours first, then a two moved to the front */
  size_t len = (size_t)n;
  while (len % 4 == 0) {
    p->fct[p->nfct++] = 4;
    len >>= 2;
  }
  if (len % 2 == 0) {
    len >>= 1;
    p->fct[p->nfct++] = 2;
    int t = p->fct[0];
    p->fct[0] = p->fct[p->nfct - 1];
    p->fct[p->nfct - 1] = t;
  }
  unity_roots local, *roots = &local;
  roots_init(roots, (size_t)n);
  size_t l1 = 1, used = 0;
  for (int k = 0; k < p->nfct; k++) {
    size_t ip = (size_t)p->fct[k], ido = (size_t)n / (l1 * ip);
    p->tw[k] = used;
    if (k < p->nfct - 1) {
      for (size_t j = 1; j < ip; j++)
        for (size_t i = 1; i <= (ido - 1) / 2; i++) {
          double re, im;
          root_get(roots, j * l1 * i, &re, &im);
          p->twmem[used + (j - 1) * (ido - 1) + 2 * i - 2] = re;
          p->twmem[used + (j - 1) * (ido - 1) + 2 * i - 1] = im;
        }
      used += (ip - 1) * (ido - 1);
    }
    l1 *= ip;
  }
  roots_init(roots, 4 * (size_t)n);
  for (int i = 0; i < n; i++) {
    double re, im;
    root_get(roots, (size_t)i + 1, &re, &im);
    p->twiddle[i] = re;
  }
  return FERRY_OK;
}

/* ------------------------------------------------------------ DCT-II */

void fy_dct2(const fy_dct_plan *p, double *c) { fy_dct2_core(p, c); }

void fy_dct2_2d_low(const fy_dct_plan *p, const uint8_t *pixels, size_t stride, int keep,
                    double *out) {
  int n = p->n;
  double col[FY_DCT_MAX], tmp[FY_DCT_MAX * FY_DCT_MAX];
  /* axis 0: every column */
  for (int x = 0; x < n; x++) {
    for (int y = 0; y < n; y++)
      col[y] = pixels[(size_t)y * stride + x];
    fy_dct2(p, col);
    for (int y = 0; y < n; y++)
      tmp[y * n + x] = col[y];
  }
  /* axis 1: only the rows that are kept */
  for (int y = 0; y < keep; y++) {
    fy_dct2(p, tmp + y * n);
    memcpy(out + (size_t)y * keep, tmp + y * n, (size_t)keep * sizeof *out);
  }
}
