/* jpeg_write.h — an image written as a JPEG file (jpeg_write.c), beside
 * ferry_write_png: what `ferry decode -o OUT.jpg` writes. The encoder in
 * memory is fy_jpeg_encode (codec.h). */
#ifndef FY_JPEG_WRITE_H
#define FY_JPEG_WRITE_H

#include "ferry.h"

/* Writes an 8-bit grey (1 channel) or RGB (3) image as a baseline JPEG of
 * `quality` (1..100; RGB as YCbCr 4:2:0). A regular file is written under
 * a temporary name and renamed (a failed write leaves no half file); an
 * existing device or pipe (/dev/stdout, a FIFO) is written as it is
 * (core/out_file.h: the rule ferry_write_png follows too). Errors name
 * `path` and the reason. */
int fy_write_jpeg(const char *path, const ferry_image *image, int quality);

#endif
