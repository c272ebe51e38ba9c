/* png_write.c — ferry_write_png: lets a person look at what ferry decoded.
 * Where the bytes go is core/out_file.c's rule: a file through a temporary
 * name and a rename (a failed write never leaves a half-written file in
 * place of an existing one); an existing device, FIFO or socket written
 * into as it is, never replaced. */
#include "core/internal.h"
#include "core/out_file.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

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
  fy_out_file out;
  int rc = fy_out_open(&out, path);
  if (rc)
    return rc;
  char errbuf[256] = "";
  errno = 0;
  rc = write_rows(out.f, im, errbuf);
  int e = fy_out_close(&out, rc ? (errno ? errno : EIO) : 0);
  if (e)
    return fy_error(rc ? rc : FERRY_EIO, "%s: cannot write PNG: %s", path,
                    errbuf[0] ? errbuf : strerror(e));
  return FERRY_OK;
}
