/* fuzz_video.c — a video file through src/video (libavformat's demuxers,
 * libavcodec's decoders, ferry's frame conversion and sampling) over
 * arbitrary bytes. The first byte picks the calls, the rest is the file,
 * written to a scratch file (the reader takes a path):
 *   bit 0: frames one by one at full size (ferry_video_next_frame), else
 *          batches of 2 resized to 32x24 (ferry_video_next)
 *   bit 1: start at 0.1 s (a seek) and keep every 2nd frame
 *   bit 2: random access instead: frames 3, 0 and the last
 *          (ferry_video_frame_at)
 * At most 6 frames or batches are asked for, so that a long stream does
 * not slow the fuzzer. Every call must return an error or a well-formed
 * result; a crash, a leak or a hang is the bug. */
#include <ferry.h>

#include "fuzz_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static char path[4200];
  if (!path[0])
    snprintf(path, sizeof path, "%s/in.video", fuzz_tmpdir());
  int mode = data[0];
  fuzz_write(path, data + 1, size - 1);
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.threads = 1;
  if (!(mode & 1)) {
    o.width = 32, o.height = 24;
    o.batch_size = 2;
  }
  if (mode & 2) {
    o.start_s = 0.1;
    o.stride = 2;
  }
  ferry_video_reader *r = NULL;
  if (ferry_video_open(path, &o, &r) != FERRY_OK)
    return 0;
  ferry_video_info info;
  ferry_video_get_info(r, &info);
  if (mode & 4) {
    int64_t ks[3] = {3, 0, info.frames > 0 ? info.frames - 1 : 7};
    for (int i = 0; i < 3; i++) {
      ferry_image im;
      double t;
      if (ferry_video_frame_at(r, ks[i], &im, &t) == FERRY_OK)
        (void)*(volatile uint8_t *)im.data; /* the frame is readable */
    }
  } else {
    for (int i = 0; i < 6; i++) {
      int rc;
      if (mode & 1) {
        ferry_image im;
        double t;
        int64_t k;
        rc = ferry_video_next_frame(r, &im, &t, &k);
        if (rc == FERRY_OK)
          (void)*(volatile uint8_t *)im.data;
      } else {
        ferry_video_batch *b = NULL;
        rc = ferry_video_next(r, &b);
        if (rc == FERRY_OK && b->count > 0)
          (void)*(volatile uint8_t *)b->data;
      }
      if (rc != FERRY_OK)
        break;
    }
  }
  ferry_video_stats st;
  ferry_video_get_stats(r, &st);
  ferry_video_close(r);
  return 0;
}
