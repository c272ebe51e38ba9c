/* av_open.c — a user's file opened for libavformat, the one way both video
 * decoders (decode_av.c on the CPU, nvdec.c on the GPU) open one:
 *
 *  - the path is opened once, as a regular file (core/user_file.c: a FIFO,
 *    device, socket or folder refused at once, never waited on), and
 *    libavformat reads that fd through its own I/O context: no second open
 *    by name, so what was checked is what is read; the other files or URLs
 *    a demuxer may ask for (playlists, references) are refused;
 *  - a still image is refused (still.c);
 *  - each video stream's frame is held to the image decoders' pixel limit,
 *    and an animation's frames x canvas to FY_ANIM_WORK_* (video.h), before
 *    anything is decoded;
 *  - an MP4 that cannot be opened gets the reason mp4_why.c finds.
 *
 * Errors name the file. */
#include "video/video.h"

#ifdef FERRY_HAVE_AV

#include "core/user_file.h"
#include "video/av_int.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An fd read by position: each context over it keeps its own. */
typedef struct av_file {
  int fd, own; /* own: closed with the context */
  int64_t size, pos;
  AVIOContext *pb;
} av_file;

#define AV_IO_BUFFER (1 << 16)

static int file_read(void *opaque, uint8_t *buf, int n) {
  av_file *f = opaque;
  for (;;) {
    ssize_t got = pread(f->fd, buf, (size_t)n, (off_t)f->pos);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return AVERROR(errno);
    if (got == 0)
      return AVERROR_EOF;
    f->pos += got;
    return (int)got;
  }
}

static int64_t file_seek(void *opaque, int64_t off, int whence) {
  av_file *f = opaque;
  int64_t to;
  switch (whence & ~AVSEEK_FORCE) {
  case AVSEEK_SIZE: return f->size;
  case SEEK_SET: to = off; break;
  case SEEK_CUR: to = f->pos + off; break;
  case SEEK_END: to = f->size + off; break;
  default: return AVERROR(EINVAL);
  }
  if (to < 0)
    return AVERROR(EINVAL);
  return f->pos = to;
}

/* A demuxer asking for another file or URL (an HLS or DASH playlist's
 * segments, an MP4's external references): ferry reads the file it was
 * given, nothing it names. */
static int no_other_file(AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
                         AVDictionary **options) {
  (void)s, (void)pb, (void)url, (void)flags, (void)options;
  return AVERROR(EPERM);
}

static void file_free(av_file *f) {
  if (!f)
    return;
  if (f->pb) {
    av_freep(&f->pb->buffer);
    avio_context_free(&f->pb);
  }
  if (f->own && f->fd >= 0)
    close(f->fd);
  free(f);
}

/* A context over fd reading from its start, its header read: 0, or the
 * libavformat error (*fmt NULL). The fd stays the caller's: fy_av_close
 * closes it only once marked the context's own. */
static int open_ctx(const char *path, int fd, int64_t size, AVFormatContext **fmt) {
  *fmt = NULL;
  av_file *f = calloc(1, sizeof *f);
  uint8_t *buf = f ? av_malloc(AV_IO_BUFFER) : NULL;
  if (f)
    *f = (av_file){fd, 0, size, 0, NULL};
  if (!buf || !(f->pb = avio_alloc_context(buf, AV_IO_BUFFER, 0, f, file_read, NULL, file_seek)) ||
      !(*fmt = avformat_alloc_context())) {
    if (f && !f->pb)
      av_free(buf);
    file_free(f);
    return AVERROR(ENOMEM);
  }
  (*fmt)->pb = f->pb;
  (*fmt)->opaque = f;
  (*fmt)->io_open = no_other_file;
  int e = avformat_open_input(fmt, path, NULL, NULL); /* frees *fmt on failure */
  if (e < 0)
    file_free(f);
  return e;
}

void fy_av_close(AVFormatContext **fmt) {
  if (!*fmt)
    return;
  av_file *f = (*fmt)->opaque;
  avformat_close_input(fmt);
  file_free(f);
}

/* libav* log to stderr at "info" by default; ferry reports errors itself,
 * so their log is quieted, and let through at "info" while ferry's log
 * level is debug (ferry_set_log_level), as of the next file opened. Left
 * alone when the application set a level of its own. */
static void libav_level(void) {
  static atomic_int ours = -1; /* the level ferry set last; -1: none yet */
  int now = av_log_get_level(), want = fy_log_on(FERRY_LOG_DEBUG) ? AV_LOG_INFO : AV_LOG_FATAL;
  if (now != AV_LOG_INFO && now != atomic_load(&ours))
    return;
  if (now != want)
    av_log_set_level(want);
  atomic_store(&ours, want);
}

/* Image codecs that libavformat reads as videos: the decoder keeps a whole
 * canvas and returns it for each frame, whatever part the frame paints. */
static const char *animation_name(enum AVCodecID id) {
  switch (id) {
  case AV_CODEC_ID_GIF: return "GIF";
  case AV_CODEC_ID_APNG: return "APNG";
  case AV_CODEC_ID_WEBP: return "WebP";
  default: return NULL;
  }
}

/* Every video stream's frame within the image decoders' pixel limit. */
static int check_canvas(const char *path, const AVFormatContext *fmt) {
  for (unsigned i = 0; i < fmt->nb_streams; i++) {
    const AVCodecParameters *cp = fmt->streams[i]->codecpar;
    if (cp->codec_type != AVMEDIA_TYPE_VIDEO || cp->width <= 0 || cp->height <= 0)
      continue;
    if (fy_over_pixel_limit((uint64_t)cp->width, (uint64_t)cp->height, FERRY_DEFAULT_MAX_PIXELS)) {
      const char *anim = animation_name(cp->codec_id);
      char name[64];
      snprintf(name, sizeof name, "%s%s", anim ? anim : avcodec_get_name(cp->codec_id),
               anim ? "" : " video");
      return fy_pixel_limit_error(path, name, (uint64_t)cp->width, (uint64_t)cp->height,
                                  FERRY_DEFAULT_MAX_PIXELS);
    }
  }
  return FERRY_OK;
}

/* An animation's frames counted (demuxed, not decoded) on a context of its
 * own over the same fd, up to the work limit: refused past it. */
static int check_animation(const char *path, int fd, int64_t size, const AVFormatContext *fmt) {
  int stream = -1;
  for (unsigned i = 0; i < fmt->nb_streams && stream < 0; i++)
    if (animation_name(fmt->streams[i]->codecpar->codec_id))
      stream = (int)i;
  if (stream < 0)
    return FERRY_OK;
  const AVCodecParameters *cp = fmt->streams[stream]->codecpar;
  uint64_t canvas = (uint64_t)(cp->width > 0 ? cp->width : 0) * (cp->height > 0 ? cp->height : 0);
  uint64_t limit = FY_ANIM_WORK_FLOOR + FY_ANIM_WORK_PER_BYTE * (uint64_t)size;
  if (!canvas)
    return FERRY_OK; /* the decoder finds the size: held to the limit then */
  AVFormatContext *count_fmt;
  if (open_ctx(path, fd, size, &count_fmt) < 0)
    return FERRY_OK; /* the main context's reads meet what failed here */
  AVPacket *pkt = av_packet_alloc();
  uint64_t frames = 0;
  int over = 0;
  while (pkt && !over && av_read_frame(count_fmt, pkt) >= 0) {
    frames += pkt->stream_index == stream;
    over = frames * canvas > limit;
    av_packet_unref(pkt);
  }
  av_packet_free(&pkt);
  fy_av_close(&count_fmt);
  if (!over)
    return FERRY_OK;
  return fy_error(FERRY_ETOO_LARGE,
                  "%s: a %s animation of at least %llu frame%s of %dx%d: %llu pixels to decode, "
                  "over the limit of %llu for a file of %lld bytes (%llu + %llu a byte); refused "
                  "before decoding any",
                  path, animation_name(cp->codec_id), (unsigned long long)frames,
                  frames == 1 ? "" : "s", cp->width, cp->height,
                  (unsigned long long)(frames * canvas), (unsigned long long)limit, (long long)size,
                  FY_ANIM_WORK_FLOOR, FY_ANIM_WORK_PER_BYTE);
}

int fy_av_has_demuxer(const char *name) { return av_find_input_format(name) != NULL; }

/* The animation format the file's first bytes say (still.c's probe: GIF,
 * APNG or animated WebP) as libavformat names its demuxer, or NULL. */
static const char *animation_demuxer(int fd, const char **kind) {
  uint8_t h[4096];
  ssize_t n = pread(fd, h, sizeof h, 0);
  ferry_format f = FERRY_FORMAT_UNKNOWN;
  if (n <= 0 || fy_video_still_head(h, (size_t)n, &f))
    return NULL;
  return f == FERRY_FORMAT_GIF    ? (*kind = "a GIF", "gif")
         : f == FERRY_FORMAT_PNG  ? (*kind = "an animated PNG", "apng")
         : f == FERRY_FORMAT_WEBP ? (*kind = "an animated WebP", "webp_pipe")
                                  : NULL;
}

/* The reason libavformat's error e means for this file. */
static int open_error(const char *path, int fd, int64_t size, int e) {
  char eb[128], why[400];
  av_strerror(e, eb, sizeof eb);
  const char *kind = NULL, *demuxer = animation_demuxer(fd, &kind);
  if (demuxer && !fy_av_has_demuxer(demuxer))
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: %s, and this build's FFmpeg reads no such animation (a minimal FFmpeg, "
                    "as the wheel's: its videos are MP4, MKV/WebM, raw H.264/HEVC and IVF)",
                    path, kind);
  if (e == AVERROR(ENOMEM))
    return fy_error(FERRY_ENOMEM, "%s: out of memory opening the video", path);
  if (e == AVERROR(EIO) || e == AVERROR(EACCES))
    return fy_error(FERRY_EIO, "%s: cannot read: %s", path, eb);
  if (!fy_mp4_why(fd, size, why, sizeof why))
    snprintf(why, sizeof why, "not a video file, or damaged");
  return fy_error(FERRY_ECORRUPT, "%s: cannot open video: %s (%s)", path, eb, why);
}

int fy_av_open(const char *path, AVFormatContext **fmt, int *stream, const AVCodec **codec) {
  libav_level();
  *fmt = NULL;
  char eb[128];
  struct stat st;
  int fd;
  int rc = fy_open_regular(path, &st, &fd);
  if (rc != FERRY_OK)
    return rc;
  if ((rc = fy_video_refuse_still(path, fd)) != FERRY_OK) {
    close(fd);
    return rc;
  }
  int64_t size = (int64_t)st.st_size;
  int e = open_ctx(path, fd, size, fmt);
  if (e < 0) {
    rc = open_error(path, fd, size, e);
    close(fd);
    return rc;
  }
  ((av_file *)(*fmt)->opaque)->own = 1; /* closed with the context from here */
  /* before avformat_find_stream_info, which decodes frames */
  if ((rc = check_canvas(path, *fmt)) != FERRY_OK ||
      (rc = check_animation(path, fd, size, *fmt)) != FERRY_OK) {
    fy_av_close(fmt);
    return rc;
  }
  if ((e = avformat_find_stream_info(*fmt, NULL)) < 0) {
    fy_av_close(fmt);
    return fy_error(FERRY_ECORRUPT, "%s: cannot read the streams: %s", path,
                    (av_strerror(e, eb, sizeof eb), eb));
  }
  if ((rc = check_canvas(path, *fmt)) != FERRY_OK) { /* sizes found by decoding */
    fy_av_close(fmt);
    return rc;
  }
  *stream = av_find_best_stream(*fmt, AVMEDIA_TYPE_VIDEO, -1, -1, codec, 0);
  if (*stream == AVERROR_STREAM_NOT_FOUND) {
    fy_av_close(fmt);
    return fy_error(FERRY_EUNSUPPORTED, "%s: no video stream", path);
  }
  if (*stream < 0 || (codec && !*codec)) {
    const char *name =
        *stream < 0 ? "?" : avcodec_get_name((*fmt)->streams[*stream]->codecpar->codec_id);
    fy_av_close(fmt);
    return fy_error(FERRY_EUNSUPPORTED, "%s: no decoder for video codec %s in this libavcodec",
                    path, name);
  }
  const AVCodecParameters *cp = (*fmt)->streams[*stream]->codecpar;
  if (cp->width <= 0 || cp->height <= 0) {
    /* libavcodec could not decode a first frame (an animated WebP, whose
     * animation chunks libavcodec 5.1 skips: "image data not found"): no
     * frame would come, and 0 frames is not a success */
    const char *name = avcodec_get_name(cp->codec_id);
    fy_av_close(fmt);
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: %s video of frame size unknown: this libavcodec could not decode a "
                    "frame of it%s",
                    path, name,
                    !strcmp(name, "webp") ? " (an animated WebP: not decoded by this libavcodec)"
                                          : "");
  }
  for (unsigned i = 0; i < (*fmt)->nb_streams; i++)
    (*fmt)->streams[i]->discard = (int)i == *stream ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
  return FERRY_OK;
}

#else
typedef int fy_video_av_open_unused; /* ISO C: no empty translation unit */
#endif
