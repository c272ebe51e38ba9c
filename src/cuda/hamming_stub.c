/* hamming_stub.c — the GPU Hamming search when ferry is built without
 * CUDA: every call refuses with that reason (see hamming.h). */
#ifndef FERRY_HAVE_CUDA
#include "cuda/hamming.h"

#include <string.h>

int fy_gpu_hamming_available(int device) {
  (void)device;
  return fy_error(FERRY_EUNSUPPORTED,
                  "this ferry was built without CUDA (nvcc or nvJPEG headers were not found "
                  "when it was configured)");
}

int fy_gpu_hamming_pairs(int device, const uint64_t *codes, size_t n, int words, int t,
                         size_t max_pairs, size_t buffer_pairs, ferry_pair **pairs, size_t *count,
                         fy_gpu_hamming_stats *stats) {
  (void)codes, (void)n, (void)words, (void)t, (void)max_pairs, (void)buffer_pairs;
  if (stats)
    memset(stats, 0, sizeof *stats);
  if (pairs)
    *pairs = NULL;
  if (count)
    *count = 0;
  return fy_gpu_hamming_available(device);
}

int fy_gpu_hamming_pairs_each(int device, const uint64_t *codes, size_t n, int words, int t,
                              size_t buffer_pairs,
                              void (*sink)(const ferry_pair *pairs, size_t n, void *user),
                              void *user, fy_gpu_hamming_stats *stats) {
  (void)codes, (void)n, (void)words, (void)t, (void)buffer_pairs, (void)sink, (void)user;
  if (stats)
    memset(stats, 0, sizeof *stats);
  return fy_gpu_hamming_available(device);
}

int fy_gpu_hamming_topk(int device, const uint64_t *codes, size_t n, int words, int k,
                        ferry_neighbor *out) {
  (void)codes, (void)n, (void)words, (void)k, (void)out;
  return fy_gpu_hamming_available(device);
}

int fy_gpu_pairs_open(int device, const uint64_t *codes, size_t n, int words, int t,
                      size_t buffer_pairs, fy_gpu_pairs **out) {
  (void)codes, (void)n, (void)words, (void)t, (void)buffer_pairs;
  if (out)
    *out = NULL;
  return fy_gpu_hamming_available(device);
}

int fy_gpu_pairs_rows(fy_gpu_pairs *s, size_t i0, size_t i1, fy_gpu_pairs_sink sink, void *user) {
  (void)s, (void)i0, (void)i1, (void)sink, (void)user;
  return fy_gpu_hamming_available(0);
}

void fy_gpu_pairs_close(fy_gpu_pairs *s, fy_gpu_hamming_stats *stats) { (void)s, (void)stats; }

int fy_gpu_topk_open(int device, const uint64_t *codes, size_t n, int words, int k,
                     fy_gpu_topk **out) {
  (void)codes, (void)n, (void)words, (void)k;
  if (out)
    *out = NULL;
  return fy_gpu_hamming_available(device);
}

int fy_gpu_topk_rows(fy_gpu_topk *s, size_t q0, size_t q1, ferry_neighbor *out) {
  (void)s, (void)q0, (void)q1, (void)out;
  return fy_gpu_hamming_available(0);
}

void fy_gpu_topk_close(fy_gpu_topk *s) { (void)s; }
#else
typedef int fy_hamming_stub_unused; /* ISO C: no empty translation unit */
#endif
