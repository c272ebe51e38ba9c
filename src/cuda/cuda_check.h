/* cuda_check.h — CUDA runtime errors turned into ferry status codes with a
 * message, for the .cu files. Define FY_CUDA_CONTEXT (the subsystem named
 * in messages, e.g. "CUDA") before including this. */
#ifndef FY_CUDA_CHECK_H
#define FY_CUDA_CHECK_H

#include <cuda_runtime.h>

extern "C" {
#include "core/internal.h"
}
#include "cuda/device_codes.h"

static inline int fy_cuda_fail(cudaError_t e, const char *what) {
  return fy_device_fail(e, FY_CUDA_CONTEXT, what);
}

/* FERRY_OK when CUDA device `device` exists and the runtime works, else
 * FERRY_EUNSUPPORTED with the reason (device_check.cu: the one copy). */
extern "C" int fy_cuda_device_check(int device);

/* Returns the error from the enclosing function. */
#define CU(call, what)                                                                             \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess)                                                                         \
      return fy_cuda_fail(e_, what);                                                               \
  } while (0)

/* Sets `rc` and jumps to the enclosing function's `done:` clean-up. */
#define CK(call, what)                                                                             \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      rc = fy_cuda_fail(e_, what);                                                                 \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

#endif
