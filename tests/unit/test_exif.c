/* test_exif.c — EXIF orientation parsing (crafted blobs in both byte orders,
 * hostile offsets and counts, every truncation as an exact-size heap copy so
 * the sanitizers see any stray read), the JPEG/WebP/PNG containers, and the
 * orientation transform: fy_orient against Pillow's exif_transpose and a
 * plain reference, and fy_rect_to_stored against fy_orient. */
#include "codec/codec.h"

#include "check.h"

#include <string.h>

/* ------------------------------------------------------------ builders */

/* A growable byte string for crafting test data. */
typedef struct bytes {
  uint8_t b[4096];
  size_t n;
} bytes;

static void put8(bytes *s, unsigned v) { s->b[s->n++] = (uint8_t)v; }

static void put16(bytes *s, unsigned v, int big) {
  put8(s, big ? v >> 8 : v & 0xFF);
  put8(s, big ? v & 0xFF : v >> 8);
}

static void put32(bytes *s, uint32_t v, int big) {
  put16(s, big ? v >> 16 : v & 0xFFFF, big);
  put16(s, big ? v & 0xFFFF : v >> 16, big);
}

static void put_raw(bytes *s, const void *p, size_t n) {
  memcpy(s->b + s->n, p, n);
  s->n += n;
}

/* One IFD entry; for BYTE/SHORT the value is left-justified in the field. */
static void put_entry(bytes *s, unsigned tag, unsigned type, uint32_t count, uint32_t value,
                      int big) {
  put16(s, tag, big);
  put16(s, type, big);
  put32(s, count, big);
  if (type == 1) {
    put8(s, value);
    put8(s, 0);
    put16(s, 0, big);
  } else if (type == 3) {
    put16(s, value, big);
    put16(s, 0, big);
  } else {
    put32(s, value, big);
  }
}

/* A TIFF header + IFD0 holding (optionally) a few other tags and then
 * Orientation of the given type/count/value. */
static bytes tiff_blob(int big, unsigned type, uint32_t count, uint32_t value, int others) {
  bytes s = {.n = 0};
  put_raw(&s, big ? "MM\0*" : "II*\0", 4);
  put32(&s, 8, big);
  put16(&s, (unsigned)(others + 1), big);
  for (int i = 0; i < others; i++)
    put_entry(&s, 0x010F + (unsigned)i, 2, 4, 0x41424300, big); /* Make etc., ASCII */
  put_entry(&s, 0x0112, type, count, value, big);
  put32(&s, 0, big); /* no next IFD */
  return s;
}

static int orientation_of(int (*fn)(const uint8_t *, size_t), const uint8_t *p, size_t n) {
  uint8_t *copy = malloc(n ? n : 1);
  if (n)
    memcpy(copy, p, n);
  int o = fn(copy, n);
  free(copy);
  return o;
}

/* ------------------------------------------------------------ EXIF/TIFF */

static void test_tiff_orientations(void) {
  for (int big = 0; big <= 1; big++) {
    for (uint32_t o = 1; o <= 8; o++) {
      bytes s = tiff_blob(big, 3, 1, o, (int)o % 3);
      CHECK_MSG(orientation_of(fy_exif_orientation, s.b, s.n) == (int)o, "big=%d o=%u", big, o);
    }
    /* Out of range values mean "no orientation". */
    static const uint32_t bad[] = {0, 9, 255, 65535};
    for (int i = 0; i < 4; i++) {
      bytes s = tiff_blob(big, 3, 1, bad[i], 0);
      CHECK_MSG(orientation_of(fy_exif_orientation, s.b, s.n) == 1, "value %u", bad[i]);
    }
    /* LONG and BYTE are read as integers too, as Pillow does. */
    bytes l = tiff_blob(big, 4, 1, 6, 1);
    CHECK(orientation_of(fy_exif_orientation, l.b, l.n) == 6);
    bytes b = tiff_blob(big, 1, 1, 8, 0);
    CHECK(orientation_of(fy_exif_orientation, b.b, b.n) == 8);
    bytes big_long = tiff_blob(big, 4, 1, 0x00060000, 0); /* not 6 */
    CHECK(orientation_of(fy_exif_orientation, big_long.b, big_long.n) == 1);
    /* ASCII, RATIONAL, and a count of 2 (a tuple for Pillow) are ignored. */
    bytes a = tiff_blob(big, 2, 1, 6, 0);
    CHECK(orientation_of(fy_exif_orientation, a.b, a.n) == 1);
    bytes r = tiff_blob(big, 5, 1, 6, 0);
    CHECK(orientation_of(fy_exif_orientation, r.b, r.n) == 1);
    bytes c2 = tiff_blob(big, 3, 2, 6, 0);
    CHECK(orientation_of(fy_exif_orientation, c2.b, c2.n) == 1);
  }
  /* Byte order matters: a big-endian 6 read as little-endian is 0x600. */
  bytes s = tiff_blob(1, 3, 1, 6, 0);
  memcpy(s.b, "II*\0", 4);
  CHECK(orientation_of(fy_exif_orientation, s.b, s.n) == 1);
}

static void test_tiff_hostile(void) {
  for (int big = 0; big <= 1; big++) {
    bytes good = tiff_blob(big, 3, 1, 6, 2);
    /* IFD offsets past, at and just before the end, and wrapping ones. */
    static const uint32_t offs[] = {0, 1, 4, 7, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFF8};
    for (int i = 0; i < 7; i++) {
      bytes s = good;
      s.n = 0;
      put_raw(&s, big ? "MM\0*" : "II*\0", 4);
      put32(&s, offs[i], big);
      s.n = good.n;
      CHECK_MSG(orientation_of(fy_exif_orientation, s.b, s.n) == 1, "offset %u", offs[i]);
    }
    for (size_t off = good.n - 2; off <= good.n + 2; off++) {
      bytes s = good;
      s.n = 4;
      put32(&s, (uint32_t)off, big);
      s.n = good.n;
      CHECK_MSG(orientation_of(fy_exif_orientation, s.b, s.n) == 1, "offset %zu", off);
    }
    /* A count far larger than the entries present. */
    bytes s = good;
    s.n = 8;
    put16(&s, 0xFFFF, big);
    s.n = good.n;
    CHECK(orientation_of(fy_exif_orientation, s.b, s.n) == 6);
    /* Every truncation: the orientation is found exactly when its whole
     * 12-byte entry (the third, at 8 + 2 + 24) is inside. */
    int bad = 0;
    for (size_t n = 0; n <= good.n; n++) {
      int want = n >= 8 + 2 + 36 ? 6 : 1;
      bad += orientation_of(fy_exif_orientation, good.b, n) != want;
    }
    CHECK_MSG(bad == 0, "big=%d: %d truncations wrong", big, bad);
  }
  CHECK(fy_exif_orientation(NULL, 0) == 1);
  CHECK(orientation_of(fy_exif_orientation, (const uint8_t *)"II*\0\x08\0\0", 7) == 1);
  CHECK(orientation_of(fy_exif_orientation, (const uint8_t *)"II+\0\x08\0\0\0\0\0", 10) == 1);
  /* Random data behind a valid header: must only ever give 1..8. */
  int bad = 0;
  for (uint64_t t = 0; t < 3000; t++) {
    bytes s = {.n = 0};
    size_t n = 8 + fy_rand_u64(1, t, 0) % 120;
    put_raw(&s, t & 1 ? "MM\0*" : "II*\0", 4);
    for (size_t i = 4; i < n; i++)
      put8(&s, (unsigned)fy_rand_u64(2, t, i));
    if (t % 3 == 0) { /* a small IFD offset, so entries get parsed */
      s.n = 4;
      put32(&s, (uint32_t)(fy_rand_u64(3, t, 0) % 16), t & 1);
      s.n = n;
    }
    int o = orientation_of(fy_exif_orientation, s.b, n);
    bad += o < 1 || o > 8;
  }
  CHECK(bad == 0);
}

/* ---------------------------------------------------------------- JPEG */

static void put_segment(bytes *s, unsigned marker, const void *p, size_t n) {
  put8(s, 0xFF);
  put8(s, marker);
  put16(s, (unsigned)(n + 2), 1);
  put_raw(s, p, n);
}

static void put_exif_app1(bytes *s, int big, unsigned o) {
  bytes t = tiff_blob(big, 3, 1, o, 1);
  uint8_t body[512];
  memcpy(body, "Exif\0\0", 6);
  memcpy(body + 6, t.b, t.n);
  put_segment(s, 0xE1, body, 6 + t.n);
}

static bytes jpeg_start(void) {
  bytes s = {.n = 0};
  put_raw(&s, "\xFF\xD8", 2);
  put_segment(&s, 0xE0, "JFIF\0\1\1\0\0\1\0\1\0\0", 14);
  return s;
}

static void put_sos_and_eoi(bytes *s) {
  put_segment(s, 0xDA, "\1\1\0\0\x3F\0", 6);
  put_raw(s, "\x12\x34\xFF\x00\x56\xFF\xD9", 7);
}

/* fy_jpeg_seg_next, the one segment walk: lenient (libjpeg's way) steps
 * over junk, fill bytes, stuffed zeros and markers without a length;
 * strict allows fill bytes only; lengths are checked against the data. */
static void test_jpeg_segments(void) {
  static const uint8_t f[] = {0xFF, 0xD8, 'a',  'b',  0xFF, 0xFF, 0xE0, 0,   4, 'x',
                              'y',  0xFF, 0xD0, 0xFF, 0x00, 0xFF, 0xDB, 0,   2, 0xFF,
                              0xDA, 0,    3,    'z',  1,    2,    0xFF, 0xD9};
  const uint8_t want[] = {0xE0, 0xDB, 0xDA};
  const size_t lens[] = {2, 0, 1};
  size_t pos = 2;
  fy_jpeg_seg s;
  for (int k = 0; k < 3; k++) {
    CHECK_MSG(fy_jpeg_seg_next(f, sizeof f, &pos, 0, &s) == 1 && s.marker == want[k] &&
                  s.len == lens[k],
              "segment %d: marker %02X len %zu", k, s.marker, s.len);
  }
  CHECK(s.data[0] == 'z' && pos == 24); /* the scan's data starts here */
  pos = 26;                             /* a reader of the scan moves past it */
  CHECK(fy_jpeg_seg_next(f, sizeof f, &pos, 0, &s) == 1 && s.marker == 0xD9 && s.len == 0);
  CHECK(fy_jpeg_seg_next(f, sizeof f, &pos, 0, &s) == 0); /* the data ends */
  pos = 2;
  CHECK(fy_jpeg_seg_next(f, sizeof f, &pos, 1, &s) == -1); /* junk: strict refuses */
  pos = 4; /* from the fill bytes: APP0, then RST0 out of place */
  CHECK(fy_jpeg_seg_next(f, sizeof f, &pos, 1, &s) == 1 && s.marker == 0xE0 && pos == 11);
  CHECK(fy_jpeg_seg_next(f, sizeof f, &pos, 1, &s) == -1);
  pos = sizeof f;
  CHECK(fy_jpeg_seg_next(f, sizeof f, &pos, 1, &s) == -1); /* strict: no end without EOI */
  static const uint8_t short1[] = {0xFF, 0xD8, 0xFF, 0xE1, 0, 1, 0, 0};
  static const uint8_t past[] = {0xFF, 0xD8, 0xFF, 0xE1, 0, 9, 0, 0};
  static const uint8_t cut[] = {0xFF, 0xD8, 0xFF, 0xE1, 0};
  const uint8_t *bad[] = {short1, past, cut};
  const size_t nbad[] = {sizeof short1, sizeof past, sizeof cut};
  for (int k = 0; k < 3; k++)
    for (int strict = 0; strict <= 1; strict++) {
      pos = 2;
      CHECK_MSG(fy_jpeg_seg_next(bad[k], nbad[k], &pos, strict, &s) == -1, "bad %d strict %d", k,
                strict);
    }
}

static void test_jpeg(void) {
  for (int big = 0; big <= 1; big++)
    for (unsigned o = 1; o <= 8; o++) {
      bytes s = jpeg_start();
      put_segment(&s, 0xE1, "http://ns.adobe.com/xap/1.0/\0<x/>", 33); /* XMP first */
      put_exif_app1(&s, big, o);
      put_sos_and_eoi(&s);
      CHECK_MSG(orientation_of(fy_jpeg_orientation, s.b, s.n) == (int)o, "big=%d o=%u", big, o);
    }
  /* Fill bytes before a marker, and the first Exif APP1 wins. */
  bytes s = jpeg_start();
  put_raw(&s, "\xFF\xFF\xFF", 3);
  put_exif_app1(&s, 0, 3);
  put_exif_app1(&s, 0, 6);
  put_sos_and_eoi(&s);
  CHECK(orientation_of(fy_jpeg_orientation, s.b, s.n) == 3);
  /* Nothing after SOS is metadata (the scan is not searched). */
  s = jpeg_start();
  put_segment(&s, 0xDA, "\1\1\0\0\x3F\0", 6);
  put_exif_app1(&s, 0, 6);
  CHECK(orientation_of(fy_jpeg_orientation, s.b, s.n) == 1);
  /* A segment length running past the end, and one below 2. */
  s = jpeg_start();
  put_raw(&s, "\377\341\377\360Exif\0\0II*\0", 14); /* length 0xFFF0 */
  CHECK(orientation_of(fy_jpeg_orientation, s.b, s.n) == 1);
  s = jpeg_start();
  put_raw(&s, "\xFF\xE1\x00\x01", 4);
  put_exif_app1(&s, 0, 6);
  CHECK(orientation_of(fy_jpeg_orientation, s.b, s.n) == 1);
  /* APP1 "Exif" with too little room for the header. */
  s = jpeg_start();
  put_segment(&s, 0xE1, "Exif\0", 5);
  CHECK(orientation_of(fy_jpeg_orientation, s.b, s.n) == 1);
  /* Not a JPEG. */
  CHECK(orientation_of(fy_jpeg_orientation, (const uint8_t *)"\x89PNG", 4) == 1);
  CHECK(fy_jpeg_orientation(NULL, 0) == 1);
  /* Every truncation of a file with the orientation at the end. */
  s = jpeg_start();
  put_exif_app1(&s, 1, 5);
  size_t full = s.n;
  put_sos_and_eoi(&s);
  int bad = 0;
  for (size_t n = 0; n <= s.n; n++)
    bad += orientation_of(fy_jpeg_orientation, s.b, n) != (n >= full ? 5 : 1);
  CHECK_MSG(bad == 0, "%d JPEG truncations wrong", bad);
}

/* ---------------------------------------------------------------- WebP */

static void put_riff_chunk(bytes *s, const char *fourcc, const void *p, size_t n) {
  put_raw(s, fourcc, 4);
  put32(s, (uint32_t)n, 0);
  put_raw(s, p, n);
  if (n & 1)
    put8(s, 0);
}

static bytes webp_with_exif(int prefix, unsigned o, int big) {
  bytes s = {.n = 0};
  put_raw(&s, "RIFF\0\0\0\0WEBP", 12);
  put_riff_chunk(&s, "VP8X", "\x08\0\0\0\0\0\0\0\0\0", 10);
  put_riff_chunk(&s, "ICCP", "odd", 3); /* odd size: padded */
  put_riff_chunk(&s, "VP8 ", "\0\0\0\0\0", 5);
  bytes t = tiff_blob(big, 3, 1, o, 0);
  uint8_t body[512];
  size_t n = 0;
  if (prefix) {
    memcpy(body, "Exif\0\0", 6);
    n = 6;
  }
  memcpy(body + n, t.b, t.n);
  put_riff_chunk(&s, "EXIF", body, n + t.n);
  s.b[4] = (uint8_t)(s.n - 8); /* RIFF size (small) */
  return s;
}

static void test_webp(void) {
  for (int prefix = 0; prefix <= 1; prefix++)
    for (unsigned o = 1; o <= 8; o++) {
      bytes s = webp_with_exif(prefix, o, (int)o & 1);
      CHECK_MSG(orientation_of(fy_webp_orientation, s.b, s.n) == (int)o, "prefix=%d o=%u", prefix,
                o);
    }
  bytes s = webp_with_exif(1, 6, 0);
  int bad = 0;
  for (size_t n = 0; n < s.n; n++)
    bad += orientation_of(fy_webp_orientation, s.b, n) != 1;
  CHECK_MSG(bad == 0, "%d WebP truncations wrong", bad);
  /* A chunk size that runs past the end stops the walk. */
  s = webp_with_exif(0, 6, 0);
  s.b[12 + 4 + 3] = 0x7F; /* VP8X size = 0x7F00000A */
  CHECK(orientation_of(fy_webp_orientation, s.b, s.n) == 1);
  s.b[12 + 4 + 3] = 0xFF; /* 0xFF00000A: would wrap a 32-bit sum */
  CHECK(orientation_of(fy_webp_orientation, s.b, s.n) == 1);
  CHECK(orientation_of(fy_webp_orientation, (const uint8_t *)"RIFF\0\0\0\0WAVE", 12) == 1);
  CHECK(fy_webp_orientation(NULL, 0) == 1);
}

/* ----------------------------------------------------------------- PNG */

static void put_png_chunk(bytes *s, const char *type, const void *p, size_t n) {
  put32(s, (uint32_t)n, 1);
  put_raw(s, type, 4);
  put_raw(s, p, n);
  put32(s, 0, 1); /* CRC: not the orientation reader's business */
}

static bytes png_with_exif(int where, unsigned o, int prefix) {
  bytes s = {.n = 0};
  put_raw(&s, "\x89PNG\r\n\x1A\n", 8);
  put_png_chunk(&s, "IHDR", "\0\0\0\1\0\0\0\1\x08\x02\0\0\0", 13);
  bytes t = tiff_blob((int)o & 1, 3, 1, o, 1);
  uint8_t body[512];
  size_t n = prefix ? 6 : 0;
  memcpy(body, "Exif\0\0", 6);
  memcpy(body + n, t.b, t.n);
  if (where == 0)
    put_png_chunk(&s, "eXIf", body, n + t.n);
  put_png_chunk(&s, "IDAT", "\x78\x9c\0\0\0\0", 6);
  if (where == 1)
    put_png_chunk(&s, "eXIf", body, n + t.n);
  put_png_chunk(&s, "IEND", "", 0);
  if (where == 2) /* after IEND: not part of the image */
    put_png_chunk(&s, "eXIf", body, n + t.n);
  return s;
}

static void test_png(void) {
  for (unsigned o = 1; o <= 8; o++) {
    for (int prefix = 0; prefix <= 1; prefix++) {
      bytes before = png_with_exif(0, o, prefix), after = png_with_exif(1, o, prefix);
      CHECK_MSG(orientation_of(fy_png_orientation, before.b, before.n) == (int)o, "o=%u", o);
      CHECK_MSG(orientation_of(fy_png_orientation, after.b, after.n) == (int)o, "late o=%u", o);
    }
    bytes past = png_with_exif(2, o, 0);
    CHECK(orientation_of(fy_png_orientation, past.b, past.n) == 1);
  }
  bytes s = png_with_exif(1, 6, 0);
  int bad = 0;
  size_t exif_end = s.n - 12 - 4; /* the eXIf chunk's data ends before its CRC */
  for (size_t n = 0; n <= s.n; n++)
    bad += orientation_of(fy_png_orientation, s.b, n) != (n >= exif_end ? 6 : 1);
  CHECK_MSG(bad == 0, "%d PNG truncations wrong", bad);
  /* A chunk length running past the end (also a wrapping one). */
  s = png_with_exif(0, 6, 0);
  s.b[8] = 0x7F;
  CHECK(orientation_of(fy_png_orientation, s.b, s.n) == 1);
  s.b[8] = 0xFF;
  CHECK(orientation_of(fy_png_orientation, s.b, s.n) == 1);
  CHECK(fy_png_orientation(NULL, 0) == 1);
}

/* Files: the codec fixtures and, when present, the corpus's JPEGs. */
static void test_files(void) {
  static const struct {
    const char *name;
    int o;
    int (*fn)(const uint8_t *, size_t);
  } cases[] = {{"orient6.png", 6, fy_png_orientation},
               {"orient8_late.png", 8, fy_png_orientation},
               {"rgb8.png", 1, fy_png_orientation},
               {"orient3.webp", 3, fy_webp_orientation},
               {"lossy.webp", 1, fy_webp_orientation}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/codecs/%s", check_fixtures(), cases[i].name);
    fy_buf b = {0};
    size_t n;
    int rc = fy_read_file(path, 0, &b, &n);
    CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
    if (rc == FERRY_OK)
      CHECK_MSG(orientation_of(cases[i].fn, b.p, n) == cases[i].o, "%s", cases[i].name);
    fy_buf_free(&b);
  }
  const char *corpus = check_corpus("test_exif corpus JPEGs");
  for (int o = 1; corpus && o <= 8; o++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/photos/exif_orient%d.jpg", corpus, o);
    fy_buf b = {0};
    size_t n;
    int rc = fy_read_file(path, 0, &b, &n);
    CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
    if (rc == FERRY_OK)
      CHECK_MSG(orientation_of(fy_jpeg_orientation, b.p, n) == o, "exif_orient%d.jpg", o);
    fy_buf_free(&b);
  }
}

/* ----------------------------------------------------------- fy_orient */

/* The stored pixel of upright (x, y), straight from Pillow's transposes:
 * the definition the tiled code is checked against. */
static void stored_of(int x, int y, int w, int h, int o, int *sx, int *sy) {
  switch (o) {
  case 2: *sx = w - 1 - x, *sy = y; break;
  case 3: *sx = w - 1 - x, *sy = h - 1 - y; break;
  case 4: *sx = x, *sy = h - 1 - y; break;
  case 5: *sx = y, *sy = x; break;
  case 6: *sx = y, *sy = h - 1 - x; break;
  case 7: *sx = w - 1 - y, *sy = h - 1 - x; break;
  case 8: *sx = w - 1 - y, *sy = x; break;
  default: *sx = x, *sy = y; break;
  }
}

static void reference_orient(const uint8_t *src, int w, int h, int c, size_t stride, int o,
                             uint8_t *dst) {
  int ow, oh;
  fy_oriented_size(w, h, o, &ow, &oh);
  for (int y = 0; y < oh; y++)
    for (int x = 0; x < ow; x++) {
      int sx, sy;
      stored_of(x, y, w, h, o, &sx, &sy);
      memcpy(dst + ((size_t)y * ow + x) * c, src + (size_t)sy * stride + (size_t)sx * c, (size_t)c);
    }
}

/* Pillow's ImageOps.exif_transpose of a 7x5 image, for o = 1..8. */
static void test_orient_pillow(void) {
  char path[4096];
  fy_buf a = {0}, b = {0};
  size_t na, nb;
  snprintf(path, sizeof path, "%s/codecs/orient_src_7x5.rgb", check_fixtures());
  int rc = fy_read_file(path, 0, &a, &na);
  snprintf(path, sizeof path, "%s/codecs/orient_pillow_7x5.rgb", check_fixtures());
  rc = rc ? rc : fy_read_file(path, 0, &b, &nb);
  CHECK_MSG(rc == FERRY_OK && na == 105 && nb == 8 * 105, "%s", ferry_last_error());
  for (int o = 1; rc == FERRY_OK && o <= 8; o++) {
    uint8_t out[105], ref[105];
    int ow = 0, oh = 0;
    fy_orient(a.p, 7, 5, 3, 21, o, out, &ow, &oh);
    CHECK_MSG(o >= 5 ? ow == 5 && oh == 7 : ow == 7 && oh == 5, "o=%d: %dx%d", o, ow, oh);
    CHECK_MSG(memcmp(out, (uint8_t *)b.p + (o - 1) * 105, 105) == 0, "o=%d differs from Pillow", o);
    reference_orient(a.p, 7, 5, 3, 21, o, ref);
    CHECK_MSG(memcmp(ref, (uint8_t *)b.p + (o - 1) * 105, 105) == 0, "o=%d: reference", o);
  }
  fy_buf_free(&a);
  fy_buf_free(&b);
}

static uint8_t *random_image(int w, int h, int c, size_t stride, uint64_t seed) {
  uint8_t *p = malloc(stride * (size_t)h + 1);
  for (size_t i = 0; i < stride * (size_t)h; i++)
    p[i] = (uint8_t)fy_rand_u64(seed, 0, i);
  return p;
}

/* Sizes that straddle the 64-pixel tiles, every channel count, and padded
 * source rows; invalid orientations copy. */
static void test_orient_reference(void) {
  static const int sizes[][2] = {{1, 1}, {1, 9}, {9, 1}, {64, 64}, {65, 3}, {131, 70}, {200, 129}};
  int bad = 0, runs = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int c = 1; c <= 4; c++)
      for (int o = -1; o <= 9; o++) {
        int w = sizes[s][0], h = sizes[s][1], ow, oh;
        size_t stride = (size_t)w * c + (s & 1) * 5;
        uint8_t *src = random_image(w, h, c, stride, s * 100 + (uint64_t)c);
        size_t n = (size_t)w * h * c;
        uint8_t *out = malloc(n), *ref = malloc(n);
        fy_orient(src, w, h, c, stride, o, out, &ow, &oh);
        reference_orient(src, w, h, c, stride, o >= 1 && o <= 8 ? o : 1, ref);
        int swap = o >= 5 && o <= 8;
        bad += memcmp(out, ref, n) != 0 || ow != (swap ? h : w) || oh != (swap ? w : h);
        runs++;
        free(src);
        free(out);
        free(ref);
      }
  CHECK_MSG(bad == 0, "%d of %d fy_orient runs differ from the reference", bad, runs);
}

static void test_oriented_size(void) {
  for (int o = -1; o <= 9; o++) {
    int ow, oh;
    fy_oriented_size(30, 20, o, &ow, &oh);
    int swap = o >= 5 && o <= 8;
    CHECK_MSG(ow == (swap ? 20 : 30) && oh == (swap ? 30 : 20), "o=%d", o);
  }
}

/* Copies a rectangle of a tightly packed image. */
static void crop(const uint8_t *src, int w, int c, ferry_rect r, uint8_t *dst) {
  for (int y = 0; y < r.height; y++)
    memcpy(dst + (size_t)y * r.width * c, src + ((size_t)(r.y + y) * w + r.x) * c,
           (size_t)r.width * c);
}

/* Cropping the upright image at R == orienting the stored crop at
 * fy_rect_to_stored(R). */
static void test_rect_to_stored(void) {
  const int w = 23, h = 14, c = 3;
  uint8_t *src = random_image(w, h, c, (size_t)w * c, 99);
  uint8_t *up = malloc((size_t)w * h * c), *a = malloc((size_t)w * h * c);
  uint8_t *b = malloc((size_t)w * h * c), *d = malloc((size_t)w * h * c);
  int bad = 0, bounds = 0;
  for (int o = 1; o <= 8; o++) {
    int ow, oh;
    fy_orient(src, w, h, c, (size_t)w * c, o, up, &ow, &oh);
    for (uint64_t t = 0; t < 200; t++) {
      ferry_rect r;
      r.x = (int)(fy_rand_u64(5, t, 0) % (uint64_t)ow);
      r.y = (int)(fy_rand_u64(5, t, 1) % (uint64_t)oh);
      r.width = 1 + (int)(fy_rand_u64(5, t, 2) % (uint64_t)(ow - r.x));
      r.height = 1 + (int)(fy_rand_u64(5, t, 3) % (uint64_t)(oh - r.y));
      if (t == 0)
        r = (ferry_rect){0, 0, ow, oh};
      if (t == 1)
        r = (ferry_rect){ow - 1, oh - 1, 1, 1};
      ferry_rect s = fy_rect_to_stored(r, w, h, o);
      if (s.x < 0 || s.y < 0 || s.x + s.width > w || s.y + s.height > h ||
          (long)s.width * s.height != (long)r.width * r.height) {
        bounds++;
        continue;
      }
      crop(up, ow, c, r, a);
      crop(src, w, c, s, b);
      int cw, ch;
      fy_orient(b, s.width, s.height, c, (size_t)s.width * c, o, d, &cw, &ch);
      bad += cw != r.width || ch != r.height || memcmp(a, d, (size_t)r.width * r.height * c);
    }
  }
  CHECK_MSG(bounds == 0, "%d stored rectangles out of bounds", bounds);
  CHECK_MSG(bad == 0, "%d crops differ", bad);
  ferry_rect all = fy_rect_to_stored((ferry_rect){0, 0, 0, 0}, w, h, 6);
  CHECK(all.width == 0);
  ferry_rect same = fy_rect_to_stored((ferry_rect){1, 2, 3, 4}, w, h, 0);
  CHECK(same.x == 1 && same.y == 2 && same.width == 3 && same.height == 4);
  free(src);
  free(up);
  free(a);
  free(b);
  free(d);
}

/* Whether the EXIF names the camera (Make or Model in IFD0): the keeper's
 * "original" (src/catalog/keeper.c). */
static void test_names_camera(void) {
  for (int big = 0; big <= 1; big++) {
    bytes none = tiff_blob(big, 3, 1, 1, 0), make = tiff_blob(big, 3, 1, 1, 1),
          both = tiff_blob(big, 3, 1, 1, 2);
    CHECK(orientation_of(fy_exif_names_camera, none.b, none.n) == 0);
    CHECK(orientation_of(fy_exif_names_camera, make.b, make.n) == 1);
    CHECK(orientation_of(fy_exif_names_camera, both.b, both.n) == 1);
    for (size_t n = 0; n < make.n; n++) /* every truncation, read in bounds */
      CHECK(orientation_of(fy_exif_names_camera, make.b, n) == (n >= 8 + 2 + 12 ? 1 : 0));
    bytes s = jpeg_start();
    put_exif_app1(&s, big, 6);
    put_sos_and_eoi(&s);
    CHECK(orientation_of(fy_jpeg_names_camera, s.b, s.n) == 1);
  }
  bytes s = jpeg_start(); /* no EXIF, or EXIF only past the scan */
  put_sos_and_eoi(&s);
  CHECK(orientation_of(fy_jpeg_names_camera, s.b, s.n) == 0);
  s = jpeg_start();
  put_segment(&s, 0xDA, "\1\1\0\0\x3F\0", 6);
  put_exif_app1(&s, 0, 1);
  CHECK(orientation_of(fy_jpeg_names_camera, s.b, s.n) == 0);
  CHECK(orientation_of(fy_jpeg_names_camera, (const uint8_t *)"\x89PNG", 4) == 0);
  CHECK(fy_jpeg_names_camera(NULL, 0) == 0);
}

int main(void) {
  test_tiff_orientations();
  test_tiff_hostile();
  test_jpeg_segments();
  test_jpeg();
  test_names_camera();
  test_webp();
  test_png();
  test_files();
  test_orient_pillow();
  test_orient_reference();
  test_oriented_size();
  test_rect_to_stored();
  return check_done();
}
