/* video.h — internals of the video reader (src/video).
 *
 * reader.c (public ferry_video_* calls: sampling, resize, rotation, store,
 * batches) sits on a small decoder interface, fy_vdec: decode_av.c
 * implements it with libavformat + libavcodec + libswscale, decode_stub.c
 * answers "built without libavcodec" when those were not found. */
#ifndef FY_VIDEO_H
#define FY_VIDEO_H

#include "core/internal.h"
#include "cuda/gpu.h"

typedef struct fy_vdec fy_vdec;

/* ------------------------------------- a user's file as a video (still.c) */

/* 1 when the first n bytes of a file are a still image ferry's image probe
 * knows, 0 for anything else: an animation (GIF, APNG, animated WebP, an
 * image-sequence HEIF), a video, or bytes the probe does not know. *format:
 * the probe's format (an animation's too), FERRY_FORMAT_UNKNOWN untouched
 * when it knows none. */
int fy_video_still_head(const uint8_t *head, size_t n, ferry_format *format);
/* FERRY_OK unless the open file fd of `path` is a still image: then
 * FERRY_EUNSUPPORTED, "PATH: a still image (JPEG), not a video; use `ferry
 * decode` ...". Every reader's open calls it (one rule for the command and
 * Python). */
int fy_video_refuse_still(const char *path, int fd);
/* The same for a path (opened as a regular file): 1 with the message
 * recorded for a still image; 0 otherwise, also when it cannot be opened as
 * a regular file (the reader's open names it then). `ferry video` asks it
 * of every file before decoding any. */
int fy_video_is_still(const char *path);

/* 1 when this build's libavformat has the demuxer `name` ("gif"; the
 * minimal FFmpeg of the wheel has none for animations); 0 without video. */
int fy_av_has_demuxer(const char *name);

/* Why an MP4/QuickTime file libavformat refused cannot be read, true of
 * this file (mp4_why.c): 1 with the reason in why[n] ("an MP4 without its
 * index: the file is cut off ...", "an MP4 whose index (the moov box) is
 * damaged: the stsz box ... of track 1 lists 1000 samples in room for 50"),
 * 0 when fd is not an MP4 (no ftyp box first). */
int fy_mp4_why(int fd, int64_t file_size, char *why, size_t n);

/* The work an animation may cost (av_open.c): GIF, APNG and WebP streams
 * (a canvas the decoder keeps and returns whole for each frame, however
 * small the part a frame paints) are counted before anything is decoded,
 * and refused (FERRY_ETOO_LARGE) when frames x canvas pixels is over
 * FY_ANIM_WORK_FLOOR + FY_ANIM_WORK_PER_BYTE x the file's size. Frames that
 * each cover their canvas stay far below it: LZW codes at most about 2,700
 * pixels a byte, deflate about 1,000 bytes a byte. Every video's frame
 * (canvas) is also held to the image decoders' FERRY_DEFAULT_MAX_PIXELS. */
#define FY_ANIM_WORK_FLOOR (1ull << 25)
#define FY_ANIM_WORK_PER_BYTE 4096ull

/* Opens the best video stream of `path` with `threads` decoder threads
 * (0 = libavcodec's choice) and fills *info. strict: a frame the decoder
 * flags as damaged ends decoding with FERRY_ECORRUPT, and one thread
 * decodes (with frame threads libavcodec flags only part of them). Errors
 * name the file. */
int fy_vdec_open(const char *path, int threads, int strict, fy_vdec **out, ferry_video_info *info);
/* Frames flagged as damaged or failed so far, the first one's number and
 * time (-1, 0 when none). */
void fy_vdec_damage(const fy_vdec *d, uint64_t *frames, int64_t *first, double *first_t);
void fy_vdec_close(fy_vdec *d);

/* Seeks to the last keyframe at or before time t (seconds, stream time).
 * Frame numbers after a seek are estimated from timestamps and the frame
 * rate (exact for constant-rate video). */
int fy_vdec_seek(fy_vdec *d, double t);

/* Frames shown before time t are not wanted (t = -INFINITY: all are): the
 * ones no other frame references are not decoded, and when a keyframe lies
 * between what was read and t, the decoder jumps there. Frames that come
 * out decode exactly as without it. Only for constant-rate streams (frames
 * numbered from timestamps; then every frame is, from the first skip on)
 * and not in strict mode; otherwise it does nothing. */
void fy_vdec_want(fy_vdec *d, double t);
/* Frames fy_vsample_wanted rules out for sampler s (the reader's, which
 * outlives the decoder; NULL: none) are skipped as fy_vdec_want's are,
 * under the same conditions: in between keyframe jumps, stride 2 saves the
 * non-reference frames at odd positions. */
struct fy_vsampler;
void fy_vdec_sampler(fy_vdec *d, const struct fy_vsampler *s);

/* Random access: frame k (presentation order from 0, numbered from
 * timestamps) becomes the current frame, *t its time. Seeks to the keyframe
 * at or before it (further back when the seek lands after it) unless
 * decoding on from here is no longer, skipping non-reference frames before
 * it. FERRY_EINVAL past the last frame, FERRY_EUNSUPPORTED for a stream
 * that cannot seek or has no constant frame rate; errors name the file. */
int fy_vdec_frame_at(fy_vdec *d, int64_t k, double *t);

/* Decodes the next frame in presentation order: *t its timestamp in
 * seconds (ffprobe's pts_time), *index its frame number. FERRY_OK,
 * FERRY_END after the last frame, or an error naming the file once the
 * frames before damage have all been returned. The frame stays current
 * until the next call. */
int fy_vdec_next(fy_vdec *d, double *t, int64_t *index);

/* The current frame as 8-bit RGB, stored orientation: pixels owned by the
 * decoder, valid until the next call. */
int fy_vdec_rgb(fy_vdec *d, const uint8_t **px, int *w, int *h, size_t *stride);

/* Frame sampling: time range, then every Nth frame or a fixed rate. */
typedef struct fy_vsampler {
  int stride;                      /* >= 1 */
  double rate;                     /* frames per second kept; 0 = off */
  double start, end;               /* [start, end); end <= 0: no end */
  int64_t in_range;                /* frames seen inside the range */
  int64_t first_index, last_index; /* fy_vsample_index: frame numbers */
  int have_first;
  double first_t, next_t;
} fy_vsampler;

void fy_vsampler_init(fy_vsampler *s, int stride, double rate, double start, double end);
/* 1: keep the frame at time t; 0: drop it; -1: past the range (stop). */
int fy_vsample(fy_vsampler *s, double t);
/* The same, counting stride from frame numbers (index - the range's first
 * frame number) rather than frames seen: equal when none are skipped. */
int fy_vsample_index(fy_vsampler *s, double t, int64_t index);
/* The earliest time the next kept frame can have, given the frame rate and
 * the first timestamp (frame k at t0 + k / fps); -INFINITY: any frame may be
 * kept next. */
double fy_vsample_next(const fy_vsampler *s, double fps, double t0);
/* Whether the frame shown at time t, one the sampler has not seen yet (a
 * packet read ahead), can be kept: 0 only when it certainly will not be
 * (constant frame rate fps, frame k at t0 + k / fps). The decoders skip
 * non-reference frames it rules out. */
int fy_vsample_wanted(const fy_vsampler *s, double t, double fps, double t0);

/* Random access, the same walk for both decoders: to the keyframe at or
 * before frame k (unless from_here: k is ahead and no keyframe closer to
 * it lies beyond what was read), then frames in order until frame k, from
 * further back when the seek lands after it. */
typedef struct fy_vwalk {
  const char *path;
  void *dec;
  double start, fps; /* frame k at start + k / fps */
  int from_here;
  int (*seek)(void *dec, double t, int64_t k); /* errors name the file */
  int (*next)(void *dec, double *t, int64_t *index);
  void (*aim)(void *dec, double t); /* frames before t not wanted; -INFINITY: done */
  int64_t (*read_end)(void *dec);   /* 1 + the last frame number read */
} fy_vwalk;
int fy_video_walk_to(const fy_vwalk *w, int64_t k, double *t);

/* Where a decoder stands when its input ends. */
typedef struct fy_vprogress {
  int sought;                 /* a seek happened: no promise to check */
  int64_t declared, returned; /* frames the container declares / returned */
  double duration, fps, last_t, start;
} fy_vprogress;

/* At the end of the input: FERRY_END, or the error that explains why the
 * stream stopped early (`pending`: an error met while reading, with its
 * message; otherwise fewer frames or seconds than the container declares).
 * The message names the file. */
int fy_video_end(const char *path, const fy_vprogress *p, int pending, const char *pending_msg);

/* EXIF orientation (codec/orient.c) that shows a frame stored with
 * `rotation` (clockwise degrees 0/90/180/270) upright. */
int fy_video_orientation(int rotation);

/* A video as `ferry info` describes it (describe.c): its stream's info,
 * container ("mov,mp4,m4a,3gp,3g2,mj2"), chroma ("4:2:0", "4:4:4", "RGB",
 * "gray", "unknown") and whether NVDEC takes it by codec, chroma and depth
 * (nvdec 1, nvdec_why "H.264 8-bit 4:2:0"; 0, nvdec_why the reason); the
 * GPU's size limits are not asked. Errors name the file (fy_av_open's; an
 * index listing frames past the end: FERRY_ECORRUPT "cut off"; built
 * without libavcodec: FERRY_EUNSUPPORTED saying so). */
typedef struct fy_video_desc {
  ferry_video_info info;
  char container[64];
  char chroma[16];
  int nvdec;
  char nvdec_why[160];
} fy_video_desc;
int fy_video_describe(const char *path, fy_video_desc *d);
/* Whether NVDEC decodes this pixel format for ferry (4:2:0 YUV): the one rule of
 * nvdec.c's check and fy_video_describe's verdict (describe.c; builds with video). */
struct AVPixFmtDescriptor;
int fy_nvdec_yuv420(const struct AVPixFmtDescriptor *pd);

/* ------------------------------------------------ NVDEC (nvdec.c) */

/* A file decoded on the GPU's video engines: libavformat demuxes, NVDEC
 * decodes. Frames come out in presentation order; the caller maps the ones
 * it keeps. Errors name the file; FERRY_EUNSUPPORTED when this build or
 * machine has no NVDEC, or NVDEC does not take this stream (then the CPU
 * path can). */
typedef struct fy_nvdec fy_nvdec;
/* Whether libcuda + libnvcuvid load (else `why` says what is missing). */
int fy_nvdec_available(char *why, size_t n);
int fy_nvdec_open(const char *path, int device, double start_s, fy_nvdec **out,
                  ferry_video_info *info);
void fy_nvdec_close(fy_nvdec *d);
/* The next frame (unmapping the previous one): as fy_vdec_next. */
int fy_nvdec_next(fy_nvdec *d, double *t, int64_t *index);
/* As fy_vdec_want: non-reference pictures shown before time t are not
 * decoded (constant-rate streams, not strict; no keyframe jumps yet).
 * fy_nvdec_skipped: how many were not. */
void fy_nvdec_want(fy_nvdec *d, double t);
void fy_nvdec_sampler(fy_nvdec *d, const struct fy_vsampler *s);
uint64_t fy_nvdec_skipped(const fy_nvdec *d);
/* As fy_vdec_frame_at: frame k becomes the current frame (map it next). */
int fy_nvdec_frame_at(fy_nvdec *d, int64_t k, double *t);
/* Maps the current frame for kernels queued on `stream`; the caller waits
 * for them before the next fy_nvdec_next / fy_nvdec_unmap. */
int fy_nvdec_map(fy_nvdec *d, void *stream, fy_gpu_yuv *f);
void fy_nvdec_unmap(fy_nvdec *d);
/* As fy_vdec_set_strict / fy_vdec_damage, from the driver's decode status
 * of each picture, which it gives for H.264 and HEVC only (VP9 and AV1
 * damage is not seen on NVDEC; strict refuses them: FERRY_EUNSUPPORTED,
 * and the caller decodes them on the CPU). */
int fy_nvdec_set_strict(fy_nvdec *d, int strict);
/* At most `keep` idle decoders (0..FY_NVDEC_KEEP_MAX; the reader's
 * nvdec_keep, FY_NVDEC_KEEP_DEFAULT unless set) stay in the process's pool
 * when d is closed, d's own among them (nvdec_pool.c). */
#define FY_NVDEC_KEEP_DEFAULT 8
#define FY_NVDEC_KEEP_MAX 64
void fy_nvdec_set_keep(fy_nvdec *d, int keep);
void fy_nvdec_damage(const fy_nvdec *d, uint64_t *frames, int64_t *first, double *first_t);
/* Seconds spent waiting for the engine (pictures still decoding, mapping). */
double fy_nvdec_wait_s(const fy_nvdec *d);
/* Decoders made and reused (nvdec_pool.c: a reader that ends well leaves
 * its decoder to the next file of the same format; nvdec_keep). */
void fy_nvdec_pool_counts(uint64_t *made, uint64_t *reused);

/* GPU batches of a video file (reader_gpu.c): NVDEC frames converted and
 * resampled by ferry's batch kernels into device memory. */
typedef struct fy_vgpu fy_vgpu;
int fy_vgpu_open(const char *path, const ferry_video_options *o, fy_vgpu **out,
                 ferry_video_info *info);
/* The next batch (frames in device memory): FERRY_OK, FERRY_END or an
 * error after the frames before it; *batch is owned by the reader. */
int fy_vgpu_next(fy_vgpu *v, ferry_video_batch **batch);
void fy_vgpu_stats(const fy_vgpu *v, ferry_video_stats *s);
/* Random access on the GPU reader: frame k decoded (NVDEC, or the CPU for
 * streams NVDEC does not take), upright RGB at full size, downloaded into
 * a host buffer the reader owns until the next call. As fy_vdec_frame_at. */
int fy_vgpu_frame_at(fy_vgpu *v, int64_t k, ferry_image *frame, double *t);
void fy_vgpu_close(fy_vgpu *v);

/* One codec / bit depth as the GPU's video decoder reports it. */
typedef struct fy_nvdec_cap {
  const char *codec; /* "h264", "hevc", "vp9", "av1" */
  int bit_depth;     /* 8 or 10 (4:2:0) */
  int supported;
  int engines; /* NVDEC engines that decode it */
  int max_width, max_height;
  int error; /* CUresult of the query, 0 when it answered */
} fy_nvdec_cap;

/* Asks the driver (libcuda + libnvcuvid, loaded at run time) what NVDEC on
 * CUDA device `device` decodes: FERRY_OK with *n entries, or
 * FERRY_EUNSUPPORTED with the reason in `why`. No error message is set. */
int fy_nvdec_probe(int device, fy_nvdec_cap *caps, int cap, int *n, char *why, size_t whylen);

#endif
