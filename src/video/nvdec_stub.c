/* nvdec_stub.c — the NVDEC decoder in a build without it (no CUDA,
 * libavformat or ffnvcodec headers): says why, decodes nothing. */
#include "video/nvdec_int.h"

#include <stdio.h>

#ifndef FY_NVDEC

int fy_nvdec_open(const char *path, int device, double start_s, fy_nvdec **out,
                  ferry_video_info *info) {
  *out = NULL;
  return fy_error(FERRY_EUNSUPPORTED,
                  "%s: GPU video decoding needs ferry built with CUDA, libavformat and the "
                  "ffnvcodec headers (this build lacks %s)",
                  path,
#ifndef FERRY_HAVE_CUDA
                  "CUDA"
#elif !defined(FERRY_HAVE_AV)
                  "libavformat"
#else
                  "ffnvcodec"
#endif
  );
}
void fy_nvdec_close(fy_nvdec *d) { (void)d; }
void fy_nvdec_pool_counts(uint64_t *made, uint64_t *reused) { *made = *reused = 0; }
int fy_nvdec_available(char *why, size_t n) {
  snprintf(why, n, "this ferry was built without NVDEC support");
  return 0;
}
int fy_nvdec_next(fy_nvdec *d, double *t, int64_t *index) {
  return fy_error(FERRY_EUNSUPPORTED, "no NVDEC in this build");
}
int fy_nvdec_map(fy_nvdec *d, void *stream, fy_gpu_yuv *f) {
  return fy_error(FERRY_EUNSUPPORTED, "no NVDEC in this build");
}
void fy_nvdec_unmap(fy_nvdec *d) { (void)d; }
void fy_nvdec_want(fy_nvdec *d, double t) { (void)d, (void)t; }
void fy_nvdec_sampler(fy_nvdec *d, const fy_vsampler *s) { (void)d, (void)s; }
double fy_nvdec_wait_s(const fy_nvdec *d) { return (void)d, 0; }
int fy_nvdec_frame_at(fy_nvdec *d, int64_t k, double *t) {
  return fy_error(FERRY_EUNSUPPORTED, "no NVDEC in this build");
}
uint64_t fy_nvdec_skipped(const fy_nvdec *d) { return (void)d, 0; }
int fy_nvdec_set_strict(fy_nvdec *d, int strict) {
  return fy_error(FERRY_EUNSUPPORTED, "no NVDEC in this build");
}
void fy_nvdec_set_keep(fy_nvdec *d, int keep) { (void)d, (void)keep; }
void fy_nvdec_damage(const fy_nvdec *d, uint64_t *frames, int64_t *first, double *first_t) {
  *frames = 0, *first = -1, *first_t = 0;
}
#endif
