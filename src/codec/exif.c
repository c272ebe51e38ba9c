/* exif.c — EXIF orientation from JPEG APP1, WebP EXIF and PNG eXIf, and
 * whether a JPEG's EXIF names the camera (the duplicate keeper's "original").
 *
 * Everything here reads untrusted bytes: every offset and count is checked
 * against the buffer before use (by subtraction, so that a huge offset
 * cannot wrap around), and anything unreadable means "no orientation" (1),
 * never an error: a broken EXIF block must not make a good image fail. */
#include "codec/codec.h"

#include <string.h>

#define EXIF_TAG_ORIENTATION 0x0112
#define TIFF_BYTE 1
#define TIFF_SHORT 3
#define TIFF_LONG 4

/* True when [off, off + n) lies inside a buffer of `size` bytes. */
static int in_bounds(size_t size, size_t off, size_t n) { return off <= size && n <= size - off; }

static uint32_t rd16(const uint8_t *p, int big) {
  return big ? (uint32_t)p[0] << 8 | p[1] : (uint32_t)p[1] << 8 | p[0];
}

static uint32_t rd32(const uint8_t *p, int big) {
  return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
             : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint32_t rd32be(const uint8_t *p) { return rd32(p, 1); }
static uint32_t rd32le(const uint8_t *p) { return rd32(p, 0); }

/* The value of a 12-byte IFD entry holding one integer, or 0 when the entry
 * is not a single BYTE/SHORT/LONG. Pillow reads a count > 1 as a tuple,
 * which exif_transpose ignores, so such entries count as absent too. A
 * single value of these types sits in the entry's own 4-byte value field,
 * left-justified, so no offset needs following. */
static uint32_t entry_value(const uint8_t *e, int big) {
  uint32_t type = rd16(e + 2, big);
  if (rd32(e + 4, big) != 1)
    return 0;
  switch (type) {
  case TIFF_BYTE: return e[8];
  case TIFF_SHORT: return rd16(e + 8, big);
  case TIFF_LONG: return rd32(e + 8, big);
  default: return 0;
  }
}

/* IFD0 of a TIFF-structured EXIF payload: its byte order, first entry and
 * entry count, the count bounded by the entries that actually fit (a
 * hostile count). 0 when there is none to read. */
static int ifd0(const uint8_t *tiff, size_t size, int *big, const uint8_t **entries,
                size_t *count) {
  if (!tiff || size < 8)
    return 0;
  if (memcmp(tiff, "II*\0", 4) == 0)
    *big = 0;
  else if (memcmp(tiff, "MM\0*", 4) == 0)
    *big = 1;
  else
    return 0;
  size_t ifd = rd32(tiff + 4, *big);
  if (!in_bounds(size, ifd, 2))
    return 0;
  size_t fit = (size - ifd - 2) / 12;
  *count = rd16(tiff + ifd, *big);
  if (*count > fit)
    *count = fit;
  *entries = tiff + ifd + 2;
  return 1;
}

/* IFD0's entry for `tag`, or NULL (absent, or the block unreadable). */
static const uint8_t *ifd0_entry(const uint8_t *tiff, size_t size, uint16_t tag, int *big) {
  const uint8_t *e;
  size_t count;
  if (!ifd0(tiff, size, big, &e, &count))
    return NULL;
  for (size_t i = 0; i < count; i++, e += 12)
    if (rd16(e, *big) == tag)
      return e;
  return NULL;
}

int fy_exif_orientation(const uint8_t *tiff, size_t size) {
  int big;
  const uint8_t *e = ifd0_entry(tiff, size, EXIF_TAG_ORIENTATION, &big);
  uint32_t v = e ? entry_value(e, big) : 1;
  return v >= 1 && v <= 8 ? (int)v : 1;
}

/* 1 when IFD0 has a Make (0x010F) or Model (0x0110) tag: what cameras and
 * phones write and conversions usually drop. 0 when absent or unreadable. */
int fy_exif_names_camera(const uint8_t *tiff, size_t size) {
  int big;
  return ifd0_entry(tiff, size, 0x010F, &big) || ifd0_entry(tiff, size, 0x0110, &big);
}

int fy_jpeg_names_camera(const uint8_t *data, size_t size) {
  if (!data || size < 4 || data[0] != 0xFF || data[1] != 0xD8)
    return 0;
  size_t pos = 2;
  fy_jpeg_seg s;
  while (fy_jpeg_seg_next(data, size, &pos, 0, &s) == 1) {
    if (s.marker == 0xD9 || s.marker == 0xDA)
      break;
    if (s.marker == 0xE1 && s.len >= 6 && memcmp(s.data, "Exif\0\0", 6) == 0)
      return fy_exif_names_camera(s.data + 6, s.len - 6);
  }
  return 0;
}

/* EXIF payloads in WebP and PNG may carry JPEG's "Exif\0\0" prefix (some
 * writers copy the APP1 body verbatim); Pillow strips it, so do we. */
static int exif_payload_orientation(const uint8_t *p, size_t n) {
  if (n >= 6 && memcmp(p, "Exif\0\0", 6) == 0) {
    p += 6;
    n -= 6;
  }
  return fy_exif_orientation(p, n);
}

int fy_jpeg_orientation(const uint8_t *data, size_t size) {
  if (!data || size < 4 || data[0] != 0xFF || data[1] != 0xD8)
    return 1;
  size_t pos = 2;
  fy_jpeg_seg s;
  while (fy_jpeg_seg_next(data, size, &pos, 0, &s) == 1) {
    if (s.marker == 0xD9 || s.marker == 0xDA) /* EOI, SOS: no metadata past the scan */
      break;
    /* The first Exif APP1 wins, as in Pillow; XMP also uses APP1. */
    if (s.marker == 0xE1 && s.len >= 6 && memcmp(s.data, "Exif\0\0", 6) == 0)
      return fy_exif_orientation(s.data + 6, s.len - 6);
  }
  return 1;
}

int fy_webp_orientation(const uint8_t *data, size_t size) {
  if (!data || size < 12 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WEBP", 4) != 0)
    return 1;
  /* The RIFF size field is not trusted: the buffer bounds the walk. */
  size_t pos = 12;
  while (in_bounds(size, pos, 8)) {
    size_t n = rd32le(data + pos + 4);
    const uint8_t *payload = data + pos + 8;
    if (!in_bounds(size, pos + 8, n))
      break;
    if (memcmp(data + pos, "EXIF", 4) == 0)
      return exif_payload_orientation(payload, n);
    pos += 8 + n + (n & 1); /* chunks are padded to even sizes */
  }
  return 1;
}

int fy_png_orientation(const uint8_t *data, size_t size) {
  if (!data || size < 8 || memcmp(data, "\x89PNG\r\n\x1A\n", 8) != 0)
    return 1;
  /* eXIf may follow IDAT (older writers), so walk to IEND; skipping by
   * length is cheap. CRCs are the decoder's business, not ours. */
  size_t pos = 8;
  while (in_bounds(size, pos, 8)) {
    size_t n = rd32be(data + pos);
    const uint8_t *type = data + pos + 4;
    if (!in_bounds(size, pos + 8, n))
      break;
    if (memcmp(type, "eXIf", 4) == 0)
      return exif_payload_orientation(data + pos + 8, n);
    if (memcmp(type, "IEND", 4) == 0)
      break;
    if (!in_bounds(size, pos + 8 + n, 4))
      break;
    pos += 12 + n;
  }
  return 1;
}
