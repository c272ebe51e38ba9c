/* jpeg_write.c — RGB pixels to a JPEG in memory (libjpeg-turbo's compress
 * API: YCbCr 4:2:0, baseline, islow DCT, no Huffman optimisation), for the
 * report's thumbnails and JPEG packs; and an image to a JPEG file
 * (fy_write_jpeg: `ferry decode -o OUT.jpg`). */
#include "codec/jpeg_write.h"
#include "codec/codec.h"
#include "core/out_file.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

typedef struct jerr {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
} jerr;

static void jerr_exit(j_common_ptr c) { longjmp(((jerr *)c->err)->jump, 1); }

/* components 3: RGB in, YCbCr 4:2:0 out; 1: grey in and out. */
static int encode(const uint8_t *px, int w, int h, size_t stride, int components, int quality,
                  const char *name, uint8_t **out, size_t *size) {
  struct jpeg_compress_struct c;
  jerr e;
  unsigned char *volatile mem = NULL;
  unsigned long len = 0;
  *out = NULL;
  *size = 0;
  c.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = jerr_exit;
  if (setjmp(e.jump)) {
    jpeg_destroy_compress(&c);
    free(mem);
    return fy_error(FERRY_EINTERNAL, "%s: JPEG encoding failed", name);
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, (unsigned char **)&mem, &len);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = components;
  c.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  c.optimize_coding = FALSE;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)c.next_scanline * stride);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  *out = mem;
  *size = len;
  return FERRY_OK;
}

int fy_jpeg_encode(const uint8_t *px, int w, int h, size_t stride, int quality, const char *name,
                   uint8_t **out, size_t *size) {
  return encode(px, w, h, stride, 3, quality, name, out, size);
}

int fy_write_jpeg(const char *path, const ferry_image *im, int quality) {
  if (!path || !im || !im->data || im->width < 1 || im->height < 1 ||
      (im->channels != 1 && im->channels != 3))
    return fy_error(FERRY_EINVAL, "%s: cannot write JPEG: %s", path ? path : "(null)",
                    im && im->channels == 4 ? "4 channels (JPEG holds grey or RGB)"
                                            : "bad image or path");
  if (quality < 1 || quality > 100)
    return fy_error(FERRY_EINVAL, "%s: JPEG quality %d not in 1..100", path, quality);
  uint8_t *jpg = NULL;
  size_t n = 0;
  int rc =
      encode(im->data, im->width, im->height, im->stride, im->channels, quality, path, &jpg, &n);
  if (rc)
    return rc;
  /* core/out_file.c's rule: a device or pipe (/dev/stdout, a FIFO) is
   * written as it is; a file through a temporary name and a rename. */
  fy_out_file out;
  rc = fy_out_open(&out, path);
  if (rc) {
    free(jpg);
    return rc;
  }
  errno = 0;
  int e = fwrite(jpg, 1, n, out.f) == n ? 0 : errno ? errno : EIO;
  free(jpg);
  e = fy_out_close(&out, e);
  if (e)
    return fy_error(FERRY_EIO, "%s: cannot write JPEG: %s", path, strerror(e));
  return FERRY_OK;
}
