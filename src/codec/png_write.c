/* png_write.c — ferry_write_png: lets a person look at what ferry decoded.
 * Written to a temporary name and renamed, so a failed write never leaves
 * a half-written file in place of an existing one. */
#include "core/internal.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void png_err(png_structp png, png_const_charp msg) {
  char *buf = png_get_error_ptr(png);
  snprintf(buf, 256, "%s", msg);
  png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

static int write_rows(FILE *f, const ferry_image *im, char *errbuf) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, errbuf, png_err, png_warn);
  if (!png)
    return FERRY_ENOMEM;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return FERRY_EIO;
  }
  png_init_io(png, f);
  int type = im->channels == 1   ? PNG_COLOR_TYPE_GRAY
             : im->channels == 4 ? PNG_COLOR_TYPE_RGBA
                                 : PNG_COLOR_TYPE_RGB;
  png_set_IHDR(png, info, (png_uint_32)im->width, (png_uint_32)im->height, 8, type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 3);
  png_write_info(png, info);
  for (int y = 0; y < im->height; y++)
    png_write_row(png, im->data + (size_t)y * im->stride);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return FERRY_OK;
}

int ferry_write_png(const char *path, const ferry_image *im) {
  if (!path || !im || !im->data || im->width < 1 || im->height < 1 ||
      (im->channels != 1 && im->channels != 3 && im->channels != 4))
    return fy_error(FERRY_EINVAL, "ferry_write_png: bad image or path");
  char tmp[4096];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= sizeof tmp)
    return fy_error(FERRY_EINVAL, "%s: path too long", path);
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  char errbuf[256] = "";
  int rc = write_rows(f, im, errbuf);
  if (fflush(f) != 0 || ferror(f))
    rc = rc ? rc : FERRY_EIO;
  if (fclose(f) != 0 && !rc)
    rc = FERRY_EIO;
  if (rc == FERRY_OK && rename(tmp, path) != 0)
    rc = FERRY_EIO;
  if (rc) {
    int e = errno;
    unlink(tmp);
    return fy_error(rc, "%s: cannot write PNG: %s", path, errbuf[0] ? errbuf : strerror(e));
  }
  return FERRY_OK;
}
