/* nvdec_input.c — the NVDEC decoder's input: libavformat's packets of the
 * stream (through the Annex-B bitstream filter for MP4/MKV H.264/HEVC)
 * given to NVIDIA's parser one picture at a time; each packet's time
 * decides whether sampling skips its picture (nvdec.c's decode callback),
 * and read errors are kept to report once the frames before them are out. */
#include "video/nvdec_int.h"

#ifdef FY_NVDEC

static void note_error(fy_nvdec *d, const char *what, int e) {
  if (!d->pending) {
    char eb[128];
    av_strerror(e, eb, sizeof eb);
    d->pending = FERRY_ECORRUPT;
    snprintf(d->pending_msg, sizeof d->pending_msg, "%s at %.3f s: %s", what, d->last_t, eb);
  }
}

static void parse(fy_nvdec *d, const uint8_t *data, int size, int64_t pts, int eos) {
  CUVIDSOURCEDATAPACKET p;
  memset(&p, 0, sizeof p);
  p.payload = data;
  p.payload_size = (tcu_ulong)size;
  if (eos) {
    p.flags |= CUVID_PKT_ENDOFSTREAM;
    d->eos_sent = 1;
  } else if (pts != AV_NOPTS_VALUE) {
    p.flags |= CUVID_PKT_TIMESTAMP;
    p.timestamp = av_rescale_q(pts, d->tb, (AVRational){1, (int)CLOCK});
  } else {
    d->missing_pts = 1;
  }
  /* libavformat's packets are whole pictures: the parser decodes each one
   * while its packet is parsed (which sampling relies on) */
  if (!eos)
    p.flags |= CUVID_PKT_ENDOFPICTURE;
  d->pkt_skip = 0;
  if (!eos && pts != AV_NOPTS_VALUE) {
    double pt = pts * av_q2d(d->tb);
    d->pkt_t = pt;
    if (isfinite(d->ahead_t)) { /* the first packet after a jump ahead */
      if (pt + LEAD_FRAMES / d->fps < d->ahead_t)
        d->no_ahead = 1; /* it landed early: no more jumps */
      d->ahead_t = NAN;
    }
    d->pkt_skip =
        d->fps > 0 &&
        (pt < d->want_t - 0.5 / d->fps ||
         (d->smp && d->cfr && !d->strict && !fy_vsample_wanted(d->smp, pt, d->fps, d->start)));
    if (pt > d->read_t)
      d->read_t = pt;
    if (d->fps > 0) {
      int64_t end = llround((pt - d->start) * d->fps) + 1;
      if (end > d->read_end)
        d->read_end = end;
    }
  }
  CUresult r = fy_cv->cuvidParseVideoData(d->parser, &p);
  if (r != CUDA_SUCCESS && !d->fatal && !d->pending) {
    d->pending = FERRY_ECORRUPT;
    snprintf(d->pending_msg, sizeof d->pending_msg, "bitstream error at %.3f s (parser status %d)",
             d->last_t, (int)r);
  }
}

/* Gives the parser the next packet of the stream (or its end). */
void fy_nvdec_feed(fy_nvdec *d) {
  for (;;) {
    if (!d->bsf) {
      if (d->input_done) {
        parse(d, NULL, 0, AV_NOPTS_VALUE, 1);
        return;
      }
    } else {
      int e = av_bsf_receive_packet(d->bsf, d->pkt);
      if (e == 0) {
        parse(d, d->pkt->data, d->pkt->size, d->pkt->pts, 0);
        av_packet_unref(d->pkt);
        return;
      }
      if (e == AVERROR_EOF) {
        parse(d, NULL, 0, AV_NOPTS_VALUE, 1);
        return;
      }
      if (e != AVERROR(EAGAIN)) {
        note_error(d, "bitstream filter error", e);
        parse(d, NULL, 0, AV_NOPTS_VALUE, 1);
        return;
      }
      if (d->input_done) { /* flush the filter */
        av_bsf_send_packet(d->bsf, NULL);
        continue;
      }
    }
    int e = av_read_frame(d->fmt, d->pkt);
    if (e < 0) {
      if (e != AVERROR_EOF)
        note_error(d, "read error", e);
      d->input_done = 1;
      continue;
    }
    if (d->pkt->stream_index != d->stream) {
      av_packet_unref(d->pkt);
      continue;
    }
    if (!d->bsf) {
      parse(d, d->pkt->data, d->pkt->size, d->pkt->pts, 0);
      av_packet_unref(d->pkt);
      return;
    }
    if ((e = av_bsf_send_packet(d->bsf, d->pkt)) < 0) {
      av_packet_unref(d->pkt);
      note_error(d, "bitstream filter error", e);
    }
  }
}

/* ----------------------------------------------------------------- open */

int fy_nvdec_open_bsf(fy_nvdec *d, const AVStream *st) {
  const char *name = NULL;
  if (st->codecpar->codec_id == AV_CODEC_ID_H264)
    name = "h264_mp4toannexb";
  else if (st->codecpar->codec_id == AV_CODEC_ID_HEVC)
    name = "hevc_mp4toannexb";
  if (!name)
    return FERRY_OK;
  const AVBitStreamFilter *f = av_bsf_get_by_name(name);
  if (!f)
    return fy_error(FERRY_EUNSUPPORTED, "%s: this libavcodec lacks the %s bitstream filter",
                    d->path, name);
  int e = av_bsf_alloc(f, &d->bsf);
  if (e >= 0)
    e = avcodec_parameters_copy(d->bsf->par_in, st->codecpar);
  if (e >= 0) {
    d->bsf->time_base_in = st->time_base;
    e = av_bsf_init(d->bsf);
  }
  if (e < 0) {
    char eb[128];
    av_strerror(e, eb, sizeof eb);
    return fy_error(FERRY_ECORRUPT, "%s: cannot set up %s: %s", d->path, name, eb);
  }
  return FERRY_OK;
}

#endif
