/* still.c — the one rule for a still image given as a video, which `ferry
 * video` and ferry.VideoReader share (the reader's open calls it before
 * libavformat sees the file; the command asks it of every file before it
 * decodes any): sniffed from the file's first bytes by the image probe
 * (codec/), so a JPEG named .mp4 is refused by both. Animations are left to
 * libavformat: GIF, a PNG with an animation control chunk (APNG), a WebP
 * whose VP8X header says animated, an ISO media file of an image-sequence
 * brand. Built with or without libavcodec. */
#include "core/user_file.h"
#include "video/video.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* enough to reach a JPEG's frame header past its EXIF */
#define STILL_HEAD (1 << 18)

int fy_video_still_head(const uint8_t *head, size_t n, ferry_format *format) {
  ferry_info info;
  if (n == 0 || ferry_probe(head, n, &info) != FERRY_OK)
    return 0; /* not an image ferry knows: the video decoder has its say */
  int still = 1;
  switch (info.format) {
  case FERRY_FORMAT_GIF: still = 0; break;
  case FERRY_FORMAT_PNG: /* an acTL chunk comes before the first IDAT */
    for (size_t i = 8; i + 4 <= n && still; i++) {
      if (!memcmp(head + i, "IDAT", 4))
        break;
      still = memcmp(head + i, "acTL", 4) != 0;
    }
    break;
  case FERRY_FORMAT_WEBP:
    still = !(n > 20 && !memcmp(head + 12, "VP8X", 4) && (head[20] & 2));
    break;
  case FERRY_FORMAT_HEIF:
    still = !(n >= 12 && (!memcmp(head + 8, "avis", 4) || !memcmp(head + 8, "msf1", 4) ||
                          !memcmp(head + 8, "hevs", 4)));
    break;
  default: break;
  }
  if (format)
    *format = info.format;
  return still;
}

int fy_video_refuse_still(const char *path, int fd) {
  uint8_t *head = malloc(STILL_HEAD);
  if (!head)
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  size_t n = 0;
  while (n < STILL_HEAD) {
    ssize_t got = pread(fd, head + n, STILL_HEAD - n, (off_t)n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break; /* a read error: the demuxer meets it too, and says so */
    n += (size_t)got;
  }
  ferry_format format = FERRY_FORMAT_UNKNOWN;
  int still = fy_video_still_head(head, n, &format);
  free(head);
  if (!still)
    return FERRY_OK;
  return fy_error(FERRY_EUNSUPPORTED,
                  "%s: a still image (%s), not a video; use `ferry decode` (ferry.decode in "
                  "Python)",
                  path, ferry_format_name(format));
}

int fy_video_is_still(const char *path) {
  int fd;
  if (fy_open_regular(path, NULL, &fd) != FERRY_OK)
    return 0; /* the reader's open names it and the reason */
  int st = fy_video_refuse_still(path, fd);
  close(fd);
  return st == FERRY_EUNSUPPORTED;
}
