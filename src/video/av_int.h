/* av_int.h — what the libavformat-based parts of src/video share: opening a
 * user's file and its best video stream (av_open.c; errors name the file)
 * and describing it (decode_av.c). Only
 * included where FERRY_HAVE_AV is defined. */
#ifndef FY_AV_INT_H
#define FY_AV_INT_H

#include "video/video.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

/* Opens `path` (av_open.c: a regular file only, read through its fd; not
 * a still image; frames within the pixel limit, an animation's work within
 * FY_ANIM_WORK_*) and picks its best video stream (*stream); the other
 * streams are discarded. With `codec` non-NULL, a stream libavcodec can
 * decode is required and *codec gets its decoder. FERRY_EIO (cannot open or
 * read), FERRY_EINVAL (a FIFO, device, socket or folder), FERRY_ECORRUPT
 * (no readable container; the reason mp4_why.c finds for an MP4),
 * FERRY_EUNSUPPORTED (a still image, no video stream, no decoder),
 * FERRY_ETOO_LARGE (over the limits). Close *fmt with fy_av_close. */
int fy_av_open(const char *path, AVFormatContext **fmt, int *stream, const AVCodec **codec);
/* Closes a context of fy_av_open (and its file); *fmt may be NULL. */
void fy_av_close(AVFormatContext **fmt);

/* The stream's codec, size, rotation, depth, rate, start, duration, frames. */
void fy_av_info(AVFormatContext *fmt, int stream, ferry_video_info *info);

#endif
