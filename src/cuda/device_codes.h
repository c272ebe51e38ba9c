/* device_codes.h — a search's codes held on one CUDA device, with the
 * stream all of that search's work runs on: the one upload and the one
 * release of the pair search (hamming.cu) and the top-k (hamming_topk.cu),
 * and the one way they make a device current and give the caller's back. */
#ifndef FY_DEVICE_CODES_H
#define FY_DEVICE_CODES_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fy_device_codes {
  int device;
  cudaStream_t stream; /* non-blocking; NULL until created */
  uint64_t *codes;     /* device: n * words */
} fy_device_codes;

/* Makes `device` current, keeping the caller's in *prev (-1: none), for
 * fy_device_leave. An error is named with `context` ("CUDA Hamming ..."),
 * or with NULL returns FERRY_EIO leaving the thread's last error alone
 * (on a close, where it may be the search's own). */
int fy_device_enter(int device, int *prev, const char *context);
void fy_device_leave(int prev);

/* With `device` current (fy_device_enter): creates the stream and uploads
 * n * words codes, waiting for the copy. On failure *c holds what was made,
 * for fy_device_codes_free. */
int fy_device_codes_upload(fy_device_codes *c, int device, const uint64_t *codes, size_t n,
                           int words, const char *context);

/* With c->device current: waits for the stream (nothing of the search is
 * in flight after it: callers free their own buffers after this), then
 * frees the codes and the stream. */
void fy_device_codes_free(fy_device_codes *c);

/* A CUDA error as a ferry status with a message: "<context>: <what>: <why>". */
int fy_device_fail(cudaError_t e, const char *context, const char *what);

#endif
