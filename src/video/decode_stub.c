/* decode_stub.c — the video decoder when ferry was built without
 * libavformat/libavcodec: every call says so. */
#include "video/video.h"

#ifndef FERRY_HAVE_AV

int fy_vdec_open(const char *path, int threads, int strict, fy_vdec **out, ferry_video_info *info) {
  *out = NULL;
  return fy_error(FERRY_EUNSUPPORTED,
                  "%s: built without libavcodec (video needs "
                  "libavformat, libavcodec, libswscale)",
                  path ? path : "video");
}

void fy_vdec_close(fy_vdec *d) {}

int fy_av_has_demuxer(const char *name) {
  (void)name;
  return 0;
}

void fy_vdec_damage(const fy_vdec *d, uint64_t *frames, int64_t *first, double *first_t) {
  *frames = 0, *first = -1, *first_t = 0;
}

int fy_vdec_seek(fy_vdec *d, double t) {
  return fy_error(FERRY_EUNSUPPORTED, "built without libavcodec");
}

void fy_vdec_want(fy_vdec *d, double t) {}

void fy_vdec_sampler(fy_vdec *d, const fy_vsampler *s) {}

int fy_vdec_frame_at(fy_vdec *d, int64_t k, double *t) {
  return fy_error(FERRY_EUNSUPPORTED, "built without libavcodec");
}

int fy_vdec_next(fy_vdec *d, double *t, int64_t *index) {
  return fy_error(FERRY_EUNSUPPORTED, "built without libavcodec");
}

int fy_vdec_rgb(fy_vdec *d, const uint8_t **px, int *w, int *h, size_t *stride) {
  return fy_error(FERRY_EUNSUPPORTED, "built without libavcodec");
}

#else
typedef int fy_video_stub_unused; /* ISO C: no empty translation unit */
#endif
