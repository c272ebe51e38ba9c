/* jpeg_scan.c — a cheap structural check of a baseline JPEG before it goes
 * to a decoder that reports no damage (the GPU's JPEG engine decodes a
 * truncated file into grey rows without a word). */
#include "codec/codec.h"

#include <string.h>

/* Walks the marker segments from SOI to SOS with bounds checks, then the
 * entropy-coded data: only stuffed bytes (FF 00), restart markers and fill
 * bytes may appear before EOI, and EOI must be there. 1 when it holds. */
int fy_jpeg_structure_ok(const uint8_t *d, size_t n) {
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8)
    return 0;
  size_t i = 2;
  fy_jpeg_seg seg;
  do { /* header segments, strictly: SOS ends them (EOI before it: no image) */
    if (fy_jpeg_seg_next(d, n, &i, 1, &seg) != 1 || seg.marker == 0xD9)
      return 0;
  } while (seg.marker != 0xDA); /* SOS: entropy-coded data follows */
  for (; i + 1 < n; i++) {
    /* memchr skips the entropy-coded bytes many at a time */
    const uint8_t *ff = memchr(d + i, 0xFF, n - 1 - i);
    if (!ff)
      break;
    i = (size_t)(ff - d);
    uint8_t m = d[i + 1];
    if (m == 0x00 || m == 0xFF || (m >= 0xD0 && m <= 0xD7))
      continue;
    return m == 0xD9; /* EOI ends a single-scan image; anything else is damage */
  }
  return 0; /* no EOI: truncated */
}
