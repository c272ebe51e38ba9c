/* gpu_stub.c — the CUDA backend's entry points when ferry is built without
 * CUDA: the probe says so and everything else refuses with that reason. */
#ifndef FERRY_HAVE_CUDA
#include "cuda/gpu.h"

#include <stdio.h>
#include <string.h>

static int no_cuda(void) {
  return fy_error(FERRY_EUNSUPPORTED,
                  "this ferry was built without CUDA (nvcc or nvJPEG headers were not found "
                  "when it was configured)");
}

void fy_gpu_probe_run(fy_gpu_probe *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->error, sizeof p->error, "built without CUDA");
}

int fy_gpu_open(const fy_gpu_params *p, fy_gpu **out) {
  (void)p;
  *out = NULL;
  return no_cuda();
}

void fy_gpu_close(fy_gpu *g) { (void)g; }
uint8_t *fy_gpu_staging(fy_gpu *g, int s) { return (void)g, (void)s, NULL; }
void *fy_gpu_output(fy_gpu *g, int s) { return (void)g, (void)s, NULL; }
fy_gpu_sample *fy_gpu_samples(fy_gpu *g, int s) { return (void)g, (void)s, NULL; }
int32_t *fy_gpu_tables(fy_gpu *g, int s) { return (void)g, (void)s, NULL; }
int fy_gpu_hw_decode(const fy_gpu *g) { return (void)g, 0; }
uint8_t *fy_gpu_arena(fy_gpu *g, int s) { return (void)g, (void)s, NULL; }
uint64_t fy_gpu_staged_src(fy_gpu *g, int s, int k) { return (void)g, (void)s, (void)k, 0; }
size_t fy_gpu_arena_bytes(const fy_gpu *g) { return (void)g, 0; }

int fy_gpu_jpeg_check(fy_gpu *g, int e, const uint8_t *d, size_t n, int *w, int *h) {
  (void)g, (void)e, (void)d, (void)n, (void)w, (void)h;
  return 0;
}

int fy_gpu_jpeg_decode(fy_gpu *g, int e, const uint8_t *const *data, const size_t *len,
                       const int *w, uint8_t *const *dst, int n) {
  (void)g, (void)e, (void)data, (void)len, (void)w, (void)dst, (void)n;
  return no_cuda();
}

int fy_gpu_jpeg_decode_ex(fy_gpu *g, int e, const uint8_t *const *data, const size_t *len,
                          const int *pitch, uint8_t *const *dst, int n, int luma) {
  (void)g, (void)e, (void)data, (void)len, (void)pitch, (void)dst, (void)n, (void)luma;
  return no_cuda();
}

int fy_gpu_finish(fy_gpu *g, int slot, int count, int table_used, int staged) {
  (void)g, (void)slot, (void)count, (void)table_used, (void)staged;
  return no_cuda();
}

int fy_gpu_wait(fy_gpu *g, int slot) { return (void)g, (void)slot, no_cuda(); }
int fy_gpu_wait_for(fy_gpu *g, int slot, int ms) {
  return (void)g, (void)slot, (void)ms, no_cuda();
}
const char *fy_gpu_engine_phase(fy_gpu *g, int e) { return (void)g, (void)e, "built without CUDA"; }
int fy_gpu_release(fy_gpu *g, int slot, void *st) {
  return (void)g, (void)slot, (void)st, no_cuda();
}
int fy_gpu_busy(int device, double ms, void *st) {
  return (void)device, (void)ms, (void)st, no_cuda();
}
int fy_gpu_stream_sync(void *st) { return (void)st, no_cuda(); }
int fy_gpu_download(int device, const void *src, void *dst, size_t n) {
  return (void)device, (void)src, (void)dst, (void)n, no_cuda();
}
int fy_gpu_upload(int device, const void *src, void *dst, size_t n) {
  return (void)device, (void)src, (void)dst, (void)n, no_cuda();
}
int fy_gpu_sync(int device) { return (void)device, no_cuda(); }
int fy_gpu_count(void) { return 0; }
int fy_gpu_pci_id(int device, char *buf, int cap) {
  if (cap > 0)
    buf[0] = '\0';
  return (void)device, no_cuda();
}
int fy_gpu_host_register(int device, void *p, size_t n) {
  return (void)device, (void)p, (void)n, no_cuda();
}
void fy_gpu_host_unregister(void *p) { (void)p; }
void *fy_gpu_stream(fy_gpu *g) { return (void)g, NULL; }
int fy_gpu_yuv_to_rgb(const fy_gpu_yuv *f, uint8_t *dst, int dst_pitch, void *st) {
  return (void)f, (void)dst, (void)dst_pitch, (void)st, no_cuda();
}
#endif
