/* cli_write.c — the ferry command's image outputs (decode -o, video --frame
 * -o, load --save-grid): the writer picked from the output's extension,
 * PNG, JPEG or PPM, and checked before any work. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* src/codec/jpeg_write.h's declaration (the writer beside ferry_write_png),
 * repeated here until src/tools_tier.h lists that header: tools/ reach src/
 * only through it, and that one line is outside this change. */
int fy_write_jpeg(const char *path, const ferry_image *image, int quality);

/* An existing device, FIFO or socket: written as it is, never replaced
 * through a rename (which would put a regular file in /dev/null's place). */
static int is_stream(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int cli_image_kind_of(const char *cmd, const char *opt, const char *path, cli_image_kind *kind) {
  const char *base = strrchr(path, '/'), *dot = strrchr(base ? base + 1 : path, '.');
  if (dot && !strcasecmp(dot, ".png"))
    return *kind = CLI_IMAGE_PNG, CLI_OK;
  if (dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg")))
    return *kind = CLI_IMAGE_JPEG, CLI_OK;
  if (dot && !strcasecmp(dot, ".ppm"))
    return *kind = CLI_IMAGE_PPM, CLI_OK;
  if (is_stream(path)) /* /dev/null, /dev/stdout: the name says no format */
    return *kind = CLI_IMAGE_PNG, CLI_OK;
  return cli_usage_error(cmd,
                         "%s %s: cannot tell which format to write: the extension picks it "
                         "(" CLI_IMAGE_EXTENSIONS ")",
                         opt, path);
}

/* Binary PPM (P6), or PGM data (P5) for a grey image. */
static int write_ppm(FILE *f, const ferry_image *im) {
  fprintf(f, "P%d\n%d %d\n255\n", im->channels == 1 ? 5 : 6, im->width, im->height);
  size_t row = (size_t)im->width * (size_t)im->channels;
  for (int y = 0; y < im->height; y++)
    if (fwrite(im->data + (size_t)y * im->stride, 1, row, f) != row)
      return -1;
  return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* Copies the file `from` into the stream `to` (a PNG written aside first). */
static int copy_to(const char *from, FILE *to) {
  FILE *f = fopen(from, "rb");
  if (!f)
    return -1;
  char buf[1 << 16];
  size_t n;
  int bad = 0;
  while (!bad && (n = fread(buf, 1, sizeof buf, f)) > 0)
    bad = fwrite(buf, 1, n, to) != n;
  bad |= ferror(f) != 0;
  fclose(f);
  return bad || fflush(to) != 0 || ferror(to) ? -1 : 0;
}

/* PPM, or PNG into a stream: written to `tmp` (or straight into a stream),
 * then renamed over `path`. */
static int write_other(const char *cmd, const char *path, cli_image_kind kind,
                       const ferry_image *im) {
  int stream = is_stream(path);
  char tmp[4096], aside[64] = "";
  if (!stream && (size_t)snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= sizeof tmp)
    return fprintf(stderr, "ferry %s: %s: path too long\n", cmd, path), CLI_FAIL;
  if (kind == CLI_IMAGE_PNG) { /* only into a stream: the PNG goes aside first */
    const char *dir = getenv("TMPDIR");
    snprintf(aside, sizeof aside, "%s/ferry-%ld.png", dir && strlen(dir) < 40 ? dir : "/tmp",
             (long)getpid());
    if (ferry_write_png(aside, im) != FERRY_OK)
      return fprintf(stderr, "ferry %s: %s\n", cmd, ferry_last_error()), CLI_FAIL;
  }
  const char *target = stream ? path : tmp;
  FILE *f = fopen(target, "wb");
  int e = errno;
  if (!f) {
    if (aside[0])
      unlink(aside);
    fprintf(stderr, "ferry %s: %s: cannot create: %s\n", cmd, target, strerror(e));
    return CLI_FAIL;
  }
  errno = 0;
  int bad = kind == CLI_IMAGE_PNG ? copy_to(aside, f) : write_ppm(f, im);
  e = errno;
  if (fclose(f) != 0 && !bad)
    bad = -1, e = errno;
  if (!bad && !stream && rename(tmp, path) != 0)
    bad = -1, e = errno;
  if (aside[0])
    unlink(aside);
  if (bad) {
    if (!stream)
      unlink(tmp);
    fprintf(stderr, "ferry %s: %s: cannot write %s: %s\n", cmd, path,
            kind == CLI_IMAGE_PNG ? "PNG" : "PPM", strerror(e ? e : EIO));
    return CLI_FAIL;
  }
  return CLI_OK;
}

int cli_write_image(const char *cmd, const char *path, cli_image_kind kind, const ferry_image *im,
                    int quality) {
  int rc = FERRY_OK;
  switch (kind) {
  case CLI_IMAGE_JPEG: rc = fy_write_jpeg(path, im, quality); break;
  case CLI_IMAGE_PNG:
    if (is_stream(path))
      return write_other(cmd, path, kind, im);
    rc = ferry_write_png(path, im);
    break;
  case CLI_IMAGE_PPM: return write_other(cmd, path, kind, im);
  }
  if (rc != FERRY_OK) {
    fprintf(stderr, "ferry %s: %s\n", cmd, ferry_last_error());
    return CLI_FAIL;
  }
  return CLI_OK;
}
