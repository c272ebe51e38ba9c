/* nvdec.c — video decoding on the GPU's video engines (NVDEC).
 *
 * libavformat demuxes (and its Annex-B bitstream filters turn MP4/MKV
 * H.264/HEVC packets into start-code streams); NVIDIA's parser in
 * libnvcuvid finds the pictures and calls back: a sequence header creates
 * the decoder (after asking the driver whether it can), each picture is
 * queued on the engine, each picture ready for display, in presentation
 * order, is put in a small queue. fy_nvdec_next() hands those out one at a
 * time; only frames the caller keeps are mapped (post-processed into an
 * NV12/P016 surface it can read), so skipped frames cost the engine alone.
 * Each displayed picture's decode status is asked of the driver
 * (cuvidGetDecodeStatus: H.264 and HEVC; other codecs answer "not
 * supported"): pictures decoded with errors, concealed or not, are counted
 * as damaged, or end decoding in strict mode, as libavcodec's flags do on
 * the CPU (decode_av.c).
 * libcuda and libnvcuvid are loaded at run time through the ffnvcodec
 * headers: this builds, and says why it cannot run, on machines without a
 * GPU. The CUDA primary context is shared with the CUDA runtime (gpu.cu),
 * so the mapped frames feed ferry's kernels directly. */
#include "video/nvdec_int.h"

#ifdef FY_NVDEC

CudaFunctions *fy_cu;
CuvidFunctions *fy_cv;
static char load_why[200];

static void load_once(void) {
  if (cuda_load_functions(&fy_cu, NULL) < 0) {
    snprintf(load_why, sizeof load_why, "libcuda.so.1 not found (no NVIDIA driver)");
    fy_cu = NULL;
  } else if (cuvid_load_functions(&fy_cv, NULL) < 0) {
    snprintf(load_why, sizeof load_why,
             "libnvcuvid.so.1 not found (the driver's video decode library; in a container it "
             "needs NVIDIA_DRIVER_CAPABILITIES to include 'video')");
    fy_cv = NULL;
  } else if (fy_cu->cuInit(0) != CUDA_SUCCESS) {
    snprintf(load_why, sizeof load_why, "cuInit failed (no usable GPU)");
    fy_cv = NULL;
  }
}

int fy_nvdec_cu_fail(fy_nvdec *d, CUresult r, const char *what) {
  d->cuda_failed = 1;
  const char *name = NULL;
  if (fy_cu && fy_cu->cuGetErrorName)
    fy_cu->cuGetErrorName(r, &name);
  return fy_error(r == 2 /* CUDA_ERROR_OUT_OF_MEMORY */ ? FERRY_ENOMEM : FERRY_EIO,
                  "%s: NVDEC: %s: %s (%d)", d->path, what, name ? name : "error", (int)r);
}

void fy_nvdec_push(fy_nvdec *d) { fy_cu->cuCtxPushCurrent(d->ctx); }
void fy_nvdec_pop(void) {
  CUcontext dummy;
  fy_cu->cuCtxPopCurrent(&dummy);
}

/* ------------------------------------------------------------ callbacks */

static int raise_fatal(fy_nvdec *d, int status) {
  if (!d->fatal) {
    d->fatal = status;
    snprintf(d->fatal_msg, sizeof d->fatal_msg, "%s", ferry_last_error());
  }
  return 0; /* stops the parser */
}

static const char *codec_name(cudaVideoCodec c) {
  switch (c) {
  case cudaVideoCodec_H264: return "h264";
  case cudaVideoCodec_HEVC: return "hevc";
  case cudaVideoCodec_VP9: return "vp9";
  case cudaVideoCodec_AV1: return "av1";
  default: return "?";
  }
}

static int same_sequence(const CUVIDEOFORMAT *a, const CUVIDEOFORMAT *b) {
  return a->coded_width == b->coded_width && a->coded_height == b->coded_height &&
         a->display_area.left == b->display_area.left &&
         a->display_area.right == b->display_area.right &&
         a->display_area.top == b->display_area.top &&
         a->display_area.bottom == b->display_area.bottom &&
         a->bit_depth_luma_minus8 == b->bit_depth_luma_minus8 &&
         a->chroma_format == b->chroma_format;
}

static int CUDAAPI on_sequence(void *user, CUVIDEOFORMAT *f) {
  fy_nvdec *d = user;
  if (d->dec) {
    if (same_sequence(f, &d->vf))
      return (int)d->surfaces;
    fy_error(FERRY_EUNSUPPORTED, "%s: frame size changes mid-stream (%dx%d, then %dx%d)", d->path,
             (int)d->target_w, (int)d->target_h, f->display_area.right - f->display_area.left,
             f->display_area.bottom - f->display_area.top);
    return raise_fatal(d, FERRY_EUNSUPPORTED);
  }
  if (f->chroma_format != cudaVideoChromaFormat_420) {
    fy_error(FERRY_EUNSUPPORTED,
             "%s: NVDEC path decodes 4:2:0 video only (this is %s); use the CPU (device -1)",
             d->path, f->chroma_format == cudaVideoChromaFormat_444 ? "4:4:4" : "not 4:2:0");
    return raise_fatal(d, FERRY_EUNSUPPORTED);
  }
  CUVIDDECODECAPS caps;
  memset(&caps, 0, sizeof caps);
  caps.eCodecType = f->codec;
  caps.eChromaFormat = f->chroma_format;
  caps.nBitDepthMinus8 = f->bit_depth_luma_minus8;
  int cst = fy_nvdec_pool_caps(d, &caps);
  if (cst != FERRY_OK)
    return raise_fatal(d, cst);
  if (!caps.bIsSupported || f->coded_width > caps.nMaxWidth || f->coded_height > caps.nMaxHeight) {
    fy_error(FERRY_EUNSUPPORTED,
             "%s: this GPU's NVDEC does not decode %s %d-bit at %ux%u (max %ux%u); use the CPU "
             "(device -1)",
             d->path, codec_name(f->codec), f->bit_depth_luma_minus8 + 8, f->coded_width,
             f->coded_height, caps.nMaxWidth, caps.nMaxHeight);
    return raise_fatal(d, FERRY_EUNSUPPORTED);
  }
  CUVIDDECODECREATEINFO ci;
  memset(&ci, 0, sizeof ci);
  ci.ulWidth = f->coded_width;
  ci.ulHeight = f->coded_height;
  ci.ulMaxWidth = f->coded_width;
  ci.ulMaxHeight = f->coded_height;
  unsigned n = f->min_num_decode_surfaces + 8u; /* + display delay and the queue */
  ci.ulNumDecodeSurfaces = n < 8 ? 8 : n > 32 ? 32 : n;
  ci.CodecType = f->codec;
  ci.ChromaFormat = f->chroma_format;
  ci.ulCreationFlags = cudaVideoCreate_PreferCUVID;
  ci.bitDepthMinus8 = f->bit_depth_luma_minus8;
  ci.display_area.left = (short)f->display_area.left;
  ci.display_area.top = (short)f->display_area.top;
  ci.display_area.right = (short)f->display_area.right;
  ci.display_area.bottom = (short)f->display_area.bottom;
  ci.OutputFormat =
      f->bit_depth_luma_minus8 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
  ci.DeinterlaceMode =
      f->progressive_sequence ? cudaVideoDeinterlaceMode_Weave : cudaVideoDeinterlaceMode_Adaptive;
  ci.ulTargetWidth = (unsigned)(f->display_area.right - f->display_area.left);
  ci.ulTargetHeight = (unsigned)(f->display_area.bottom - f->display_area.top);
  ci.ulNumOutputSurfaces = 2;
  if (!fy_nvdec_pool_take(d, &ci)) {
    CUresult r = fy_cv->cuvidCtxLockCreate(&d->lock, d->ctx);
    if (r != CUDA_SUCCESS) {
      d->lock = NULL;
      return raise_fatal(d, fy_nvdec_cu_fail(d, r, "creating the context lock"));
    }
    ci.vidLock = d->lock;
    fy_nvdec_push(d);
    r = fy_cv->cuvidCreateDecoder(&d->dec, &ci);
    fy_nvdec_pop();
    if (r != CUDA_SUCCESS) {
      d->dec = NULL;
      return raise_fatal(d, fy_nvdec_cu_fail(d, r, "creating the decoder"));
    }
  }
  d->ci = ci;
  d->vf = *f;
  d->surfaces = (unsigned)ci.ulNumDecodeSurfaces;
  d->target_w = (unsigned)ci.ulTargetWidth;
  d->target_h = (unsigned)ci.ulTargetHeight;
  return (int)d->surfaces;
}

static int CUDAAPI on_decode(void *user, CUVIDPICPARAMS *pic) {
  fy_nvdec *d = user;
  if (!d->dec)
    return 0;
  int i = pic->CurrPicIdx;
  if (i >= 0 && i < QCAP) {
    d->skip[i] = 0;
    if (d->pkt_skip && !pic->ref_pic_flag && !pic->field_pic_flag) {
      d->skip[i] = 1; /* no picture needs it, nobody wants it */
      d->skip_t[i] = d->pkt_t;
      d->skipped++;
      d->timed = 1;
      return 1;
    }
  }
  fy_nvdec_push(d);
  CUresult r = fy_cv->cuvidDecodePicture(d->dec, pic);
  fy_nvdec_pop();
  if (r != CUDA_SUCCESS && !d->pending) {
    d->pending = FERRY_ECORRUPT;
    snprintf(d->pending_msg, sizeof d->pending_msg, "decode error at %.3f s (NVDEC status %d)",
             d->last_t, (int)r);
  }
  return 1;
}

/* The driver's word on how picture `idx` decoded: PIC_DECODING while the
 * engine is still at it; PIC_UNKNOWN where the codec has no status (then
 * never asked again). */
static int pic_status(fy_nvdec *d, int idx) {
  if (d->no_status || !d->dec)
    return PIC_UNKNOWN;
  CUVIDGETDECODESTATUS s;
  memset(&s, 0, sizeof s);
  fy_nvdec_push(d);
  CUresult r = fy_cv->cuvidGetDecodeStatus(d->dec, idx, &s);
  fy_nvdec_pop();
  if (r == 801 /* CUDA_ERROR_NOT_SUPPORTED */)
    d->no_status = 1;
  if (r != CUDA_SUCCESS)
    return PIC_UNKNOWN;
  if (s.decodeStatus == cuvidDecodeStatus_Error ||
      s.decodeStatus == cuvidDecodeStatus_Error_Concealed)
    return PIC_DAMAGED;
  return s.decodeStatus == cuvidDecodeStatus_Success      ? PIC_OK
         : s.decodeStatus == cuvidDecodeStatus_InProgress ? PIC_DECODING
                                                          : PIC_UNKNOWN;
}

/* The final status of picture `idx`: a picture still decoding is asked
 * again until it is done (the engine finishes it in milliseconds; at most
 * 1 s, then it counts as unknown), so that every damaged frame counts, not
 * only those done by the time the parser queued them. */
static int pic_final(fy_nvdec *d, int idx, int status) {
  if (status != PIC_DECODING)
    return status;
  double t0 = fy_now(), waited = 0;
  for (int k = 0; status == PIC_DECODING && waited < 1.0; k++) {
    struct timespec ts = {0, k < 100 ? 50000 : 500000}; /* 50 us, later 0.5 ms */
    nanosleep(&ts, NULL);
    status = pic_status(d, idx);
    waited = fy_now() - t0;
  }
  d->wait_s += waited;
  return status == PIC_DECODING ? PIC_UNKNOWN : status;
}

static void count_status(fy_nvdec *d, int status, int64_t index, double t) {
  if (status != PIC_DAMAGED)
    return;
  if (!d->damaged++ || index < d->first_damaged) {
    d->first_damaged = index;
    d->first_damaged_t = t;
  }
}

/* Pending statuses: counted once final; the oldest waited for until at
 * most PEND_MAX - 1 remain (room for one more), or none when `all`. */
void fy_nvdec_settle(fy_nvdec *d, int all) {
  int n = 0;
  for (int i = 0; i < d->npend; i++) {
    int st = pic_status(d, d->pend[i].pic);
    if (st == PIC_DECODING)
      d->pend[n++] = d->pend[i];
    else
      count_status(d, st, d->pend[i].index, d->pend[i].t);
  }
  d->npend = n;
  int drop = d->npend - (all ? 0 : PEND_MAX - 1);
  if (drop <= 0)
    return;
  for (int i = 0; i < drop; i++)
    count_status(d, pic_final(d, d->pend[i].pic, PIC_DECODING), d->pend[i].index, d->pend[i].t);
  memmove(d->pend, d->pend + drop, sizeof *d->pend * (size_t)(d->npend - drop));
  d->npend -= drop;
}

/* The current frame was not mapped: its status counts now or later. */
void fy_nvdec_close_cur(fy_nvdec *d) {
  if (!d->cur_open)
    return;
  d->cur_open = 0;
  if (d->cur_status != PIC_DECODING) {
    count_status(d, d->cur_status, d->cur_index, d->cur_t);
    return;
  }
  fy_nvdec_settle(d, 0); /* room for one more */
  d->pend[d->npend].pic = d->cur.picture_index;
  d->pend[d->npend].index = d->cur_index;
  d->pend[d->npend++].t = d->cur_t;
}

static int CUDAAPI on_display(void *user, CUVIDPARSERDISPINFO *info) {
  fy_nvdec *d = user;
  if (!info)
    return 1; /* end of stream */
  int i = info->picture_index;
  if (i >= 0 && i < QCAP && d->skip[i]) {
    d->skip[i] = 0;
    double t = info->timestamp / CLOCK, half = d->fps > 0 ? 0.5 / d->fps : 0;
    if (fabs(t - d->skip_t[i]) <= half)
      return 1; /* not decoded: not shown */
    /* the parser's pictures and the packets did not line up: a frame
     * that may be wanted was not decoded; never hand out a wrong frame */
    fy_error(FERRY_EIO,
             "%s: NVDEC: the picture shown at %.3f s was skipped as the one at %.3f s; read "
             "this file without sampling (every frame) or on the CPU",
             d->path, t, d->skip_t[i]);
    return raise_fatal(d, FERRY_EIO);
  }
  if (d->qn == QCAP) {
    fy_error(FERRY_EIO, "%s: NVDEC: display queue overflow", d->path);
    return raise_fatal(d, FERRY_EIO);
  }
  int at = (d->qhead + d->qn++) % QCAP;
  d->q[at] = *info;
  d->qs[at] = (unsigned char)pic_status(d, info->picture_index);
  return 1;
}

static int cuvid_codec(enum AVCodecID id, cudaVideoCodec *c) {
  switch (id) {
  case AV_CODEC_ID_H264: *c = cudaVideoCodec_H264; return 1;
  case AV_CODEC_ID_HEVC: *c = cudaVideoCodec_HEVC; return 1;
  case AV_CODEC_ID_VP9: *c = cudaVideoCodec_VP9; return 1;
  case AV_CODEC_ID_AV1: *c = cudaVideoCodec_AV1; return 1;
  default: return 0;
  }
}

/* Colour matrix and range: from the stream, else BT.709 for HD and BT.601
 * below 720 lines, video range (what players assume; as the CPU path). */
static void colour(fy_nvdec *d, const AVStream *st) {
  int cs = st->codecpar->color_space;
  d->matrix = cs == AVCOL_SPC_BT709                                          ? 1
              : cs == AVCOL_SPC_BT2020_NCL || cs == AVCOL_SPC_BT2020_CL      ? 2
              : cs == AVCOL_SPC_BT470BG || cs == AVCOL_SPC_SMPTE170M         ? 0
              : (st->codecpar->height >= 720 || st->codecpar->width >= 1280) ? 1
                                                                             : 0;
  d->full_range = st->codecpar->color_range == AVCOL_RANGE_JPEG;
}

int fy_nvdec_available(char *why, size_t n) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, load_once);
  if (!fy_cv)
    snprintf(why, n, "%s", load_why);
  return fy_cv != NULL;
}

/* NVDEC decodes 4:2:0 YUV only (of what ferry asks of it). */
static int check_format(fy_nvdec *d, const AVStream *st) {
  enum AVPixelFormat f = st->codecpar->format;
  const AVPixFmtDescriptor *pd = av_pix_fmt_desc_get(f);
  if (f == AV_PIX_FMT_NONE || !pd)
    return FERRY_OK; /* unknown until decoded: the parser will tell */
  if (fy_nvdec_yuv420(pd))
    return FERRY_OK;
  return fy_error(FERRY_EUNSUPPORTED, "%s: NVDEC decodes 4:2:0 YUV video; this %s stream is %s",
                  d->path, d->info.codec, pd->name);
}

/* Whether this GPU's NVDEC takes the stream: codec, depth, size limits. */
static int check_caps(fy_nvdec *d, cudaVideoCodec codec, int depth, int w, int h) {
  CUVIDDECODECAPS caps;
  memset(&caps, 0, sizeof caps);
  caps.eCodecType = codec;
  caps.eChromaFormat = cudaVideoChromaFormat_420;
  caps.nBitDepthMinus8 = (unsigned)(depth > 8 ? depth - 8 : 0);
  int st = fy_nvdec_pool_caps(d, &caps);
  if (st != FERRY_OK)
    return st;
  if (!caps.bIsSupported)
    return fy_error(FERRY_EUNSUPPORTED, "%s: this GPU's NVDEC does not decode %s %d-bit", d->path,
                    d->info.codec, depth);
  if (w < caps.nMinWidth || h < caps.nMinHeight || (unsigned)w > caps.nMaxWidth ||
      (unsigned)h > caps.nMaxHeight)
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: %dx%d is outside what this GPU's NVDEC decodes for %s (%dx%d to %ux%u)",
                    d->path, w, h, d->info.codec, caps.nMinWidth, caps.nMinHeight, caps.nMaxWidth,
                    caps.nMaxHeight);
  return FERRY_OK;
}

/* A new parser (at open, and after a seek: the old one's pictures and
 * state go). The decoder stays: the sequence callback finds it made for
 * the same sequence. */
int fy_nvdec_make_parser(fy_nvdec *d) {
  if (d->parser)
    fy_cv->cuvidDestroyVideoParser(d->parser);
  d->parser = NULL;
  CUVIDPARSERPARAMS pp;
  memset(&pp, 0, sizeof pp);
  pp.CodecType = d->codec;
  pp.ulMaxNumDecodeSurfaces = d->surfaces ? d->surfaces : 1; /* set by the sequence callback */
  pp.ulClockRate = (unsigned)CLOCK;
  pp.ulMaxDisplayDelay = 4; /* frames queued on the engine ahead of display */
  pp.pUserData = d;
  pp.pfnSequenceCallback = on_sequence;
  pp.pfnDecodePicture = on_decode;
  pp.pfnDisplayPicture = on_display;
  CUresult r = fy_cv->cuvidCreateVideoParser(&d->parser, &pp);
  if (r != CUDA_SUCCESS) {
    d->parser = NULL;
    return fy_nvdec_cu_fail(d, r, "creating the parser");
  }
  return FERRY_OK;
}

int fy_nvdec_open(const char *path, int device, double start_s, fy_nvdec **out,
                  ferry_video_info *info) {
  *out = NULL;
  char why[200];
  if (!fy_nvdec_available(why, sizeof why))
    return fy_error(FERRY_EUNSUPPORTED, "%s: GPU video decoding unavailable: %s", path, why);
  fy_nvdec *d = calloc(1, sizeof *d);
  if (!d || !(d->path = strdup(path)) || !(d->pkt = av_packet_alloc())) {
    if (d)
      free(d->path);
    free(d);
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  }
  d->keep = FY_NVDEC_KEEP_DEFAULT;
  int st = fy_av_open(path, &d->fmt, &d->stream, NULL);
  if (st != FERRY_OK)
    goto fail;
  AVStream *s = d->fmt->streams[d->stream];
  fy_av_info(d->fmt, d->stream, &d->info);
  cudaVideoCodec codec;
  if (!cuvid_codec(s->codecpar->codec_id, &codec)) {
    st = fy_error(FERRY_EUNSUPPORTED, "%s: NVDEC does not decode %s video; use the CPU (device -1)",
                  path, d->info.codec);
    goto fail;
  }
  d->tb = s->time_base;
  d->fps = d->info.fps;
  d->start = d->info.start_s;
  d->duration = d->info.duration_s;
  d->declared = d->info.frames;
  d->last_t = d->start - (d->fps > 0 ? 1 / d->fps : 0);
  d->want_t = d->read_t = d->floor_t = -INFINITY;
  d->ahead_t = NAN;
  /* numbering from timestamps is exact for a constant rate (as decode_av.c
   * decides it; every timestamp is checked in fy_nvdec_next) */
  d->cfr = d->fps > 0 && s->avg_frame_rate.num && s->r_frame_rate.num &&
           !av_cmp_q(s->avg_frame_rate, s->r_frame_rate);
  d->grid_tol = 0.05 + av_q2d(d->tb) * d->fps;
  colour(d, s);
  if ((st = check_format(d, s)) != FERRY_OK || (st = fy_nvdec_open_bsf(d, s)) != FERRY_OK)
    goto fail;
  CUresult r;
  int count = 0;
  if (fy_cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || device >= count ||
      (r = fy_cu->cuDeviceGet(&d->dev, device)) != CUDA_SUCCESS) {
    st = fy_error(FERRY_EINVAL, "%s: no CUDA device %d (%d present)", path, device, count);
    goto fail;
  }
  d->device = device;
  if ((st = fy_nvdec_pool_ctx(d)) != FERRY_OK)
    goto fail;
  if ((st = check_caps(d, codec, d->info.bit_depth, d->info.width, d->info.height)) != FERRY_OK)
    goto fail;
  if (start_s > 0) {
    int64_t ts = (int64_t)floor(start_s / av_q2d(d->tb));
    int e = av_seek_frame(d->fmt, d->stream, ts, AVSEEK_FLAG_BACKWARD);
    if (e < 0) {
      char eb[128];
      av_strerror(e, eb, sizeof eb);
      st = fy_error(FERRY_ECORRUPT, "%s: cannot seek to %.3f s: %s", path, start_s, eb);
      goto fail;
    }
    d->index_from_time = d->sought = 1;
  }
  d->codec = codec;
  if ((st = fy_nvdec_make_parser(d)) != FERRY_OK)
    goto fail;
  d->info.nvdec = 1;
  *info = d->info;
  *out = d;
  return FERRY_OK;
fail:
  fy_nvdec_close(d);
  return st;
}

void fy_nvdec_close(fy_nvdec *d) {
  if (!d)
    return;
  if (d->mapped)
    fy_nvdec_unmap(d);
  if (d->parser)
    fy_cv->cuvidDestroyVideoParser(d->parser);
  fy_nvdec_pool_give(d, !d->fatal && !d->cuda_failed);
  av_bsf_free(&d->bsf);
  av_packet_free(&d->pkt);
  fy_av_close(&d->fmt);
  free(d->path);
  free(d);
}

/* ------------------------------------------------------------- frames */

int fy_nvdec_next(fy_nvdec *d, double *t, int64_t *index) {
  if (d->mapped)
    fy_nvdec_unmap(d);
  fy_nvdec_close_cur(d); /* settles the pending statuses it needs room among */
  for (;;) {
    while (d->qn == 0) {
      if (d->fatal)
        return fy_error(d->fatal, "%s", d->fatal_msg);
      if (d->eos_sent) {
        fy_nvdec_settle(d, 1); /* every status counted by the end */
        fy_vprogress p = {d->sought, d->declared, d->returned, d->duration,
                          d->fps,    d->last_t,   d->start};
        if (d->timed) { /* frames were skipped: what was read counts */
          if (d->read_end > p.returned)
            p.returned = d->read_end;
          if (d->read_t > p.last_t)
            p.last_t = d->read_t;
        }
        return fy_video_end(d->path, &p, d->pending, d->pending_msg);
      }
      fy_nvdec_feed(d);
    }
    d->cur = d->q[d->qhead];
    d->qhead = (d->qhead + 1) % QCAP;
    d->qn--;
    /* shown already: a jump to a keyframe ahead (fy_nvdec_want) landed
     * before the last frame handed out */
    if (d->missing_pts || d->cur.timestamp / CLOCK > d->floor_t + 1e-9)
      break;
  }
  int status = d->qs[(d->qhead + QCAP - 1) % QCAP];
  if (d->strict) /* the frame's status decides whether it is handed out */
    status = pic_final(d, d->cur.picture_index, status);
  double step = d->fps > 0 ? 1 / d->fps : 0;
  double ft = d->missing_pts ? d->last_t + step : d->cur.timestamp / CLOCK;
  double pos = (ft - d->start) * d->fps;
  if (d->cfr && (d->missing_pts || fabs(pos - llround(pos)) > d->grid_tol ||
                 (!d->timed && !d->index_from_time && llround(pos) != d->next_index))) {
    d->cfr = 0; /* off the constant-rate grid: nothing skipped from here */
    d->want_t = -INFINITY;
  }
  if (d->index_from_time || (d->timed && d->cfr)) {
    d->next_index = d->fps > 0 ? llround(pos) : 0;
    d->index_from_time = 0;
  }
  *t = d->last_t = ft;
  *index = d->next_index++;
  if (!d->strict) {
    d->cur_open = 1;
    d->cur_status = status;
    d->cur_index = *index;
    d->cur_t = ft;
  } else if (status == PIC_DAMAGED) {
    count_status(d, status, *index, ft);
    return fy_error(FERRY_ECORRUPT,
                    "%s: frame %lld (%.3f s) decoded with errors (NVDEC reports damaged "
                    "data); strict decoding stops here",
                    d->path, (long long)*index, ft);
  }
  d->returned++;
  return FERRY_OK;
}

int fy_nvdec_set_strict(fy_nvdec *d, int strict) {
  enum AVCodecID id = d->fmt->streams[d->stream]->codecpar->codec_id;
  if (strict && id != AV_CODEC_ID_H264 && id != AV_CODEC_ID_HEVC)
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: NVDEC reports damaged frames for H.264 and HEVC only; strict decoding "
                    "of %s runs on the CPU",
                    d->path, avcodec_get_name(id));
  d->strict = strict;
  return FERRY_OK;
}

void fy_nvdec_set_keep(fy_nvdec *d, int keep) { d->keep = keep; }

double fy_nvdec_wait_s(const fy_nvdec *d) { return d->wait_s; }

void fy_nvdec_damage(const fy_nvdec *d, uint64_t *frames, int64_t *first, double *first_t) {
  *frames = d->damaged;
  *first = d->damaged ? d->first_damaged : -1;
  *first_t = d->damaged ? d->first_damaged_t : 0;
}

int fy_nvdec_map(fy_nvdec *d, void *stream, fy_gpu_yuv *f) {
  CUVIDPROCPARAMS pp;
  memset(&pp, 0, sizeof pp);
  pp.progressive_frame = d->cur.progressive_frame;
  pp.second_field = d->cur.repeat_first_field + 1;
  pp.top_field_first = d->cur.top_field_first;
  pp.unpaired_field = d->cur.repeat_first_field < 0;
  pp.output_stream = (CUstream)stream;
  unsigned long long ptr = 0;
  unsigned pitch = 0;
  double t0 = fy_now();
  fy_nvdec_push(d);
  CUresult r = fy_cv->cuvidMapVideoFrame(d->dec, d->cur.picture_index, &ptr, &pitch, &pp);
  fy_nvdec_pop();
  d->wait_s += fy_now() - t0;
  if (r != CUDA_SUCCESS)
    return fy_nvdec_cu_fail(d, r, "mapping a decoded frame");
  if (d->cur_open) { /* decoded by now: its final status */
    d->cur_open = 0;
    count_status(d, pic_final(d, d->cur.picture_index, pic_status(d, d->cur.picture_index)),
                 d->cur_index, d->cur_t);
  }
  d->mapped = 1;
  d->map_ptr = ptr;
  memset(f, 0, sizeof *f);
  f->luma = ptr;
  f->chroma = ptr + (unsigned long long)pitch * ((d->target_h + 1) & ~1u);
  f->pitch = (int)pitch;
  f->width = (int)d->target_w;
  f->height = (int)d->target_h;
  f->wide = d->vf.bit_depth_luma_minus8 > 0;
  f->matrix = d->matrix;
  f->full_range = d->full_range || d->vf.video_signal_description.video_full_range_flag;
  f->orientation = 1;
  return FERRY_OK;
}

void fy_nvdec_unmap(fy_nvdec *d) {
  if (!d->mapped)
    return;
  fy_nvdec_push(d);
  fy_cv->cuvidUnmapVideoFrame(d->dec, d->map_ptr);
  fy_nvdec_pop();
  d->mapped = 0;
}

#endif
