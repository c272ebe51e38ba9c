/* fp_core.h — what the arithmetic shared by the CPU (C) and the GPUs (CUDA,
 * OpenCL C) needs: FY_HD marks a function for both (__host__ __device__ under nvcc,
 * nothing in C), and FY_DMUL/FY_DADD/FY_DSUB/FY_DDIV are one rounded double
 * operation each, never fused with another: on the device the _rn
 * intrinsics (which nvcc never contracts into a multiply-add), in C the
 * plain operators (compiled without contraction: GCC in ISO mode, clang
 * told by FY_NO_CONTRACT). Code written with them runs the same operations
 * in the same order on both, so the doubles are the same. Plain C, no other
 * includes: hash/dct_core.h and hash/haar_core.h build on it. */
#ifndef FY_HASH_FP_CORE_H
#define FY_HASH_FP_CORE_H

#ifdef __CUDACC__
#define FY_HD __host__ __device__
#else
#define FY_HD
#endif

/* OpenCL C (src/opencl: the program is this header, dct_core.h,
 * haar_core.h, then the kernels, as one source): doubles from cl_khr_fp64,
 * and no contraction anywhere in the program (OpenCL's +, -, *, / on
 * doubles are correctly rounded, as in C). */
#ifdef __OPENCL_C_VERSION__
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
#endif

/* First in the body of every function built on these: clang contracts
 * a * b + c into a fused multiply-add by default where the target has one
 * (aarch64, x86 with FMA), unless told not to; the pragma holds to the end
 * of the function's block. GCC in ISO C mode does not contract, and the
 * device code uses the intrinsics. */
#if defined(__clang__) && !defined(__CUDACC__) && !defined(__OPENCL_C_VERSION__)
#define FY_NO_CONTRACT _Pragma("STDC FP_CONTRACT OFF")
#else
#define FY_NO_CONTRACT
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
