/* nvdec_int.h — internals shared by the NVDEC decoder's files: nvdec.c
 * (the session: driver loading, the parser's callbacks, decode status,
 * open/close, frames out, mapping), nvdec_input.c (demuxed packets into
 * the parser, each packet's time deciding what sampling skips) and
 * nvdec_seek.c (random access and sampling). nvdec_stub.c stands in when
 * the build has no NVDEC (FY_NVDEC unset). */
#ifndef FY_NVDEC_INT_H
#define FY_NVDEC_INT_H

#include "video/video.h"

#if defined(FERRY_HAVE_AV) && defined(FERRY_HAVE_CUDA) && defined(__has_include)
#if __has_include(<ffnvcodec/dynlink_loader.h>)
#define FY_NVDEC 1
#endif
#endif

#ifdef FY_NVDEC
#include "video/av_int.h"

#include <libavcodec/bsf.h>
#include <libavutil/pixdesc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FFNV_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#include <ffnvcodec/dynlink_loader.h>

#define QCAP 64          /* display queue */
#define PEND_MAX 4       /* frames whose decode status is asked later */
#define CLOCK 10000000.0 /* the parser's timestamps: 10 MHz */
#define LEAD_FRAMES 20   /* jumps ahead: the most reordering the codecs allow, and a margin */

extern CudaFunctions *fy_cu; /* loaded once (fy_nvdec_available) */
extern CuvidFunctions *fy_cv;

struct fy_nvdec {
  char *path;
  AVFormatContext *fmt;
  int stream;
  AVBSFContext *bsf; /* NULL: packets go to the parser as they are */
  AVPacket *pkt;
  AVRational tb;
  double fps, start, duration;
  int64_t declared;
  CUcontext ctx; /* the device's, retained once (nvdec_pool.c) */
  CUdevice dev;
  int device;
  int cuda_failed;     /* a CUDA call failed: the decoder is not kept */
  CUvideoctxlock lock; /* the decoder's (made with it, kept with it) */
  CUvideoparser parser;
  cudaVideoCodec codec;
  CUvideodecoder dec;
  CUVIDDECODECREATEINFO ci; /* how dec was made */
  CUVIDEOFORMAT vf;         /* the sequence the decoder was made for */
  unsigned surfaces, target_w, target_h;
  CUVIDPARSERDISPINFO q[QCAP];
  unsigned char qs[QCAP]; /* each queued picture's decode status (PIC_*) */
  int qhead, qn;
  CUVIDPARSERDISPINFO cur;
  int strict;
  int keep;      /* idle decoders the pool keeps when this one is given back (nvdec_keep) */
  int no_status; /* the driver cannot report decode status for this codec */
  uint64_t damaged;
  int64_t first_damaged;
  double first_damaged_t;
  /* Decode status asked late (not in strict mode): a frame handed out while
   * the engine still decodes it is not waited for; mapping it waits (then
   * its status is final), otherwise it joins `pend` and is asked again at
   * the next calls, waited for only when PEND_MAX are pending or at the
   * end, well before its surface can be reused. */
  struct {
    int pic;
    int64_t index;
    double t;
  } pend[PEND_MAX];
  int npend;
  int cur_open, cur_status; /* the current frame's status is not counted yet */
  int64_t cur_index;
  double cur_t;
  double wait_s; /* waiting for the engine: status polls, mapping */
  int input_done, eos_sent;
  int fatal;           /* an error raised in a callback (message set) */
  char fatal_msg[320]; /* its message */
  int pending;         /* a read error, reported after the frames */
  char pending_msg[256];
  int missing_pts;
  double last_t;
  int64_t next_index, returned;
  int index_from_time, sought;
  /* Sampling (fy_nvdec_want): a non-reference picture shown before want_t
   * is not decoded. Each packet is one picture (CUVID_PKT_ENDOFPICTURE), so
   * the parser's decode callback comes while that packet is parsed and the
   * packet's time decides. skip[i]: surface i holds such a picture (not
   * decoded), to be shown at skip_t[i]; it is dropped when the parser
   * displays it. As on the CPU (decode_av.c), only for constant-rate
   * streams, and from the first skipped picture on (timed) frames are
   * numbered from their timestamps. */
  double want_t;
  double floor_t; /* after a jump ahead: frames up to this time are dropped */
  double ahead_t; /* that jump's keyframe time, until the first packet read */
  int no_ahead;   /* a jump landed before its keyframe: none again */
  uint64_t jumps;
  const fy_vsampler *smp; /* and the frames it rules out */
  int cfr, timed;
  double grid_tol;
  int pkt_skip; /* the packet being parsed shows before want_t */
  double pkt_t;
  unsigned char skip[QCAP];
  double skip_t[QCAP];
  int64_t read_end; /* 1 + the frame number of the last packet read */
  double read_t;    /* the latest packet time read */
  uint64_t skipped;
  int mapped;
  unsigned long long map_ptr;
  ferry_video_info info;
  int matrix, full_range;
};

enum { PIC_OK, PIC_DAMAGED, PIC_UNKNOWN, PIC_DECODING };

/* nvdec.c */
int fy_nvdec_cu_fail(fy_nvdec *d, CUresult r, const char *what);
void fy_nvdec_push(fy_nvdec *d); /* the decoder's context current */
void fy_nvdec_pop(void);
int fy_nvdec_make_parser(fy_nvdec *d);
void fy_nvdec_close_cur(fy_nvdec *d);
void fy_nvdec_settle(fy_nvdec *d, int all);
/* nvdec_pool.c: what the readers of a process share */
int fy_nvdec_pool_ctx(fy_nvdec *d); /* d->ctx for d->device */
int fy_nvdec_pool_caps(fy_nvdec *d, CUVIDDECODECAPS *caps);
/* an idle decoder made as ci, into d->dec and d->lock: 1, else 0 */
int fy_nvdec_pool_take(fy_nvdec *d, const CUVIDDECODECREATEINFO *ci);
/* d->dec (made as d->ci) and d->lock kept for another reader (reusable)
 * or destroyed */
void fy_nvdec_pool_give(fy_nvdec *d, int reusable);
/* nvdec_input.c */
int fy_nvdec_open_bsf(fy_nvdec *d, const AVStream *st);
void fy_nvdec_feed(fy_nvdec *d);

#endif /* FY_NVDEC */
#endif
