/* describe.c — a video as `ferry info` describes it: the stream's info
 * (fy_av_info), its chroma subsampling, and whether NVDEC would take it,
 * said from the stream alone (no GPU needed): the codecs and 4:2:0 depths
 * ferry asks NVDEC for (as nvdec_probe.c lists them); a GPU's own size
 * limits are `ferry video --nvdec-caps`'s. A file whose index lists frames
 * past its end is refused as cut off. */
#include "video/video.h"

#include <stdio.h>
#include <string.h>

#ifdef FERRY_HAVE_AV
#include "video/av_int.h"

#include <libavutil/pixdesc.h>

/* The codecs NVDEC decodes for ferry and their 4:2:0 depths. */
static const struct {
  enum AVCodecID id;
  const char *name;
  int max_depth;
} nvdec_codecs[] = {{AV_CODEC_ID_H264, "H.264", 8},
                    {AV_CODEC_ID_HEVC, "HEVC", 10},
                    {AV_CODEC_ID_VP9, "VP9", 10},
                    {AV_CODEC_ID_AV1, "AV1", 10}};

static void chroma_of(const AVPixFmtDescriptor *pd, char *out, size_t n) {
  if (!pd)
    snprintf(out, n, "unknown");
  else if (pd->flags & AV_PIX_FMT_FLAG_RGB)
    snprintf(out, n, "RGB");
  else if (pd->nb_components < 3)
    snprintf(out, n, "gray");
  else
    snprintf(out, n, "4:%d:%d", 4 >> pd->log2_chroma_w,
             pd->log2_chroma_h ? 0 : 4 >> pd->log2_chroma_w);
}

/* The one rule of the pixel formats NVDEC decodes for ferry: 4:2:0 YUV (nvdec.c's
 * check before decoding and `ferry info`'s verdict). */
int fy_nvdec_yuv420(const struct AVPixFmtDescriptor *pd) {
  return pd && pd->log2_chroma_w == 1 && pd->log2_chroma_h == 1 &&
         !(pd->flags & AV_PIX_FMT_FLAG_RGB) && pd->nb_components >= 3;
}

static void nvdec_rule(const AVCodecParameters *p, const AVPixFmtDescriptor *pd, int depth,
                       fy_video_desc *d) {
  const char *name = NULL;
  int max_depth = 0;
  for (size_t i = 0; i < sizeof nvdec_codecs / sizeof nvdec_codecs[0]; i++)
    if (nvdec_codecs[i].id == p->codec_id)
      name = nvdec_codecs[i].name, max_depth = nvdec_codecs[i].max_depth;
  d->nvdec = 0;
  if (!name)
    snprintf(d->nvdec_why, sizeof d->nvdec_why, "NVDEC does not decode %s video", d->info.codec);
  else if (!pd)
    snprintf(d->nvdec_why, sizeof d->nvdec_why, "%s, pixel format unknown until decoded", name);
  else if (!fy_nvdec_yuv420(pd))
    snprintf(d->nvdec_why, sizeof d->nvdec_why, "NVDEC decodes 4:2:0 YUV; this %s stream is %s",
             name, pd->name);
  else if (depth > max_depth)
    snprintf(d->nvdec_why, sizeof d->nvdec_why, "NVDEC decodes %s up to %d-bit; this is %d-bit",
             name, max_depth, depth);
  else {
    d->nvdec = 1;
    snprintf(d->nvdec_why, sizeof d->nvdec_why, "%s %d-bit 4:2:0", name, depth);
  }
}

/* A file cut off after its index (an MP4 whose moov box comes first): the
 * index lists frames whose data lies past the end. */
static int check_cut(const char *path, AVFormatContext *fmt, AVStream *st) {
  int64_t size = avio_size(fmt->pb), end = 0;
  int n = avformat_index_get_entries_count(st), whole = 0;
  for (int i = 0; i < n; i++) {
    const AVIndexEntry *e = avformat_index_get_entry(st, i);
    int64_t to = e->pos + e->size;
    end = to > end ? to : end;
    whole += to <= size;
  }
  if (st->nb_frames > n && n < 2 && size > 0)
    return fy_error(FERRY_ECORRUPT,
                    "%s: cut off: its header declares %lld frames, its index (the file ends at "
                    "byte %lld) lists %d",
                    path, (long long)st->nb_frames, (long long)size, n);
  if (size <= 0 || end <= size)
    return FERRY_OK;
  return fy_error(FERRY_ECORRUPT,
                  "%s: cut off: its index lists %d frames with data up to byte %lld, the file "
                  "ends at byte %lld (the data of %d of them)",
                  path, n, (long long)end, (long long)size, whole);
}

int fy_video_describe(const char *path, fy_video_desc *d) {
  memset(d, 0, sizeof *d);
  AVFormatContext *fmt = NULL;
  int stream;
  int st = fy_av_open(path, &fmt, &stream, NULL);
  if (st != FERRY_OK)
    return st;
  if ((st = check_cut(path, fmt, fmt->streams[stream])) != FERRY_OK) {
    fy_av_close(&fmt);
    return st;
  }
  const AVCodecParameters *p = fmt->streams[stream]->codecpar;
  fy_av_info(fmt, stream, &d->info);
  snprintf(d->container, sizeof d->container, "%s", fmt->iformat->name);
  const AVPixFmtDescriptor *pd = av_pix_fmt_desc_get(p->format);
  chroma_of(pd, d->chroma, sizeof d->chroma);
  nvdec_rule(p, pd, d->info.bit_depth, d);
  fy_av_close(&fmt);
  return FERRY_OK;
}

#else

int fy_video_describe(const char *path, fy_video_desc *d) {
  memset(d, 0, sizeof *d);
  return fy_error(FERRY_EUNSUPPORTED,
                  "%s: built without libavcodec (video needs libavformat, libavcodec, "
                  "libswscale)",
                  path);
}

#endif
