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
 * rearranged. Floating-point contraction (FMA) would change the results:
 * the file must be compiled without it (GCC in ISO C mode does not
 * contract; clang is told below). */
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

/* -------------------------------------------------- backward passes */

#define PM(a, b, c, d)                                                                             \
  do {                                                                                             \
    double c_ = (c), d_ = (d);                                                                     \
    (a) = c_ + d_;                                                                                 \
    (b) = c_ - d_;                                                                                 \
  } while (0)
/* (a + ib) = conj(c + id) * (e + if) */
#define MULPM(a, b, c, d, e, f)                                                                    \
  do {                                                                                             \
    double c_ = (c), d_ = (d), e_ = (e), f_ = (f);                                                 \
    (a) = c_ * e_ + d_ * f_;                                                                       \
    (b) = c_ * f_ - d_ * e_;                                                                       \
  } while (0)

static void radb2(size_t ido, size_t l1, const double *cc, double *ch, const double *wa) {
#define CC(a, b, c) cc[(a) + ido * ((b) + 2 * (c))]
#define CH(a, b, c) ch[(a) + ido * ((b) + l1 * (c))]
#define WA(x, i) wa[(i) + (x) * (ido - 1)]
  for (size_t k = 0; k < l1; k++)
    PM(CH(0, k, 0), CH(0, k, 1), CC(0, 0, k), CC(ido - 1, 1, k));
  if ((ido & 1) == 0)
    for (size_t k = 0; k < l1; k++) {
      CH(ido - 1, k, 0) = 2 * CC(ido - 1, 0, k);
      CH(ido - 1, k, 1) = -2 * CC(0, 1, k);
    }
  if (ido <= 2)
    return;
  for (size_t k = 0; k < l1; k++)
    for (size_t i = 2; i < ido; i += 2) {
      size_t ic = ido - i;
      double ti2, tr2;
      PM(CH(i - 1, k, 0), tr2, CC(i - 1, 0, k), CC(ic - 1, 1, k));
      PM(ti2, CH(i, k, 0), CC(i, 0, k), CC(ic, 1, k));
      MULPM(CH(i, k, 1), CH(i - 1, k, 1), WA(0, i - 2), WA(0, i - 1), ti2, tr2);
    }
#undef CC
}

static void radb4(size_t ido, size_t l1, const double *cc, double *ch, const double *wa) {
#define CC(a, b, c) cc[(a) + ido * ((b) + 4 * (c))]
  const double sqrt2 = (double)1.414213562373095048801688724209698L;
  for (size_t k = 0; k < l1; k++) {
    double tr1, tr2;
    PM(tr2, tr1, CC(0, 0, k), CC(ido - 1, 3, k));
    double tr3 = 2 * CC(ido - 1, 1, k);
    double tr4 = 2 * CC(0, 2, k);
    PM(CH(0, k, 0), CH(0, k, 2), tr2, tr3);
    PM(CH(0, k, 3), CH(0, k, 1), tr1, tr4);
  }
  if ((ido & 1) == 0)
    for (size_t k = 0; k < l1; k++) {
      double tr1, tr2, ti1, ti2;
      PM(ti1, ti2, CC(0, 3, k), CC(0, 1, k));
      PM(tr2, tr1, CC(ido - 1, 0, k), CC(ido - 1, 2, k));
      CH(ido - 1, k, 0) = tr2 + tr2;
      CH(ido - 1, k, 1) = sqrt2 * (tr1 - ti1);
      CH(ido - 1, k, 2) = ti2 + ti2;
      CH(ido - 1, k, 3) = -sqrt2 * (tr1 + ti1);
    }
  if (ido <= 2)
    return;
  for (size_t k = 0; k < l1; k++)
    for (size_t i = 2; i < ido; i += 2) {
      double ci2, ci3, ci4, cr2, cr3, cr4, ti1, ti2, ti3, ti4, tr1, tr2, tr3, tr4;
      size_t ic = ido - i;
      PM(tr2, tr1, CC(i - 1, 0, k), CC(ic - 1, 3, k));
      PM(ti1, ti2, CC(i, 0, k), CC(ic, 3, k));
      PM(tr4, ti3, CC(i, 2, k), CC(ic, 1, k));
      PM(tr3, ti4, CC(i - 1, 2, k), CC(ic - 1, 1, k));
      PM(CH(i - 1, k, 0), cr3, tr2, tr3);
      PM(CH(i, k, 0), ci3, ti2, ti3);
      PM(cr4, cr2, tr1, tr4);
      PM(ci2, ci4, ti1, ti4);
      MULPM(CH(i, k, 1), CH(i - 1, k, 1), WA(0, i - 2), WA(0, i - 1), ci2, cr2);
      MULPM(CH(i, k, 2), CH(i - 1, k, 2), WA(1, i - 2), WA(1, i - 1), ci3, cr3);
      MULPM(CH(i, k, 3), CH(i - 1, k, 3), WA(2, i - 2), WA(2, i - 1), ci4, cr4);
    }
#undef CC
#undef CH
#undef WA
}

/* pocketfft rfftp::exec(c, 1, r2hc = false). */
static void rfft_backward(const fy_dct_plan *p, double *c) {
  double buf[FY_DCT_MAX];
  double *p1 = c, *p2 = buf;
  size_t n = (size_t)p->n, l1 = 1;
  for (int k = 0; k < p->nfct; k++) {
    size_t ip = (size_t)p->fct[k], ido = n / (ip * l1);
    const double *wa = p->twmem + p->tw[k];
    if (ip == 4)
      radb4(ido, l1, p1, p2, wa);
    else
      radb2(ido, l1, p1, p2, wa);
    double *t = p1;
    p1 = p2;
    p2 = t;
    l1 *= ip;
  }
  if (p1 != c)
    memcpy(c, p1, n * sizeof *c);
}

void fy_dct2(const fy_dct_plan *p, double *c) {
  size_t N = (size_t)p->n, NS2 = (N + 1) / 2;
  c[0] *= 2;
  if ((N & 1) == 0)
    c[N - 1] *= 2;
  for (size_t k = 1; k < N - 1; k += 2) { /* MPINPLACE(c[k + 1], c[k]) */
    double t = c[k + 1];
    c[k + 1] -= c[k];
    c[k] = t + c[k];
  }
  rfft_backward(p, c);
  const double *tw = p->twiddle;
  for (size_t k = 1, kc = N - 1; k < NS2; k++, kc--) {
    double t1 = tw[k - 1] * c[kc] + tw[kc - 1] * c[k];
    double t2 = tw[k - 1] * c[k] - tw[kc - 1] * c[kc];
    c[k] = 0.5 * (t1 + t2);
    c[kc] = 0.5 * (t1 - t2);
  }
  if ((N & 1) == 0)
    c[NS2] *= tw[NS2 - 1];
}

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
