/* decode_av.c — the CPU video decoder: libavformat demuxes, libavcodec
 * decodes (H.264, HEVC, VP9, AV1, ... whatever this libavcodec has),
 * libswscale turns the frame (8/10/12-bit YUV or planar RGB) into 8-bit
 * RGB. A read or decode error stops demuxing; the frames still inside the
 * decoder are drained and returned before the error. */
#include "video/video.h"

#ifdef FERRY_HAVE_AV

#include "video/av_int.h"

#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fy_vdec {
  char *path;
  AVFormatContext *fmt;
  AVCodecContext *cc;
  AVPacket *pkt;
  AVFrame *frame;
  int stream;
  double tb, fps, start, duration;
  int64_t declared;
  int64_t next_index;  /* frame number of the next frame out */
  int index_from_time; /* after a seek: number from the timestamp */
  double last_t;
  int64_t returned; /* frames returned since open */
  int sought;
  /* Frames shown before want_t are not wanted: their packets are sent with
   * skip_frame = AVDISCARD_NONREF (a non-reference frame is never needed to
   * decode another, so the frames that come out decode exactly as before).
   * Only where frames can be numbered from their timestamps (cfr: constant
   * frame rate, every timestamp seen on its grid); once a frame was skipped
   * (timed), every frame is numbered from its timestamp. */
  double want_t;
  const fy_vsampler *smp; /* and frames it rules out (fy_vdec_sampler) */
  int cfr, timed;
  double grid_tol;  /* how far from the grid a timestamp may be, frames */
  int64_t read_end; /* 1 + the frame number of the last packet read */
  double read_t;    /* the latest packet time read */
  uint64_t skipped; /* packets sent with non-reference frames skipped */
  uint64_t seeks;   /* seeks to a keyframe ahead (sampling) */
  double floor_t;   /* after such a seek: frames up to this time are dropped */
  double ahead_t;   /* its keyframe time, until the first packet read */
  int no_ahead;     /* a seek ahead landed before its keyframe: none again */
  int flushing;     /* the decoder was sent its end */
  int pending;      /* error to report once drained (0: none) */
  int bad_run;      /* packets refused in a row */
  int bad_frames;   /* frames the decoder failed */
  int strict;
  uint64_t damaged; /* frames flagged damaged (concealed) or failed */
  int64_t first_damaged;
  double first_damaged_t;
  char pending_msg[256];
  struct SwsContext *sws;
  fy_buf rgb;
};

static const char *av_reason(int e, char *buf, size_t n) {
  av_strerror(e, buf, n);
  return buf;
}

static int rotation_of(const AVStream *st) {
  const int32_t *m = NULL;
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 29, 100)
  const AVPacketSideData *sd = av_packet_side_data_get(
      st->codecpar->coded_side_data, st->codecpar->nb_coded_side_data, AV_PKT_DATA_DISPLAYMATRIX);
  if (sd && sd->size >= 9 * sizeof(int32_t))
    m = (const int32_t *)sd->data;
#else
  size_t size = 0;
  const uint8_t *p = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (p && size >= 9 * sizeof(int32_t))
    m = (const int32_t *)p;
#endif
  if (!m)
    return 0;
  double r = -av_display_rotation_get(m); /* counter-clockwise -> clockwise */
  if (isnan(r))
    return 0;
  long q = lround(r / 90.0);
  return (int)(((q % 4) + 4) % 4) * 90;
}

void fy_av_info(AVFormatContext *fmt, int stream, ferry_video_info *info) {
  const AVStream *st = fmt->streams[stream];
  double tb = av_q2d(st->time_base);
  memset(info, 0, sizeof *info);
  snprintf(info->codec, sizeof info->codec, "%s", avcodec_get_name(st->codecpar->codec_id));
  info->width = st->codecpar->width;
  info->height = st->codecpar->height;
  info->rotation = rotation_of(st);
  info->upright_width = info->rotation % 180 ? info->height : info->width;
  info->upright_height = info->rotation % 180 ? info->width : info->height;
  const AVPixFmtDescriptor *pd = av_pix_fmt_desc_get(st->codecpar->format);
  info->bit_depth = pd ? pd->comp[0].depth : 8;
  AVRational fr = st->avg_frame_rate.num ? st->avg_frame_rate : st->r_frame_rate;
  info->fps = fr.num && fr.den ? av_q2d(fr) : 0;
  info->start_s = st->start_time != AV_NOPTS_VALUE ? st->start_time * tb : 0;
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
    info->duration_s = st->duration * tb;
  else if (fmt->duration > 0)
    info->duration_s = fmt->duration / (double)AV_TIME_BASE;
  info->frames = st->nb_frames > 0 ? st->nb_frames : 0;
}

static void fill_info(fy_vdec *d, ferry_video_info *info) {
  fy_av_info(d->fmt, d->stream, info);
  d->fps = info->fps;
  d->start = info->start_s;
  d->duration = info->duration_s;
  d->declared = info->frames;
}

int fy_vdec_open(const char *path, int threads, int strict, fy_vdec **out, ferry_video_info *info) {
  *out = NULL;
  fy_vdec *d = calloc(1, sizeof *d);
  if (!d || !(d->path = strdup(path))) {
    free(d);
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  }
  char eb[128];
  const AVCodec *codec = NULL;
  int e = fy_av_open(path, &d->fmt, &d->stream, &codec);
  if (e != FERRY_OK) {
    fy_vdec_close(d);
    return e;
  }
  AVStream *st = d->fmt->streams[d->stream];
  d->tb = av_q2d(st->time_base);
  if (!(d->cc = avcodec_alloc_context3(codec)) || !(d->pkt = av_packet_alloc()) ||
      !(d->frame = av_frame_alloc())) {
    fy_vdec_close(d);
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  }
  if ((e = avcodec_parameters_to_context(d->cc, st->codecpar)) < 0) {
    fy_vdec_close(d);
    return fy_error(FERRY_ECORRUPT, "%s: bad codec parameters: %s", path,
                    av_reason(e, eb, sizeof eb));
  }
  d->strict = strict;
  d->cc->thread_count = strict ? 1 : threads > 0 ? threads : 0;
  d->cc->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  d->cc->pkt_timebase = st->time_base;
  if ((e = avcodec_open2(d->cc, codec, NULL)) < 0) {
    fy_vdec_close(d);
    return fy_error(FERRY_EUNSUPPORTED, "%s: cannot open the %s decoder: %s", path, codec->name,
                    av_reason(e, eb, sizeof eb));
  }
  fill_info(d, info);
  d->last_t = d->start - (d->fps > 0 ? 1 / d->fps : 0);
  d->first_damaged = -1;
  d->want_t = -INFINITY;
  d->read_t = -INFINITY;
  d->floor_t = -INFINITY;
  d->ahead_t = NAN;
  /* numbering from timestamps is exact for a constant rate: the average
   * equals the base rate, and every timestamp falls on that grid (checked
   * frame by frame in fy_vdec_next) */
  d->cfr = d->fps > 0 && st->avg_frame_rate.num && st->r_frame_rate.num &&
           !av_cmp_q(st->avg_frame_rate, st->r_frame_rate);
  d->grid_tol = 0.05 + d->tb * d->fps;
  *out = d;
  return FERRY_OK;
}

void fy_vdec_close(fy_vdec *d) {
  if (!d)
    return;
  sws_freeContext(d->sws);
  av_frame_free(&d->frame);
  av_packet_free(&d->pkt);
  avcodec_free_context(&d->cc);
  fy_av_close(&d->fmt);
  fy_buf_free(&d->rgb);
  free(d->path);
  free(d);
}

int fy_vdec_seek(fy_vdec *d, double t) {
  int64_t ts = (int64_t)floor(t / d->tb);
  int e = av_seek_frame(d->fmt, d->stream, ts, AVSEEK_FLAG_BACKWARD);
  if (e < 0) {
    char eb[128];
    return fy_error(FERRY_ECORRUPT, "%s: cannot seek to %.3f s: %s", d->path, t,
                    av_reason(e, eb, sizeof eb));
  }
  avcodec_flush_buffers(d->cc);
  d->index_from_time = 1;
  d->sought = 1;
  d->read_t = -INFINITY;
  d->floor_t = -INFINITY;
  return FERRY_OK;
}

/* The frame number of time t on the constant-rate grid. */
static double grid_pos(const fy_vdec *d, double t) { return (t - d->start) * d->fps; }

/* Seeks to the keyframe at or before time t when it lies after every packet
 * read so far (the frames still inside the decoder all show before it, so
 * none of them is wanted): returns 1 when it did. */
static int seek_ahead(fy_vdec *d, double t) {
  AVStream *st = d->fmt->streams[d->stream];
  int64_t ts = (int64_t)floor(t / d->tb);
  const AVIndexEntry *e = avformat_index_get_entry_from_timestamp(st, ts, AVSEEK_FLAG_BACKWARD);
  if (!e || !(e->flags & AVINDEX_KEYFRAME))
    return 0;
  /* index timestamps are decode times: at most the reorder delay before the
   * keyframe's display time; ahead by more than a few frames to pay */
  double kt = e->timestamp * d->tb;
  double lead = (d->cc->has_b_frames + 4) / d->fps;
  if (d->no_ahead || kt <= d->read_t + lead || kt + lead > t)
    return 0;
  /* to t itself, not the entry's time: MP4's demuxer goes back to a
   * keyframe shown at or before the time asked for */
  if (av_seek_frame(d->fmt, d->stream, ts, AVSEEK_FLAG_BACKWARD) < 0)
    return 0;
  avcodec_flush_buffers(d->cc);
  d->flushing = 0;
  d->read_t = -INFINITY;
  d->timed = 1;
  d->seeks++;
  /* frames out must go on from the last one: should the seek land before
   * it, those frames are dropped, and no further jump is tried */
  d->floor_t = d->last_t;
  d->ahead_t = kt;
  return 1;
}

void fy_vdec_want(fy_vdec *d, double t) {
  if (!d->cfr || d->strict || d->flushing) {
    d->want_t = -INFINITY;
    return;
  }
  d->want_t = t;
  /* a keyframe between what was read and the next wanted frame: jump */
  if (isfinite(t) && t > d->read_t)
    seek_ahead(d, t);
}

void fy_vdec_sampler(fy_vdec *d, const fy_vsampler *s) { d->smp = s; }

static int walk_seek(void *p, double target, int64_t k) {
  fy_vdec *d = p;
  int e = av_seek_frame(d->fmt, d->stream, (int64_t)floor(target / d->tb), AVSEEK_FLAG_BACKWARD);
  if (e < 0) {
    char eb[128];
    return fy_error(FERRY_EUNSUPPORTED, "%s: cannot seek to frame %lld (%.3f s): %s", d->path,
                    (long long)k, d->start + k / d->fps, av_reason(e, eb, sizeof eb));
  }
  avcodec_flush_buffers(d->cc);
  d->flushing = 0;
  d->pending = 0;
  d->bad_run = 0;
  d->index_from_time = 1;
  d->sought = 1;
  d->read_t = -INFINITY;
  d->floor_t = -INFINITY;
  d->ahead_t = NAN;
  return FERRY_OK;
}

static int walk_next(void *p, double *t, int64_t *index) { return fy_vdec_next(p, t, index); }

static void walk_aim(void *p, double t) {
  fy_vdec *d = p;
  if (isfinite(t))
    d->timed = 1;
  d->want_t = d->strict ? -INFINITY : t;
}

static int64_t walk_read_end(void *p) { return ((fy_vdec *)p)->read_end; }

int fy_vdec_frame_at(fy_vdec *d, int64_t k, double *t) {
  d->smp = NULL; /* random access: the sampling options do not apply */
  if (!d->cfr)
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: random access needs a constant frame rate (frame numbers from "
                    "timestamps); this stream's rate varies: read it in order",
                    d->path);
  double tk = d->start + k / d->fps;
  /* in order from here when frame k is ahead and no keyframe closer to it
   * lies beyond what was read */
  int from_here = d->returned > 0 && d->next_index <= k && !d->pending && !d->flushing;
  if (from_here) {
    AVStream *st = d->fmt->streams[d->stream];
    const AVIndexEntry *e = avformat_index_get_entry_from_timestamp(st, (int64_t)floor(tk / d->tb),
                                                                    AVSEEK_FLAG_BACKWARD);
    from_here = e && e->timestamp * d->tb <= d->read_t;
  }
  fy_vwalk w = {d->path,   d,         d->start, d->fps,       from_here,
                walk_seek, walk_next, walk_aim, walk_read_end};
  return fy_video_walk_to(&w, k, t);
}

void fy_vdec_damage(const fy_vdec *d, uint64_t *frames, int64_t *first, double *first_t) {
  *frames = d->damaged;
  *first = d->first_damaged;
  *first_t = d->first_damaged < 0 ? 0 : d->first_damaged_t;
}

static void note_damage(fy_vdec *d, int64_t index, double t) {
  if (!d->damaged++) {
    d->first_damaged = index;
    d->first_damaged_t = t;
  }
}

/* Records the first read or decode error; it is reported once every frame
 * that still decodes has been returned. */
static void note_error(fy_vdec *d, const char *what, int e) {
  if (!d->pending) {
    char eb[128];
    d->pending = FERRY_ECORRUPT;
    snprintf(d->pending_msg, sizeof d->pending_msg, "%s at %.3f s: %s", what, d->last_t,
             av_reason(e, eb, sizeof eb));
  }
}

static void finish_input(fy_vdec *d) {
  avcodec_send_packet(d->cc, NULL);
  d->flushing = 1;
}

/* Sends the next packet of our stream (or the end) to the decoder. A read
 * error ends the input (a truncated file); a packet the decoder refuses is
 * skipped (damaged data), up to MAX_BAD_PACKETS in a row. */
#define MAX_BAD_PACKETS 64
static void feed(fy_vdec *d) {
  for (;;) {
    int e = av_read_frame(d->fmt, d->pkt);
    if (e < 0) {
      if (e != AVERROR_EOF)
        note_error(d, "read error", e);
      finish_input(d);
      return;
    }
    if (d->pkt->stream_index != d->stream) {
      av_packet_unref(d->pkt);
      continue;
    }
    /* decided by the packet's display time: a frame shown before the next
     * wanted one (by at least half a frame) is not decoded when it is not a
     * reference */
    int64_t pts = d->pkt->pts;
    double pt = pts != AV_NOPTS_VALUE ? pts * d->tb : NAN;
    int skip =
        pts != AV_NOPTS_VALUE &&
        (pt < d->want_t - 0.5 / d->fps ||
         (d->smp && d->cfr && !d->strict && !fy_vsample_wanted(d->smp, pt, d->fps, d->start)));
    d->cc->skip_frame = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
    if (skip) {
      d->timed = 1;
      d->skipped++;
    }
    if (pts != AV_NOPTS_VALUE && isfinite(d->ahead_t)) {
      if (pt + (d->cc->has_b_frames + 4) / d->fps < d->ahead_t)
        d->no_ahead = 1;
      d->ahead_t = NAN;
    }
    if (pts != AV_NOPTS_VALUE && pt > d->read_t)
      d->read_t = pt;
    if (pts != AV_NOPTS_VALUE && d->fps > 0) {
      int64_t end = llround(grid_pos(d, pt)) + 1;
      if (end > d->read_end)
        d->read_end = end;
    }
    e = avcodec_send_packet(d->cc, d->pkt);
    av_packet_unref(d->pkt);
    if (e < 0 && e != AVERROR(EAGAIN)) {
      note_error(d, "decode error", e);
      note_damage(d, d->next_index, d->last_t);
      if (++d->bad_run >= MAX_BAD_PACKETS)
        finish_input(d);
      continue;
    }
    d->bad_run = 0;
    return;
  }
}

int fy_vdec_next(fy_vdec *d, double *t, int64_t *index) {
  double ft;
  for (;;) {
    int e = avcodec_receive_frame(d->cc, d->frame);
    if (e == 0) {
      int64_t pts = d->frame->best_effort_timestamp;
      ft = pts != AV_NOPTS_VALUE ? pts * d->tb : d->last_t + (d->fps > 0 ? 1 / d->fps : 0);
      if (ft > d->floor_t + 1e-9)
        break;
      av_frame_unref(d->frame); /* shown already (a seek ahead landed early) */
      continue;
    }
    if (e == AVERROR(EAGAIN) && !d->flushing) {
      feed(d);
      continue;
    }
    if (e != AVERROR_EOF && e != AVERROR(EAGAIN)) {
      /* a frame that failed (frame threads report errors here): note it,
       * go on with the next ones */
      note_error(d, "decode error", e);
      note_damage(d, d->next_index, d->last_t);
      if (++d->bad_frames <= 4 * MAX_BAD_PACKETS)
        continue;
      return fy_error(FERRY_ECORRUPT, "%s: truncated or damaged: %s (%lld frames decoded)", d->path,
                      d->pending_msg, (long long)d->returned);
    }
    fy_vprogress p = {d->sought, d->declared, d->returned, d->duration,
                      d->fps,    d->last_t,   d->start};
    if (d->timed) {
      /* frames were skipped: what was read counts, not what came out */
      if (d->read_end > p.returned)
        p.returned = d->read_end;
      if (d->read_t > p.last_t)
        p.last_t = d->read_t;
    }
    return fy_video_end(d->path, &p, d->pending, d->pending_msg);
  }
  if (d->cfr) {
    /* a timestamp off the constant-rate grid, or a count that disagrees
     * with the timestamps: frames are not numbered from timestamps, and none
     * is skipped from here on */
    double pos = grid_pos(d, ft);
    if (fabs(pos - llround(pos)) > d->grid_tol ||
        (!d->timed && !d->index_from_time && llround(pos) != d->next_index)) {
      d->cfr = 0;
      d->want_t = -INFINITY;
    }
  }
  if (d->index_from_time || (d->timed && d->cfr)) {
    d->next_index = d->fps > 0 ? llround(grid_pos(d, ft)) : 0;
    d->index_from_time = 0;
  }
  *t = d->last_t = ft;
  *index = d->next_index++;
  /* errors the decoder concealed (damaged data): counted, or in strict
   * mode the end */
  if (d->frame->decode_error_flags || (d->frame->flags & AV_FRAME_FLAG_CORRUPT)) {
    note_damage(d, *index, ft);
    if (d->strict)
      return fy_error(FERRY_ECORRUPT,
                      "%s: frame %lld (%.3f s) decoded with errors (damaged data the decoder "
                      "concealed); strict decoding stops here",
                      d->path, (long long)*index, ft);
  }
  d->returned++;
  return FERRY_OK;
}

static int is_rgb(enum AVPixelFormat f) {
  const AVPixFmtDescriptor *pd = av_pix_fmt_desc_get(f);
  return pd && (pd->flags & AV_PIX_FMT_FLAG_RGB);
}

int fy_vdec_rgb(fy_vdec *d, const uint8_t **px, int *w, int *h, size_t *stride) {
  AVFrame *f = d->frame;
  size_t row = (size_t)f->width * 3;
  size_t bytes;
  if (f->width <= 0 || f->height <= 0 || !fy_mul_size(row, (size_t)f->height, &bytes))
    return fy_error(FERRY_ECORRUPT, "%s: frame of size %dx%d", d->path, f->width, f->height);
  if (fy_buf_reserve(&d->rgb, bytes) != FERRY_OK)
    return fy_error(FERRY_ENOMEM, "%s: out of memory for a %dx%d frame", d->path, f->width,
                    f->height);
  /* bicubic as ffmpeg's command line uses: for 8-bit 4:2:0 and the
   * fixtures' 10-bit, the pixels equal `ffmpeg -pix_fmt rgb24`'s */
  d->sws = sws_getCachedContext(d->sws, f->width, f->height, f->format, f->width, f->height,
                                AV_PIX_FMT_RGB24, SWS_BICUBIC, NULL, NULL, NULL);
  if (!d->sws)
    return fy_error(FERRY_EUNSUPPORTED, "%s: cannot convert pixel format %s to RGB", d->path,
                    av_get_pix_fmt_name(f->format));
  if (!is_rgb(f->format)) {
    /* colour matrix and range from the stream; unspecified: BT.709 for HD,
     * BT.601 below 720 lines (what players assume) */
    int cs = f->colorspace;
    if (cs == AVCOL_SPC_UNSPECIFIED || cs == AVCOL_SPC_RESERVED)
      cs = f->height >= 720 ? AVCOL_SPC_BT709 : AVCOL_SPC_BT470BG;
    int full = f->color_range == AVCOL_RANGE_JPEG || f->format == AV_PIX_FMT_YUVJ420P ||
               f->format == AV_PIX_FMT_YUVJ422P || f->format == AV_PIX_FMT_YUVJ444P;
    const int *coef = sws_getCoefficients(cs);
    sws_setColorspaceDetails(d->sws, coef, full, coef, 1, 0, 1 << 16, 1 << 16);
  }
  uint8_t *dst[4] = {d->rgb.p, NULL, NULL, NULL};
  int dst_stride[4] = {(int)row, 0, 0, 0};
  sws_scale(d->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst, dst_stride);
  *px = d->rgb.p;
  *w = f->width;
  *h = f->height;
  *stride = row;
  return FERRY_OK;
}

#else
typedef int fy_video_av_unused; /* ISO C: no empty translation unit */
#endif
