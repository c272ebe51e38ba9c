/* gpu_device.cu — plain device calls beside the loader's backend (gpu.cu):
 * a stream of one's own, copies to and from the device, waits, and the
 * busy kernel that stands in for a training step (`--consume-ms`). */
#include <cuda_runtime.h>
#include <stdio.h>

extern "C" {
#include "cuda/gpu.h"
}
#define FY_CUDA_CONTEXT "CUDA"
#include "cuda/cuda_check.h"

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void k_busy(unsigned long long ns) {
  unsigned long long t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
}

extern "C" int fy_gpu_busy(int device, double ms, void *stream) {
  CU(cudaSetDevice(device), "selecting the device");
  k_busy<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long)(ms * 1e6));
  CU(cudaGetLastError(), "launching the busy kernel");
  return FERRY_OK;
}

extern "C" int fy_gpu_download(int device, const void *src, void *dst, size_t n) {
  CU(cudaSetDevice(device), "selecting the device");
  CU(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "copying a batch to the host");
  return FERRY_OK;
}

extern "C" int fy_gpu_upload(int device, const void *src, void *dst, size_t n) {
  CU(cudaSetDevice(device), "selecting the device");
  CU(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "copying to the device");
  return FERRY_OK;
}

extern "C" int fy_gpu_stream_sync(void *stream) {
  CU(cudaStreamSynchronize((cudaStream_t)stream), "waiting for a stream");
  return FERRY_OK;
}

extern "C" int fy_gpu_sync(int device) {
  CU(cudaSetDevice(device), "selecting the device");
  CU(cudaDeviceSynchronize(), "waiting for the device");
  return FERRY_OK;
}

extern "C" int fy_gpu_host_register(int device, void *p, size_t n) {
  CU(cudaSetDevice(device), "selecting the device");
  CU(cudaHostRegister(p, n, cudaHostRegisterPortable), "page-locking a batch buffer");
  return FERRY_OK;
}

extern "C" void fy_gpu_host_unregister(void *p) { cudaHostUnregister(p); }

extern "C" int fy_gpu_count(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

extern "C" int fy_gpu_pci_id(int device, char *buf, int cap) {
  CU(cudaDeviceGetPCIBusId(buf, cap, device), "reading the device's PCI address");
  return FERRY_OK;
}
