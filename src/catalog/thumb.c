/* thumb.c — thumbnails for the HTML report: decoded small (JPEG DCT
 * scaling), upright, resized to fit the box, encoded as JPEG in memory.
 * The file is read by ferry_decode_file (fy_read_file: regular files only,
 * an entry that is now a FIFO or a device refused at once, by name). */
#include "catalog/dupes.h"
#include "codec/codec.h"

#include <stdlib.h>
#include <string.h>

int fy_thumbnail(const char *path, int box, uint8_t **jpeg, size_t *size) {
  *jpeg = NULL;
  *size = 0;
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  o.min_width = o.min_height = box; /* DCT scaling keeps at least the box */
  ferry_image full, small;
  int rc = ferry_decode_file(path, &o, &full);
  if (rc)
    return rc;
  double s = (double)box / (full.width > full.height ? full.width : full.height);
  if (s > 1)
    s = 1;
  int w = (int)(full.width * s + 0.5), h = (int)(full.height * s + 0.5);
  w = w < 1 ? 1 : w;
  h = h < 1 ? 1 : h;
  rc = ferry_resize(&full, NULL, &small, w, h, FERRY_FILTER_TRIANGLE);
  ferry_image_free(&full);
  if (rc)
    return rc;
  rc = fy_jpeg_encode(small.data, small.width, small.height, small.stride, 80, "thumbnail", jpeg,
                      size);
  ferry_image_free(&small);
  return rc;
}
