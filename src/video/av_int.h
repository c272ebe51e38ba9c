/* av_int.h — what the libavformat-based parts of src/video share: opening a
 * file's best video stream (errors name the file) and describing it. Only
 * included where FERRY_HAVE_AV is defined. */
#ifndef FY_AV_INT_H
#define FY_AV_INT_H

#include "video/video.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

/* Opens `path` and picks its best video stream (*stream); the other streams
 * are discarded. With `codec` non-NULL, a stream libavcodec can decode is
 * required and *codec gets its decoder. FERRY_EIO (cannot open),
 * FERRY_ECORRUPT (no readable container), FERRY_EUNSUPPORTED (no video
 * stream, no decoder). */
int fy_av_open(const char *path, AVFormatContext **fmt, int *stream, const AVCodec **codec);

/* The stream's codec, size, rotation, depth, rate, start, duration, frames. */
void fy_av_info(AVFormatContext *fmt, int stream, ferry_video_info *info);

#endif
