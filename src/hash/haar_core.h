/* haar_core.h — the Haar butterflies of PyWavelets' arithmetic and numpy's
 * median of two middle values, as static inline functions shared by the CPU
 * (wavelet.c, bits.c) and the GPU (cuda/hash_gpu.cu): one copy of each
 * product and sum, in pywt's order (see wavelet.c for the transforms). */
#ifndef FY_HASH_HAAR_CORE_H
#define FY_HASH_HAAR_CORE_H

#ifndef __OPENCL_C_VERSION__ /* OpenCL: the program's sources come in order (src/opencl) */
#include "hash/fp_core.h"
#endif

#define FY_HAAR_C 0.7071067811865476

/* Analysis (dec_lo = [c, c]): c * x1 + c * x0, x1 the odd sample. */
static inline FY_HD double fy_haar_lo(double x1, double x0) {
  FY_NO_CONTRACT
  return FY_DADD(FY_DMUL(FY_HAAR_C, x1), FY_DMUL(FY_HAAR_C, x0));
}
/* Analysis (dec_hi = [-c, c]): -c * x1 + c * x0. */
static inline FY_HD double fy_haar_hi(double x1, double x0) {
  FY_NO_CONTRACT
  return FY_DADD(FY_DMUL(-FY_HAAR_C, x1), FY_DMUL(FY_HAAR_C, x0));
}
/* Synthesis, even sample (rec_lo = [c, c]): c * a + c * d. */
static inline FY_HD double fy_haar_even(double a, double d) {
  FY_NO_CONTRACT
  return FY_DADD(FY_DMUL(FY_HAAR_C, a), FY_DMUL(FY_HAAR_C, d));
}
/* Synthesis, odd sample (rec_hi = [c, -c]): c * a + -c * d. */
static inline FY_HD double fy_haar_odd(double a, double d) {
  FY_NO_CONTRACT
  return FY_DADD(FY_DMUL(FY_HAAR_C, a), FY_DMUL(-FY_HAAR_C, d));
}

/* numpy.median of an even count: the mean of the middle two, (a + b) / 2. */
static inline FY_HD double fy_median_mid(double a, double b) { return FY_DDIV(FY_DADD(a, b), 2.0); }

#endif
