/* cli_write.c — the ferry command's image outputs (decode -o, video --frame
 * -o, load --save-grid): the writer picked from the output's extension,
 * PNG, JPEG or PPM, and checked before any work. Devices and pipes are
 * written into, never replaced (core/out_file.h, for all three). */
#include "cli.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

int cli_image_kind_of(const char *cmd, const char *opt, const char *path, cli_image_kind *kind) {
  const char *base = strrchr(path, '/'), *dot = strrchr(base ? base + 1 : path, '.');
  if (dot && !strcasecmp(dot, ".png"))
    return *kind = CLI_IMAGE_PNG, CLI_OK;
  if (dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg")))
    return *kind = CLI_IMAGE_JPEG, CLI_OK;
  if (dot && !strcasecmp(dot, ".ppm"))
    return *kind = CLI_IMAGE_PPM, CLI_OK;
  if (fy_out_in_place(path)) /* /dev/null, /dev/stdout: the name says no format */
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

/* PPM: where the bytes go is the library's rule (core/out_file.h), as for
 * PNG and JPEG: a device or pipe written into, a file replaced by a rename. */
static int write_ppm_file(const char *cmd, const char *path, const ferry_image *im) {
  fy_out_file out;
  if (fy_out_open(&out, path) != FERRY_OK)
    return fprintf(stderr, "ferry %s: %s\n", cmd, ferry_last_error()), CLI_FAIL;
  errno = 0;
  int e = write_ppm(out.f, im) == 0 ? 0 : errno ? errno : EIO;
  e = fy_out_close(&out, e);
  if (e)
    return fprintf(stderr, "ferry %s: %s: cannot write PPM: %s\n", cmd, path, strerror(e)),
           CLI_FAIL;
  return CLI_OK;
}

int cli_write_image(const char *cmd, const char *path, cli_image_kind kind, const ferry_image *im,
                    int quality) {
  int rc = FERRY_OK;
  switch (kind) {
  case CLI_IMAGE_JPEG: rc = fy_write_jpeg(path, im, quality); break;
  case CLI_IMAGE_PNG: rc = ferry_write_png(path, im); break;
  case CLI_IMAGE_PPM: return write_ppm_file(cmd, path, im);
  }
  if (rc != FERRY_OK) {
    fprintf(stderr, "ferry %s: %s\n", cmd, ferry_last_error());
    return CLI_FAIL;
  }
  return CLI_OK;
}
