/* nvdec_seek.c — random access and sampling on the NVDEC decoder: frame k
 * by a seek to the keyframe before it (demuxer, bitstream filter and a new
 * parser; the decoder stays) and decoding forward with the non-reference
 * pictures before it skipped; the time before which frames are not wanted,
 * and the sampler whose frames nvdec_input.c may skip. */
#include "video/nvdec_int.h"

#ifdef FY_NVDEC

/* Back to the keyframe at or before time t: the demuxer, the bitstream
 * filter and a new parser start from there; pictures queued are dropped. */
static int seek_to(fy_nvdec *d, double t, int64_t k) {
  if (d->mapped)
    fy_nvdec_unmap(d);
  fy_nvdec_close_cur(d);
  fy_nvdec_settle(d, 1);
  int e = av_seek_frame(d->fmt, d->stream, (int64_t)floor(t / av_q2d(d->tb)), AVSEEK_FLAG_BACKWARD);
  if (e < 0) {
    char eb[128];
    av_strerror(e, eb, sizeof eb);
    return fy_error(FERRY_EUNSUPPORTED, "%s: cannot seek to frame %lld (%.3f s): %s", d->path,
                    (long long)k, t, eb);
  }
  if (d->bsf)
    av_bsf_flush(d->bsf);
  int st = fy_nvdec_make_parser(d);
  if (st != FERRY_OK)
    return st;
  d->qn = d->qhead = 0;
  memset(d->skip, 0, sizeof d->skip);
  d->input_done = d->eos_sent = 0;
  d->pending = 0;
  d->index_from_time = d->sought = 1;
  d->read_t = d->floor_t = -INFINITY;
  d->ahead_t = NAN;
  return FERRY_OK;
}

static int walk_seek(void *p, double target, int64_t k) { return seek_to(p, target, k); }
static int walk_next(void *p, double *t, int64_t *index) { return fy_nvdec_next(p, t, index); }

static void walk_aim(void *p, double t) {
  fy_nvdec *d = p;
  if (isfinite(t))
    d->timed = 1;
  d->want_t = d->strict ? -INFINITY : t;
}

static int64_t walk_read_end(void *p) { return ((fy_nvdec *)p)->read_end; }

int fy_nvdec_frame_at(fy_nvdec *d, int64_t k, double *t) {
  if (!d->cfr)
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: random access needs a constant frame rate (frame numbers from "
                    "timestamps); this stream's rate varies: read it in order",
                    d->path);
  if (d->fatal)
    return fy_error(d->fatal, "%s", d->fatal_msg);
  d->smp = NULL; /* random access: the sampling options do not apply */
  double tk = d->start + k / d->fps;
  /* on from here when frame k is ahead and no keyframe closer to it lies
   * beyond what was read */
  int from_here = d->returned > 0 && d->next_index <= k && !d->pending && !d->eos_sent;
  if (from_here) {
    AVStream *st = d->fmt->streams[d->stream];
    const AVIndexEntry *e = avformat_index_get_entry_from_timestamp(
        st, (int64_t)floor(tk / av_q2d(d->tb)), AVSEEK_FLAG_BACKWARD);
    from_here = e && e->timestamp * av_q2d(d->tb) <= d->read_t;
  }
  fy_vwalk w = {d->path,   d,         d->start, d->fps,       from_here,
                walk_seek, walk_next, walk_aim, walk_read_end};
  return fy_video_walk_to(&w, k, t);
}

void fy_nvdec_want(fy_nvdec *d, double t) {
  d->want_t = d->cfr && !d->strict && !d->eos_sent ? t : -INFINITY;
  if (!isfinite(d->want_t) || t <= d->read_t || d->no_ahead || d->fps <= 0)
    return;
  /* a keyframe between what was read and the next wanted frame (by more
   * than the reordering can hide): jump there, as decode_av.c does; every
   * frame queued or in the parser shows before t, so none is wanted */
  AVStream *st = d->fmt->streams[d->stream];
  double tb = av_q2d(d->tb), lead = LEAD_FRAMES / d->fps;
  const AVIndexEntry *e =
      avformat_index_get_entry_from_timestamp(st, (int64_t)floor(t / tb), AVSEEK_FLAG_BACKWARD);
  if (!e || !(e->flags & AVINDEX_KEYFRAME))
    return;
  double kt = e->timestamp * tb;
  if (kt <= d->read_t + lead || kt + lead > t)
    return;
  double last = d->last_t;
  int64_t sought = d->sought, next = d->next_index;
  if (seek_to(d, t, -1) != FERRY_OK) { /* the stream cannot seek: decode on */
    d->no_ahead = 1;
    return;
  }
  d->sought = sought; /* a jump, not a seek the caller asked for */
  d->index_from_time = 0;
  d->next_index = next;
  d->timed = 1;
  d->floor_t = last;
  d->ahead_t = kt;
  d->jumps++;
}

uint64_t fy_nvdec_skipped(const fy_nvdec *d) { return d->skipped; }

void fy_nvdec_sampler(fy_nvdec *d, const fy_vsampler *s) { d->smp = s; }

#endif
