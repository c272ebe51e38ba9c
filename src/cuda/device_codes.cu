/* device_codes.cu — a search's codes on one CUDA device (device_codes.h). */
#include "cuda/device_codes.h"

extern "C" {
#include "core/internal.h"
}

int fy_device_fail(cudaError_t e, const char *context, const char *what) {
  return fy_error(e == cudaErrorMemoryAllocation ? FERRY_ENOMEM : FERRY_EIO, "%s: %s: %s", context,
                  what, cudaGetErrorString(e));
}

int fy_device_enter(int device, int *prev, const char *context) {
  *prev = -1;
  if (cudaGetDevice(prev) != cudaSuccess)
    *prev = -1;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess)
    return FERRY_OK;
  return context ? fy_device_fail(e, context, "selecting the device") : FERRY_EIO;
}

void fy_device_leave(int prev) {
  if (prev >= 0)
    cudaSetDevice(prev);
}

int fy_device_codes_upload(fy_device_codes *c, int device, const uint64_t *codes, size_t n,
                           int words, const char *context) {
  const size_t bytes = (n ? n : 1) * (size_t)words * sizeof(uint64_t);
  cudaError_t e;
  c->device = device;
  if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess) {
    c->stream = NULL;
    return fy_device_fail(e, context, "creating a stream");
  }
  if ((e = cudaMalloc((void **)&c->codes, bytes)) != cudaSuccess) {
    c->codes = NULL;
    return fy_device_fail(e, context, "allocating the codes");
  }
  if (n && (e = cudaMemcpyAsync(c->codes, codes, n * (size_t)words * sizeof(uint64_t),
                                cudaMemcpyHostToDevice, c->stream)) != cudaSuccess)
    return fy_device_fail(e, context, "uploading the codes");
  if ((e = cudaStreamSynchronize(c->stream)) != cudaSuccess)
    return fy_device_fail(e, context, "uploading the codes");
  return FERRY_OK;
}

void fy_device_codes_free(fy_device_codes *c) {
  if (c->stream)
    cudaStreamSynchronize(c->stream); /* nothing in flight before the frees */
  cudaFree(c->codes);
  c->codes = NULL;
  if (c->stream)
    cudaStreamDestroy(c->stream);
  c->stream = NULL;
}
