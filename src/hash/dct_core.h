/* dct_core.h — the one copy of the DCT-II that scipy.fftpack.dct computes
 * (pocketfft: a butterflied input, FFTPACK's radix-4/radix-2 backward real
 * FFT passes, a twiddle pass), as static inline functions that C (hash/dct.c,
 * the CPU's pHash) and CUDA (cuda/hash_gpu.cu, one thread per column or
 * row) both compile, every operation written once with fp_core.h's
 * unfused double operations. The plan (factors and twiddles) is built on
 * the host by fy_dct_plan_init (dct.c) and used as is on either side. */
#ifndef FY_HASH_DCT_CORE_H
#define FY_HASH_DCT_CORE_H

#ifndef __OPENCL_C_VERSION__ /* OpenCL: the program's sources come in order (src/opencl) */
#include <stddef.h>

#include "hash/fp_core.h"
#endif

#define FY_DCT_MAX 64 /* pHash of hash size 16: a 64-point DCT */

/* A DCT-II of length n (a power of two, 4..FY_DCT_MAX) as scipy computes
 * it: the FFT factors, the FFT twiddles and the DCT twiddles. */
typedef struct fy_dct_plan {
  int n, nfct;
  int fct[8];
  size_t tw[8]; /* offsets of each factor's twiddles */
  double twmem[2 * FY_DCT_MAX];
  double twiddle[FY_DCT_MAX];
} fy_dct_plan;

/* a = c + d, b = c - d */
#define FY_PM(a, b, c, d)                                                                          \
  do {                                                                                             \
    double c_ = (c), d_ = (d);                                                                     \
    (a) = FY_DADD(c_, d_);                                                                         \
    (b) = FY_DSUB(c_, d_);                                                                         \
  } while (0)
/* (a + ib) = conj(c + id) * (e + if) */
#define FY_MULPM(a, b, c, d, e, f)                                                                 \
  do {                                                                                             \
    double c_ = (c), d_ = (d), e_ = (e), f_ = (f);                                                 \
    (a) = FY_DADD(FY_DMUL(c_, e_), FY_DMUL(d_, f_));                                               \
    (b) = FY_DSUB(FY_DMUL(c_, f_), FY_DMUL(d_, e_));                                               \
  } while (0)

#define FY_CH(a, b, c) ch[(a) + ido * ((b) + l1 * (c))]
#define FY_WA(x, i) wa[(i) + (x) * (ido - 1)]

static inline FY_HD void fy_radb2(size_t ido, size_t l1, const double *cc, double *ch,
                                  const double *wa) {
  FY_NO_CONTRACT
#define CC(a, b, c) cc[(a) + ido * ((b) + 2 * (c))]
  for (size_t k = 0; k < l1; k++)
    FY_PM(FY_CH(0, k, 0), FY_CH(0, k, 1), CC(0, 0, k), CC(ido - 1, 1, k));
  if ((ido & 1) == 0)
    for (size_t k = 0; k < l1; k++) {
      FY_CH(ido - 1, k, 0) = FY_DMUL(2.0, CC(ido - 1, 0, k));
      FY_CH(ido - 1, k, 1) = FY_DMUL(-2.0, CC(0, 1, k));
    }
  if (ido <= 2)
    return;
  for (size_t k = 0; k < l1; k++)
    for (size_t i = 2; i < ido; i += 2) {
      size_t ic = ido - i;
      double ti2, tr2;
      FY_PM(FY_CH(i - 1, k, 0), tr2, CC(i - 1, 0, k), CC(ic - 1, 1, k));
      FY_PM(ti2, FY_CH(i, k, 0), CC(i, 0, k), CC(ic, 1, k));
      FY_MULPM(FY_CH(i, k, 1), FY_CH(i - 1, k, 1), FY_WA(0, i - 2), FY_WA(0, i - 1), ti2, tr2);
    }
#undef CC
}

static inline FY_HD void fy_radb4(size_t ido, size_t l1, const double *cc, double *ch,
                                  const double *wa) {
  FY_NO_CONTRACT
#define CC(a, b, c) cc[(a) + ido * ((b) + 4 * (c))]
  const double sqrt2 = 1.4142135623730951; /* the double nearest sqrt(2) */
  for (size_t k = 0; k < l1; k++) {
    double tr1, tr2;
    FY_PM(tr2, tr1, CC(0, 0, k), CC(ido - 1, 3, k));
    double tr3 = FY_DMUL(2.0, CC(ido - 1, 1, k));
    double tr4 = FY_DMUL(2.0, CC(0, 2, k));
    FY_PM(FY_CH(0, k, 0), FY_CH(0, k, 2), tr2, tr3);
    FY_PM(FY_CH(0, k, 3), FY_CH(0, k, 1), tr1, tr4);
  }
  if ((ido & 1) == 0)
    for (size_t k = 0; k < l1; k++) {
      double tr1, tr2, ti1, ti2;
      FY_PM(ti1, ti2, CC(0, 3, k), CC(0, 1, k));
      FY_PM(tr2, tr1, CC(ido - 1, 0, k), CC(ido - 1, 2, k));
      FY_CH(ido - 1, k, 0) = FY_DADD(tr2, tr2);
      FY_CH(ido - 1, k, 1) = FY_DMUL(sqrt2, FY_DSUB(tr1, ti1));
      FY_CH(ido - 1, k, 2) = FY_DADD(ti2, ti2);
      FY_CH(ido - 1, k, 3) = FY_DMUL(-sqrt2, FY_DADD(tr1, ti1));
    }
  if (ido <= 2)
    return;
  for (size_t k = 0; k < l1; k++)
    for (size_t i = 2; i < ido; i += 2) {
      double ci2, ci3, ci4, cr2, cr3, cr4, ti1, ti2, ti3, ti4, tr1, tr2, tr3, tr4;
      size_t ic = ido - i;
      FY_PM(tr2, tr1, CC(i - 1, 0, k), CC(ic - 1, 3, k));
      FY_PM(ti1, ti2, CC(i, 0, k), CC(ic, 3, k));
      FY_PM(tr4, ti3, CC(i, 2, k), CC(ic, 1, k));
      FY_PM(tr3, ti4, CC(i - 1, 2, k), CC(ic - 1, 1, k));
      FY_PM(FY_CH(i - 1, k, 0), cr3, tr2, tr3);
      FY_PM(FY_CH(i, k, 0), ci3, ti2, ti3);
      FY_PM(cr4, cr2, tr1, tr4);
      FY_PM(ci2, ci4, ti1, ti4);
      FY_MULPM(FY_CH(i, k, 1), FY_CH(i - 1, k, 1), FY_WA(0, i - 2), FY_WA(0, i - 1), ci2, cr2);
      FY_MULPM(FY_CH(i, k, 2), FY_CH(i - 1, k, 2), FY_WA(1, i - 2), FY_WA(1, i - 1), ci3, cr3);
      FY_MULPM(FY_CH(i, k, 3), FY_CH(i - 1, k, 3), FY_WA(2, i - 2), FY_WA(2, i - 1), ci4, cr4);
    }
#undef CC
}

#undef FY_CH
#undef FY_WA

/* pocketfft rfftp::exec(c, 1, r2hc = false). */
static inline FY_HD void fy_rfft_backward(const fy_dct_plan *p, double *c) {
  FY_NO_CONTRACT
  double buf[FY_DCT_MAX];
  double *p1 = c, *p2 = buf;
  size_t n = (size_t)p->n, l1 = 1;
  for (int k = 0; k < p->nfct; k++) {
    size_t ip = (size_t)p->fct[k], ido = n / (ip * l1);
    const double *wa = p->twmem + p->tw[k];
    if (ip == 4)
      fy_radb4(ido, l1, p1, p2, wa);
    else
      fy_radb2(ido, l1, p1, p2, wa);
    double *t = p1;
    p1 = p2;
    p2 = t;
    l1 *= ip;
  }
  if (p1 != c)
    for (size_t i = 0; i < n; i++)
      c[i] = p1[i];
}

/* In place: c[k] = 2 sum_j c[j] cos(pi k (2j + 1) / 2n), the rounding of
 * scipy.fftpack.dct(c) (type 2, norm None). */
static inline FY_HD void fy_dct2_core(const fy_dct_plan *p, double *c) {
  FY_NO_CONTRACT
  const size_t N = (size_t)p->n, NS2 = (N + 1) / 2;
  c[0] = FY_DMUL(c[0], 2.0);
  if ((N & 1) == 0)
    c[N - 1] = FY_DMUL(c[N - 1], 2.0);
  for (size_t k = 1; k < N - 1; k += 2) { /* MPINPLACE(c[k + 1], c[k]) */
    double t = c[k + 1];
    c[k + 1] = FY_DSUB(c[k + 1], c[k]);
    c[k] = FY_DADD(t, c[k]);
  }
  fy_rfft_backward(p, c);
  const double *tw = p->twiddle;
  for (size_t k = 1, kc = N - 1; k < NS2; k++, kc--) {
    double t1 = FY_DADD(FY_DMUL(tw[k - 1], c[kc]), FY_DMUL(tw[kc - 1], c[k]));
    double t2 = FY_DSUB(FY_DMUL(tw[k - 1], c[k]), FY_DMUL(tw[kc - 1], c[kc]));
    c[k] = FY_DMUL(0.5, FY_DADD(t1, t2));
    c[kc] = FY_DMUL(0.5, FY_DSUB(t1, t2));
  }
  if ((N & 1) == 0)
    c[NS2] = FY_DMUL(c[NS2], tw[NS2 - 1]);
}

#endif
