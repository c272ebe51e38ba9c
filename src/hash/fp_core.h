/* fp_core.h — what the arithmetic shared by the CPU (C) and the GPU (CUDA)
 * needs: FY_HD marks a function for both (__host__ __device__ under nvcc,
 * nothing in C), and FY_DMUL/FY_DADD/FY_DSUB/FY_DDIV are one rounded double
 * operation each, never fused with another: on the device the _rn
 * intrinsics (which nvcc never contracts into a multiply-add), in C the
 * plain operators (the C files are compiled without contraction: GCC in ISO
 * mode, clang told with FP_CONTRACT OFF). Code written with them runs the
 * same operations in the same order on both, so the doubles are the same.
 * Plain C, no other includes: hash/dct_core.h and hash/haar_core.h build on
 * it. */
#ifndef FY_HASH_FP_CORE_H
#define FY_HASH_FP_CORE_H

#ifdef __CUDACC__
#define FY_HD __host__ __device__
#else
#define FY_HD
#endif

#ifdef __CUDA_ARCH__
#define FY_DMUL(a, b) __dmul_rn((a), (b))
#define FY_DADD(a, b) __dadd_rn((a), (b))
#define FY_DSUB(a, b) __dsub_rn((a), (b))
#define FY_DDIV(a, b) __ddiv_rn((a), (b))
#else
#define FY_DMUL(a, b) ((a) * (b))
#define FY_DADD(a, b) ((a) + (b))
#define FY_DSUB(a, b) ((a) - (b))
#define FY_DDIV(a, b) ((a) / (b))
#endif

#endif
