/* nvdec_probe.c — what the GPU's video decoder (NVDEC) can do, asked of the
 * driver through the ffnvcodec headers: libcuda and libnvcuvid are loaded at
 * run time, so this builds (and answers "not found") on machines without a
 * GPU. Evidence for `ferry video --nvdec-caps`; decoding on NVDEC is not
 * implemented yet. */
#include "video/video.h"

#include <stdio.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<ffnvcodec/dynlink_loader.h>)
#define FY_HAVE_FFNVCODEC 1
#endif
#endif

#ifdef FY_HAVE_FFNVCODEC
/* the loader's own messages go nowhere: the caller gets `why` */
#define FFNV_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#include <ffnvcodec/dynlink_loader.h>

static const struct {
  const char *name;
  cudaVideoCodec codec;
  int depth;
} wanted[] = {{"h264", cudaVideoCodec_H264, 8},  {"hevc", cudaVideoCodec_HEVC, 8},
              {"hevc", cudaVideoCodec_HEVC, 10}, {"vp9", cudaVideoCodec_VP9, 8},
              {"vp9", cudaVideoCodec_VP9, 10},   {"av1", cudaVideoCodec_AV1, 8},
              {"av1", cudaVideoCodec_AV1, 10}};

int fy_nvdec_probe(int device, fy_nvdec_cap *caps, int cap, int *n, char *why, size_t whylen) {
  CudaFunctions *cu = NULL;
  CuvidFunctions *cv = NULL;
  CUcontext ctx = NULL;
  int st = FERRY_EUNSUPPORTED;
  *n = 0;
  why[0] = 0;
  if (cuda_load_functions(&cu, NULL) < 0) {
    snprintf(why, whylen, "libcuda.so.1 not found (no NVIDIA driver)");
    goto out;
  }
  if (cuvid_load_functions(&cv, NULL) < 0) {
    snprintf(why, whylen,
             "libnvcuvid.so.1 not found or incomplete (the driver's video "
             "decode library is not exposed in this container)");
    goto out;
  }
  CUdevice dev;
  int r;
  if ((r = cu->cuInit(0)) != CUDA_SUCCESS || (r = cu->cuDeviceGet(&dev, device)) != CUDA_SUCCESS ||
      (r = cu->cuCtxCreate(&ctx, 0, dev)) != CUDA_SUCCESS) {
    snprintf(why, whylen, "CUDA device %d: driver error %d", device, r);
    goto out;
  }
  for (size_t i = 0; i < sizeof wanted / sizeof wanted[0] && *n < cap; i++) {
    CUVIDDECODECAPS c;
    memset(&c, 0, sizeof c);
    c.eCodecType = wanted[i].codec;
    c.eChromaFormat = cudaVideoChromaFormat_420;
    c.nBitDepthMinus8 = (unsigned)wanted[i].depth - 8;
    fy_nvdec_cap *o = &caps[(*n)++];
    memset(o, 0, sizeof *o);
    o->codec = wanted[i].name;
    o->bit_depth = wanted[i].depth;
    if ((r = cv->cuvidGetDecoderCaps(&c)) != CUDA_SUCCESS) {
      o->error = r;
      continue;
    }
    o->supported = c.bIsSupported;
    o->engines = c.nNumNVDECs;
    o->max_width = (int)c.nMaxWidth;
    o->max_height = (int)c.nMaxHeight;
  }
  st = FERRY_OK;
out:
  if (ctx)
    cu->cuCtxDestroy(ctx);
  cuvid_free_functions(&cv);
  cuda_free_functions(&cu);
  return st;
}

#else

int fy_nvdec_probe(int device, fy_nvdec_cap *caps, int cap, int *n, char *why, size_t whylen) {
  *n = 0;
  snprintf(why, whylen, "built without the ffnvcodec headers (Debian: libffmpeg-nvenc-dev)");
  return FERRY_EUNSUPPORTED;
}

#endif
