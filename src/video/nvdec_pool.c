/* nvdec_pool.c — what the NVDEC readers of a process share: each device's
 * context (retained once, never released: the CUDA runtime keeps it too),
 * the decoder capabilities (asked once per device, codec, chroma format
 * and depth) and idle decoders, kept for the next file of the same format.
 * Making a decoder and destroying it cost 40 and 75 ms with one file at a
 * time and 200 and 270 ms with 16 at once (H200, bench/CLAIMS.md C39): per
 * 300-frame 1080p file, more than decoding it.
 *
 * A decoder is kept with the context lock it was made with. It is given
 * back only when its reader ends without a CUDA error and nothing of it is
 * mapped; a decode still running on the engine is fine (the next reader's
 * first decode into that surface queues behind it). At most the closing
 * reader's nvdec_keep idle decoders (ferry_video_options; default 8, 0:
 * none kept) and about 1 GiB of their surfaces are kept; beyond that the
 * oldest is destroyed. */
#include "core/internal.h"
#include "video/nvdec_int.h"

#ifdef FY_NVDEC

#define MAX_DEVICES 64
#define MAX_CAPS 32
#define MAX_IDLE FY_NVDEC_KEEP_MAX
#define IDLE_BYTES (1ull << 30)

typedef struct idle {
  int device;
  CUVIDDECODECREATEINFO ci; /* vidLock left NULL */
  CUvideodecoder dec;
  CUvideoctxlock lock;
  uint64_t bytes;
  uint64_t age;
} idle;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static CUcontext ctxs[MAX_DEVICES];
static struct {
  int device;
  CUVIDDECODECAPS caps;
} caps_seen[MAX_CAPS];
static int ncaps;
static idle idles[MAX_IDLE + 1];
static int nidle;
static uint64_t idle_bytes, ticks, made, reused;

int fy_nvdec_pool_ctx(fy_nvdec *d) {
  int device = d->device;
  if (device < 0 || device >= MAX_DEVICES)
    return fy_error(FERRY_EINVAL, "%s: cuda:%d is past the %d devices ferry handles", d->path,
                    device, MAX_DEVICES);
  pthread_mutex_lock(&mu);
  CUresult r = CUDA_SUCCESS;
  if (!ctxs[device]) {
    /* Threads waiting for the engine (in cuvidMapVideoFrame, stream waits)
     * sleep instead of spinning: with a reader per file, spinning waiters
     * would take the cores that demux and parse. Only possible before the
     * context is first made (not when, say, PyTorch made it already). */
    unsigned flags = 0;
    int active = 0;
    if (fy_cu->cuDevicePrimaryCtxGetState(d->dev, &flags, &active) == CUDA_SUCCESS && !active)
      fy_cu->cuDevicePrimaryCtxSetFlags(d->dev, CU_CTX_SCHED_BLOCKING_SYNC);
    r = fy_cu->cuDevicePrimaryCtxRetain(&ctxs[device], d->dev);
    if (r != CUDA_SUCCESS)
      ctxs[device] = NULL;
  }
  d->ctx = ctxs[device];
  pthread_mutex_unlock(&mu);
  return r == CUDA_SUCCESS ? FERRY_OK : fy_nvdec_cu_fail(d, r, "retaining the device's context");
}

int fy_nvdec_pool_caps(fy_nvdec *d, CUVIDDECODECAPS *caps) {
  int device = d->device;
  pthread_mutex_lock(&mu); /* held while asking: readers opened at once ask once */
  for (int i = 0; i < ncaps; i++) {
    const CUVIDDECODECAPS *c = &caps_seen[i].caps;
    if (caps_seen[i].device == device && c->eCodecType == caps->eCodecType &&
        c->eChromaFormat == caps->eChromaFormat && c->nBitDepthMinus8 == caps->nBitDepthMinus8) {
      *caps = *c;
      pthread_mutex_unlock(&mu);
      return FERRY_OK;
    }
  }
  fy_nvdec_push(d);
  CUresult r = fy_cv->cuvidGetDecoderCaps(caps);
  fy_nvdec_pop();
  if (r == CUDA_SUCCESS && ncaps < MAX_CAPS) {
    caps_seen[ncaps].device = device;
    caps_seen[ncaps++].caps = *caps;
  }
  pthread_mutex_unlock(&mu);
  return r == CUDA_SUCCESS ? FERRY_OK : fy_nvdec_cu_fail(d, r, "asking the decoder's capabilities");
}

static int same_make(const CUVIDDECODECREATEINFO *a, const CUVIDDECODECREATEINFO *b) {
  return a->ulWidth == b->ulWidth && a->ulHeight == b->ulHeight && a->ulMaxWidth == b->ulMaxWidth &&
         a->ulMaxHeight == b->ulMaxHeight && a->ulNumDecodeSurfaces == b->ulNumDecodeSurfaces &&
         a->CodecType == b->CodecType && a->ChromaFormat == b->ChromaFormat &&
         a->ulCreationFlags == b->ulCreationFlags && a->bitDepthMinus8 == b->bitDepthMinus8 &&
         a->OutputFormat == b->OutputFormat && a->DeinterlaceMode == b->DeinterlaceMode &&
         a->ulTargetWidth == b->ulTargetWidth && a->ulTargetHeight == b->ulTargetHeight &&
         a->ulNumOutputSurfaces == b->ulNumOutputSurfaces &&
         a->display_area.left == b->display_area.left &&
         a->display_area.top == b->display_area.top &&
         a->display_area.right == b->display_area.right &&
         a->display_area.bottom == b->display_area.bottom;
}

int fy_nvdec_pool_take(fy_nvdec *d, const CUVIDDECODECREATEINFO *ci) {
  int device = d->device;
  pthread_mutex_lock(&mu);
  int found = -1;
  for (int i = 0; i < nidle; i++)
    if (idles[i].device == device && same_make(&idles[i].ci, ci) &&
        (found < 0 || idles[i].age > idles[found].age))
      found = i; /* the most recent: its memory is the warmest */
  if (found >= 0) {
    reused++;
    d->dec = idles[found].dec;
    d->lock = idles[found].lock;
    idle_bytes -= idles[found].bytes;
    idles[found] = idles[--nidle];
  } else {
    made++; /* the caller makes one */
  }
  pthread_mutex_unlock(&mu);
  return found >= 0;
}

void fy_nvdec_pool_counts(uint64_t *made_out, uint64_t *reused_out) {
  pthread_mutex_lock(&mu);
  *made_out = made;
  *reused_out = reused;
  pthread_mutex_unlock(&mu);
}

static void destroy(CUcontext ctx, CUvideodecoder dec, CUvideoctxlock lock) {
  if (!ctx)
    return;
  fy_cu->cuCtxPushCurrent(ctx);
  if (dec)
    fy_cv->cuvidDestroyDecoder(dec);
  CUcontext dummy;
  fy_cu->cuCtxPopCurrent(&dummy);
  if (lock)
    fy_cv->cuvidCtxLockDestroy(lock);
}

void fy_nvdec_pool_give(fy_nvdec *d, int reusable) {
  int device = d->device;
  const CUVIDDECODECREATEINFO *ci = &d->ci;
  CUvideodecoder dec = d->dec;
  CUvideoctxlock lock = d->lock;
  d->dec = NULL;
  d->lock = NULL;
  if (!dec && !lock)
    return;
  uint64_t bytes = (uint64_t)ci->ulWidth * ci->ulHeight * 3 / 2 * (ci->bitDepthMinus8 ? 2 : 1) *
                   (ci->ulNumDecodeSurfaces + ci->ulNumOutputSurfaces);
  int keep = d->keep < 0 ? 0 : d->keep > MAX_IDLE ? MAX_IDLE : d->keep;
  int kept = reusable && dec && keep > 0;
  struct {
    CUcontext ctx;
    CUvideodecoder dec;
    CUvideoctxlock lock;
  } out[MAX_IDLE + 2];
  int nout = 0;
  pthread_mutex_lock(&mu);
  if (kept) {
    idle *e = &idles[nidle++];
    *e = (idle){.device = device, .ci = *ci, .dec = dec, .lock = lock, .bytes = bytes};
    e->ci.vidLock = NULL;
    e->age = ++ticks;
    idle_bytes += bytes;
    while (nidle > keep || (idle_bytes > IDLE_BYTES && nidle > 0)) {
      int old = 0; /* the oldest goes */
      for (int i = 1; i < nidle; i++)
        if (idles[i].age < idles[old].age)
          old = i;
      out[nout].ctx = ctxs[idles[old].device];
      out[nout].dec = idles[old].dec;
      out[nout++].lock = idles[old].lock;
      idle_bytes -= idles[old].bytes;
      idles[old] = idles[--nidle];
    }
  } else {
    out[nout].ctx = d->ctx;
    out[nout].dec = dec;
    out[nout++].lock = lock;
  }
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < nout; i++) /* outside the lock: each takes long */
    destroy(out[i].ctx, out[i].dec, out[i].lock);
}

#endif /* FY_NVDEC */
