/* jpeg_seg.c — the one walk over a JPEG's marker segments (used by
 * jpeg_scan.c, exif.c and jpeg_dc.c), bounds-checked against the
 * buffer: a hostile length never leads a reader outside it. */
#include "codec/codec.h"

/* Markers without a length field: TEM, RST0..7, SOI. */
static int standalone(uint8_t m) { return m == 0x01 || (m >= 0xD0 && m <= 0xD8); }

int fy_jpeg_seg_next(const uint8_t *d, size_t n, size_t *pos, int strict, fy_jpeg_seg *seg) {
  size_t i = *pos;
  for (;;) {
    if (!strict)
      while (i < n && d[i] != 0xFF)
        i++; /* junk between segments is skipped, as libjpeg and Pillow do */
    if (i >= n)
      return strict ? -1 : 0;
    if (d[i] != 0xFF)
      return -1;
    while (i < n && d[i] == 0xFF)
      i++; /* fill bytes */
    if (i >= n)
      return strict ? -1 : 0;
    uint8_t m = d[i++];
    if (m == 0x00 || standalone(m)) {
      if (strict)
        return -1; /* a stuffed byte or a marker out of place before the scan */
      continue;    /* libjpeg steps over them */
    }
    seg->marker = m;
    if (m == 0xD9) { /* EOI */
      seg->data = d + i;
      seg->len = 0;
      *pos = i;
      return 1;
    }
    if (n - i < 2)
      return -1;
    size_t len = (size_t)d[i] << 8 | d[i + 1];
    if (len < 2 || len > n - i)
      return -1;
    seg->data = d + i + 2;
    seg->len = len - 2;
    *pos = i + len;
    return 1;
  }
}
