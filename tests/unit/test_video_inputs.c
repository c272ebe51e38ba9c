/* test_video_inputs.c — what the video reader's open (src/video/av_open.c,
 * still.c, mp4_why.c) does with hostile or odd files, through the public
 * ferry_video_open (issue 52): a FIFO refused at once, never waited on; a
 * still image named .mp4 refused; a GIF animation bomb (a 10000x10000
 * canvas, 1x1 frames) refused before any frame is decoded while a real
 * animation reads; an MP4 whose sample-size table is damaged named as such,
 * not as a cut-off index. A SIGALRM ends the test should an open block. */
#include "check.h"
#include "video/video.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/ferry_video_inputs_XXXXXX";

static const char *in_dir(const char *name) {
  static char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

static size_t slurp(const char *path, uint8_t *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(buf, 1, cap, f) : 0;
  if (f)
    fclose(f);
  return n;
}

static void spit(const char *path, const uint8_t *buf, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(buf, 1, n, f) == n);
  if (f)
    fclose(f);
}

/* Opens path; returns the status, the message in msg. */
static int open_status(const char *path, char *msg, size_t n) {
  ferry_video_reader *r = NULL;
  int st = ferry_video_open(path, NULL, &r);
  snprintf(msg, n, "%s", st == FERRY_OK ? "" : ferry_last_error());
  ferry_video_close(r);
  return st;
}

static void test_fifo(void) {
  char msg[1024];
  const char *fifo = in_dir("v.mp4");
  CHECK(mkfifo(fifo, 0600) == 0);
  alarm(30); /* before the fix: blocked in open() for ever */
  int st = open_status(fifo, msg, sizeof msg);
  alarm(0);
  CHECK_MSG(st == FERRY_EINVAL && strstr(msg, "v.mp4: a FIFO, not a regular file"), "%d %s", st,
            msg);
  unlink(fifo);
  st = open_status("/dev/null", msg, sizeof msg);
  CHECK_MSG(st == FERRY_EINVAL && strstr(msg, "/dev/null: a character device"), "%d %s", st, msg);
}

static void test_still(void) {
  char msg[1024], src[4096];
  static uint8_t buf[1 << 20];
  const char *sample = getenv("FERRY_SAMPLE");
  snprintf(src, sizeof src, "%s/class0/p0000.jpg", sample ? sample : "data/sample");
  size_t n = slurp(src, buf, sizeof buf);
  if (!n) {
    SKIP("%s not found (FERRY_SAMPLE): the still-image part", src);
    return;
  }
  ferry_format f = FERRY_FORMAT_UNKNOWN;
  CHECK(fy_video_still_head(buf, n, &f) == 1 && f == FERRY_FORMAT_JPEG);
  spit(in_dir("photo.mp4"), buf, n);
  int st = open_status(in_dir("photo.mp4"), msg, sizeof msg);
  CHECK_MSG(st == FERRY_EUNSUPPORTED && strstr(msg, "photo.mp4: a still image (JPEG), not a video"),
            "%d %s", st, msg);
  CHECK(fy_video_is_still(in_dir("photo.mp4")) == 1);
  CHECK(fy_video_is_still(in_dir("no_such.mp4")) == 0);
  /* a PNG with an animation control chunk before its first IDAT: APNG */
  static const uint8_t apng_head[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0,
                                      13,   'I', 'H', 'D', 'R',  0,    0,    0,    4, 0, 0,
                                      0,    4,   8,   2,   0,    0,    0,    0,    0, 0, 0,
                                      0,    0,   0,   8,   'a',  'c',  'T',  'L'};
  CHECK(fy_video_still_head(apng_head, sizeof apng_head, NULL) == 0);
}

/* A GIF of a w x h canvas and `frames` 1x1 frames (the review's 729 bytes
 * at 30 frames). */
static size_t gif_bomb(uint8_t *b, int frames, int w, int h) {
  size_t n = 0;
  memcpy(b, "GIF89a", 6), n = 6;
  uint8_t screen[] = {w & 255, w >> 8, h & 255, h >> 8, 0x80, 0, 0, 0, 0, 0, 255, 255, 255};
  memcpy(b + n, screen, sizeof screen), n += sizeof screen;
  static const uint8_t loop[] = "\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00";
  memcpy(b + n, loop, sizeof loop - 1), n += sizeof loop - 1;
  static const uint8_t frame[] = "\x21\xf9\x04\x04\x01\x00\x00\x00"
                                 "\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00"
                                 "\x02\x02\x4c\x01\x00";
  for (int i = 0; i < frames; i++)
    memcpy(b + n, frame, sizeof frame - 1), n += sizeof frame - 1;
  b[n++] = 0x3b;
  return n;
}

static void test_gif_bomb(void) {
  static uint8_t b[1 << 17];
  char msg[1024];
  if (!fy_av_has_demuxer("gif")) {
    /* such a build refuses every GIF as no video it reads: no bomb costs */
    size_t m = gif_bomb(b, 30, 10000, 10000);
    spit(in_dir("bomb.gif"), b, m);
    int rc = open_status(in_dir("bomb.gif"), msg, sizeof msg);
    CHECK_MSG(rc == FERRY_EUNSUPPORTED && strstr(msg, "this build's FFmpeg reads no such"), "%d %s",
              rc, msg);
    SKIP("GIF bombs against the limits: this build's libavformat has no GIF demuxer (the "
         "minimal FFmpeg of the wheel and the GPU bundles); the bomb was refused as unsupported");
    return;
  }
  size_t n = gif_bomb(b, 30, 10000, 10000);
  CHECK(n == 729);
  spit(in_dir("bomb.gif"), b, n);
  int st = open_status(in_dir("bomb.gif"), msg, sizeof msg);
  CHECK_MSG(st == FERRY_ETOO_LARGE && strstr(msg, "bomb.gif: a GIF animation of at least") &&
                strstr(msg, " of 10000x10000: "),
            "%d %s", st, msg);
  n = gif_bomb(b, 3000, 10000, 10000);
  spit(in_dir("bomb3000.gif"), b, n);
  st = open_status(in_dir("bomb3000.gif"), msg, sizeof msg);
  CHECK_MSG(st == FERRY_ETOO_LARGE, "%d %s", st, msg);
  /* over the pixel limit as a canvas alone */
  n = gif_bomb(b, 1, 20000, 10000);
  spit(in_dir("wide.gif"), b, n);
  st = open_status(in_dir("wide.gif"), msg, sizeof msg);
  CHECK_MSG(st == FERRY_ETOO_LARGE && strstr(msg, "wide.gif: GIF is 20000x10000"), "%d %s", st,
            msg);
  /* the same 30 frames on a canvas of their own size read */
  n = gif_bomb(b, 30, 1, 1);
  spit(in_dir("small.gif"), b, n);
  ferry_video_reader *r = NULL;
  st = ferry_video_open(in_dir("small.gif"), NULL, &r);
  CHECK_MSG(st == FERRY_OK, "%s", ferry_last_error());
  int frames = 0;
  ferry_video_batch *vb;
  while (st == FERRY_OK && ferry_video_next(r, &vb) == FERRY_OK)
    frames += vb->count;
  CHECK_MSG(frames == 30, "%d frames", frames);
  ferry_video_close(r);
}

static void test_mp4_index(void) {
  static uint8_t d[1 << 17];
  char src[4096], msg[1024], why[400];
  snprintf(src, sizeof src, "%s/video/testsrc_h264.mp4", check_fixtures());
  size_t n = slurp(src, d, sizeof d);
  CHECK(n > 0 && n < sizeof d);
  size_t i = 0;
  while (i + 4 <= n && memcmp(d + i, "stsz", 4))
    i++;
  CHECK(i + 16 <= n);
  /* the table's count (after version/flags and the fixed size): 1000 */
  d[i + 12] = 0, d[i + 13] = 0, d[i + 14] = 0x03, d[i + 15] = 0xe8;
  spit(in_dir("stsz.mp4"), d, n);
  int st = open_status(in_dir("stsz.mp4"), msg, sizeof msg);
  CHECK_MSG(st == FERRY_ECORRUPT && strstr(msg, "stsz.mp4: ") && strstr(msg, "stsz") &&
                strstr(msg, "damaged") && !strstr(msg, "cut off"),
            "%d %s", st, msg);
  int fd = open(in_dir("stsz.mp4"), O_RDONLY);
  CHECK(fd >= 0 && fy_mp4_why(fd, (int64_t)n, why, sizeof why) == 1 &&
        strstr(why, "lists 1000 samples in room for 50"));
  CHECK(fy_mp4_why(fd, 7, why, sizeof why) == 0); /* too short for a box */
  close(fd);
  /* cut off inside its first box after ftyp, no moov anywhere: cut off */
  size_t ftyp = (size_t)d[0] << 24 | (size_t)d[1] << 16 | (size_t)d[2] << 8 | d[3];
  uint8_t cut[64];
  memcpy(cut, d, ftyp);
  memcpy(cut + ftyp, "\x00\x01\x00\x00mdat", 8); /* 65536 bytes declared */
  spit(in_dir("cut.mp4"), cut, ftyp + 8);
  fd = open(in_dir("cut.mp4"), O_RDONLY);
  CHECK(fd >= 0 && fy_mp4_why(fd, (int64_t)(ftyp + 8), why, sizeof why) == 1 &&
        strstr(why, "cut off in its mdat box") && strstr(why, "moov"));
  close(fd);
}

int main(void) {
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  ferry_video_reader *r;
  char p[4096];
  snprintf(p, sizeof p, "%s/video/testsrc_h264.mp4", check_fixtures());
  int st = ferry_video_open(p, NULL, &r);
  if (st == FERRY_EUNSUPPORTED && strstr(ferry_last_error(), "built without libavcodec")) {
    SKIP("video: %s", ferry_last_error());
    rmdir(dir);
    return check_done();
  }
  ferry_video_close(r);
  check_part("FIFOs and devices");
  test_fifo();
  check_part("still images");
  test_still();
  check_part("GIF bombs");
  test_gif_bomb();
  check_part("MP4 index");
  test_mp4_index();
  const char *names[] = {"photo.mp4", "bomb.gif", "bomb3000.gif", "wide.gif",
                         "small.gif", "stsz.mp4", "cut.mp4"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    unlink(in_dir(names[k]));
  rmdir(dir);
  return check_done();
}
