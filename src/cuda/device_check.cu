/* device_check.cu — the one check that a CUDA device can be used, for the
 * GPU hashes (fy_gpu_hash_available) and the GPU Hamming search
 * (fy_gpu_hamming_available): declared in cuda_check.h. */
#include <cuda_runtime.h>

#define FY_CUDA_CONTEXT "CUDA"
#include "cuda/cuda_check.h"

extern "C" int fy_cuda_device_check(int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return fy_error(FERRY_EUNSUPPORTED, "no usable CUDA device: %s", cudaGetErrorString(e));
  if (device < 0 || device >= count)
    return fy_error(FERRY_EUNSUPPORTED, "no CUDA device %d (%d found)", device, count);
  return FERRY_OK;
}
