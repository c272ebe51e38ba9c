/* hash_gpu_stub.c — the GPU hashes when ferry is built without CUDA: every
 * call refuses with that reason (see hash_gpu.h). */
#ifndef FERRY_HAVE_CUDA
#include "cuda/hash_gpu.h"

static int no_cuda(void) {
  return fy_error(FERRY_EUNSUPPORTED,
                  "this ferry was built without CUDA (nvcc or nvJPEG headers were not found "
                  "when it was configured)");
}

int fy_gpu_hash_available(int device) {
  (void)device;
  return no_cuda();
}

int fy_gpu_listed(int device) {
  (void)device;
  return no_cuda();
}

int fy_gpu_hasher_new(int device, fy_gpu_hasher **out) {
  (void)device;
  if (out)
    *out = NULL;
  return no_cuda();
}

void fy_gpu_hasher_free(fy_gpu_hasher *g) { (void)g; }

int fy_gpu_colorer_new(int device, fy_gpu_colorer **out) {
  (void)device;
  if (out)
    *out = NULL;
  return no_cuda();
}

void fy_gpu_colorer_free(fy_gpu_colorer *c) { (void)c; }

int fy_gpu_color_counts(fy_gpu_colorer *c, const fy_gpu_hash_image *images, int n,
                        struct fy_color_counts *out) {
  (void)c, (void)images, (void)n, (void)out;
  return no_cuda();
}

int fy_gpu_hasher_run(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n, unsigned kinds,
                      int hash_size, ferry_hash_result *out) {
  (void)g, (void)images, (void)n, (void)kinds, (void)hash_size, (void)out;
  return no_cuda();
}

int fy_gpu_hasher_run_host(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n, unsigned kinds,
                           int hash_size, ferry_hash_result *out) {
  (void)g, (void)images, (void)n, (void)kinds, (void)hash_size, (void)out;
  return no_cuda();
}

int fy_gpu_hasher_grids(fy_gpu_hasher *g, const fy_gpu_hash_image *images, int n, int grid,
                        float *out) {
  (void)g, (void)images, (void)n, (void)grid, (void)out;
  return no_cuda();
}

int fy_gpu_hash_batch(int device, const fy_gpu_hash_image *images, int n, unsigned kinds,
                      int hash_size, ferry_hash_result *out) {
  (void)device, (void)images, (void)n, (void)kinds, (void)hash_size, (void)out;
  return no_cuda();
}

int fy_gpu_hash_device_alloc(int device, size_t bytes, void **p) {
  (void)device, (void)bytes;
  if (p)
    *p = NULL;
  return no_cuda();
}

int fy_gpu_hash_device_upload(int device, void *dst, const void *src, size_t bytes) {
  (void)device, (void)dst, (void)src, (void)bytes;
  return no_cuda();
}

void fy_gpu_hash_device_free(int device, void *p) { (void)device, (void)p; }

int fy_gpu_hasher_run_pinned(fy_gpu_hasher *g, const void *base, size_t bytes,
                             const fy_gpu_hash_image *images, int n, unsigned kinds, int hash_size,
                             ferry_hash_result *out) {
  (void)g, (void)base, (void)bytes, (void)images, (void)n, (void)kinds, (void)hash_size, (void)out;
  return no_cuda();
}

int fy_gpu_hash_pinned_grow(int device, void **p, size_t *cap, size_t n) {
  (void)device, (void)p, (void)cap, (void)n;
  return no_cuda();
}

void fy_gpu_hash_pinned_free(void *p) { (void)p; }
#else
typedef int fy_hash_gpu_stub_unused; /* ISO C: no empty translation unit */
#endif
