/* test_codecs_hostile.c — the decoders against crafted input (issue 52):
 * BMPs whose pixel data is shorter than their header says (every cut of
 * each fixture, and a 54-byte header of 13000 x 13000 pixels) refused as
 * damaged before anything is allocated; a BMP whose pixels would start
 * inside its own header refused; progressive JPEGs whose scans go over the
 * image too many times refused before libjpeg decodes a scan; HEIC files
 * with flipped bits in their HEVC data refused as damaged. */
#include "codec/codec.h"

#include "check.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A fixture of tests/fixtures/codecs as an exact-size heap copy (the
 * sanitizers then see any read past its end); NULL, and a failure, when
 * it cannot be read. */
static uint8_t *fixture(const char *name, size_t *n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/codecs/%s", check_fixtures(), name);
  uint8_t *d = check_slurp(path, n);
  CHECK_MSG(d && *n > 0, "cannot read %s", path);
  return d;
}

static uint8_t *copy_of(const uint8_t *p, size_t n) {
  uint8_t *q = malloc(n ? n : 1);
  if (n)
    memcpy(q, p, n);
  return q;
}

static fy_codec_req req3(void) {
  fy_codec_req r;
  memset(&r, 0, sizeof r);
  r.channels = 3;
  r.max_pixels = FERRY_DEFAULT_MAX_PIXELS;
  r.allow_dct_scaling = 1;
  return r;
}

static void free_dec(fy_decoder *dec) {
  fy_buf_free(&dec->pixels);
  fy_buf_free(&dec->temp);
  fy_buf_free(&dec->temp2);
}

static void put16(uint8_t *p, unsigned v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
  put16(p, v & 0xFFFF);
  put16(p + 2, v >> 16);
}

/* ----------------------------------------------------------------- BMP */

/* Every cut of a BMP fixture short of its whole length fails as damaged,
 * naming the file (before issue 52 the missing rows decoded as black); the
 * whole file still decodes. */
static void bmp_every_cut(const char *name) {
  size_t n;
  uint8_t *d = fixture(name, &n);
  if (!d)
    return;
  fy_decoder dec = {0};
  fy_codec_req req = req3();
  fy_decoded out;
  int wrong = 0, unnamed = 0, untold = 0;
  size_t first_wrong = 0;
  for (size_t len = 0; len < n; len++) {
    uint8_t *cut = copy_of(d, len);
    int rc = fy_bmp_decode(&dec, cut, len, name, &req, &out);
    if (rc != FERRY_ECORRUPT && !wrong++)
      first_wrong = len;
    unnamed += strstr(ferry_last_error(), name) == NULL;
    /* past the header the message says what is wrong */
    untold += len > 200 && rc == FERRY_ECORRUPT && !strstr(ferry_last_error(), "truncated");
    free(cut);
  }
  CHECK_MSG(wrong == 0, "%s: %d of %zu cuts did not fail as damaged (the first at %zu bytes)", name,
            wrong, n, first_wrong);
  CHECK_MSG(unnamed == 0, "%s: %d messages without the file's name", name, unnamed);
  CHECK_MSG(untold == 0, "%s: %d messages do not say the file is truncated", name, untold);
  uint8_t *whole = copy_of(d, n);
  CHECK_MSG(fy_bmp_decode(&dec, whole, n, name, &req, &out) == FERRY_OK, "%s: %s", name,
            ferry_last_error());
  free(whole);
  free_dec(&dec);
  free(d);
}

/* A BMP file header and BITMAPINFOHEADER (54 bytes) of w x h pixels at
 * bpp bits, pixels at `offset`. */
static void bmp_header(uint8_t *p, int32_t w, int32_t h, int bpp, uint32_t offset, uint32_t size) {
  memset(p, 0, 54);
  p[0] = 'B';
  p[1] = 'M';
  put32(p + 2, size);
  put32(p + 10, offset);
  put32(p + 14, 40);
  put32(p + 18, (uint32_t)w);
  put32(p + 22, (uint32_t)h);
  put16(p + 26, 1);
  put16(p + 28, (unsigned)bpp);
}

/* Issue 52 item 12: 54 bytes declaring 13000 x 13000 pixels (under the
 * pixel limit) took 14.6 s and 1 GB to decode into black: refused as
 * truncated at once, nothing allocated. */
static void bmp_header_only_bomb(void) {
  uint8_t *p = malloc(54);
  bmp_header(p, 13000, 13000, 24, 54, 54);
  fy_decoder dec = {0};
  fy_codec_req req = req3();
  fy_decoded out;
  double t0 = now_s();
  int rc = fy_bmp_decode(&dec, p, 54, "bomb.bmp", &req, &out);
  double dt = now_s() - t0;
  CHECK_MSG(rc == FERRY_ECORRUPT && strstr(ferry_last_error(), "bomb.bmp") &&
                strstr(ferry_last_error(), "truncated"),
            "54-byte 13000x13000 BMP: %d %s", rc, ferry_last_error());
  CHECK_MSG(dt < 1.0, "54-byte 13000x13000 BMP: %.2f s", dt);
  CHECK_MSG(dec.pixels.cap == 0 && dec.temp.cap == 0, "allocated %zu + %zu bytes for it",
            dec.pixels.cap, dec.temp.cap);
  /* top-down (negative height) the same */
  bmp_header(p, 13000, -13000, 24, 54, 54);
  rc = fy_bmp_decode(&dec, p, 54, "bomb.bmp", &req, &out);
  CHECK_MSG(rc == FERRY_ECORRUPT, "top-down 13000x13000 BMP: %d %s", rc, ferry_last_error());
  free_dec(&dec);
  free(p);
}

/* Pixels said to start inside the header (stb_image then reads a palette
 * it never filled) are damage too; so is a 2x2 24-bit BMP without its last
 * row's padding (Pillow refuses it alike). Top down (a negative height),
 * the same BMP decodes, top row first (it was refused before issue 52:
 * stb_image's header call gives the height as stored). */
static void bmp_offsets(void) {
  enum { W = 2, H = 2 };
  size_t n = 54 + 8 * H; /* rows of 6 bytes, padded to 8 */
  uint8_t *p = malloc(n);
  fy_decoder dec = {0};
  fy_codec_req req = req3();
  fy_decoded out;
  bmp_header(p, W, H, 8, 40, 54 + 4 * H); /* 40 < 54: inside the header */
  memset(p + 54, 0, 4 * H);
  int rc = fy_bmp_decode(&dec, p, 54 + 4 * H, "inside.bmp", &req, &out);
  CHECK_MSG(rc == FERRY_ECORRUPT && strstr(ferry_last_error(), "inside.bmp"),
            "pixels inside the header: %d %s", rc, ferry_last_error());
  bmp_header(p, W, -H, 24, 54, (uint32_t)n);
  memset(p + 54, 0x10, 8);     /* the top row, stored first */
  memset(p + 54 + 8, 0xF0, 8); /* the bottom row */
  rc = fy_bmp_decode(&dec, p, n, "topdown.bmp", &req, &out);
  CHECK_MSG(rc == FERRY_OK && out.image.width == W && out.image.height == H &&
                out.image.data[0] == 0x10 && out.image.data[out.image.stride] == 0xF0,
            "top-down 2x2 BMP: %d %s", rc, ferry_last_error());
  rc = fy_bmp_decode(&dec, p, n - 2, "unpadded.bmp", &req, &out);
  CHECK_MSG(rc == FERRY_ECORRUPT && strstr(ferry_last_error(), "unpadded.bmp") &&
                strstr(ferry_last_error(), "truncated"),
            "last row without its padding: %d %s", rc, ferry_last_error());
  free_dec(&dec);
  free(p);
}

static void test_bmp(void) {
  static const char *names[] = {"rgb24.bmp", "palette8.bmp", "palette16.bmp",
                                "mono1.bmp", "gray8.bmp",    "rgba32.bmp"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    bmp_every_cut(names[i]);
  bmp_header_only_bomb();
  bmp_offsets();
}

/* ---------------------------------------------------------------- JPEG */

typedef struct jbuf {
  uint8_t *p;
  size_t n, cap;
} jbuf;

static void jput(jbuf *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void jmarker(jbuf *b, uint8_t m, const uint8_t *seg, size_t len) {
  uint8_t h[4] = {0xFF, m, (uint8_t)((len + 2) >> 8), (uint8_t)(len + 2)};
  jput(b, h, 4);
  jput(b, seg, len);
}

/* The structure of a progressive grey JPEG of w x h pixels: SOF2, a DC
 * scan, then `ac` scans of coefficients 1..63, each followed by `data`
 * bytes of (meaningless) entropy-coded data, stuffed bytes and a restart
 * marker among them, and EOI. No tables: decoding it would fail at once;
 * the scan budget must refuse it before that. */
static jbuf progressive(int w, int h, int ac, size_t data) {
  jbuf b = {0};
  jput(&b, "\xFF\xD8", 2);
  uint8_t sof[9] = {8, (uint8_t)(h >> 8), (uint8_t)h, (uint8_t)(w >> 8), (uint8_t)w, 1, 1, 0x11, 0};
  jmarker(&b, 0xC2, sof, sizeof sof);
  uint8_t *junk = calloc(1, data + 4);
  if (data >= 4) {
    junk[1] = 0xFF; /* FF 00: a stuffed byte */
    junk[data - 2] = 0xFF;
    junk[data - 1] = 0xD3; /* RST3 */
  }
  for (int s = 0; s <= ac; s++) {
    uint8_t sos[6] = {1, 1, 0x00, s ? 1 : 0, s ? 63 : 0, 0};
    jmarker(&b, 0xDA, sos, sizeof sos);
    jput(&b, junk, data);
  }
  jput(&b, "\xFF\xD9", 2);
  free(junk);
  return b;
}

static int jpeg_decode(const jbuf *b, const char *name) {
  fy_decoder dec = {0};
  fy_codec_req req = req3();
  fy_decoded out;
  uint8_t *copy = copy_of(b->p, b->n);
  int rc = fy_jpeg_decode(&dec, copy, b->n, name, &req, &out);
  free(copy);
  free_dec(&dec);
  return rc;
}

/* Issue 52 item 20: the work of a progressive JPEG grows with scans x
 * area; a file whose scans go over a 13000 x 13000 image 41 times (its
 * blocks visited 41 times, where a usual progressive file visits them
 * 4-6 times) is refused by its structure, before libjpeg reads a scan, as
 * is a file of more than 1,000 scans whatever its size; a usual one of 10
 * scans goes on to libjpeg (which here fails: the file has no tables). */
static void test_jpeg_scan_budget(void) {
  jbuf b = progressive(13000, 13000, 40, 16);
  double t0 = now_s();
  int rc = jpeg_decode(&b, "passes.jpg");
  double dt = now_s() - t0;
  CHECK_MSG(rc == FERRY_ETOO_LARGE && strstr(ferry_last_error(), "passes.jpg") &&
                strstr(ferry_last_error(), "scans"),
            "41 scans of 13000x13000: %d %s", rc, ferry_last_error());
  CHECK_MSG(dt < 1.0, "41 scans of 13000x13000: %.2f s", dt);
  free(b.p);
  b = progressive(64, 64, 5000, 8); /* the count: 5,001 scans of a small image */
  rc = jpeg_decode(&b, "count.jpg");
  CHECK_MSG(rc == FERRY_ETOO_LARGE && strstr(ferry_last_error(), "count.jpg") &&
                strstr(ferry_last_error(), "more than 1000 scans"),
            "5,001 scans of 64x64: %d %s", rc, ferry_last_error());
  free(b.p);
  b = progressive(4000, 4000, 9, 16); /* 10 scans: libjpeg's business */
  rc = jpeg_decode(&b, "ten.jpg");
  CHECK_MSG(rc == FERRY_ECORRUPT && strstr(ferry_last_error(), "ten.jpg"),
            "10 scans of 4000x4000 (no tables): %d %s", rc, ferry_last_error());
  free(b.p);
  b = progressive(64, 64, 900, 8); /* many scans of a small image: under the budget */
  rc = jpeg_decode(&b, "small.jpg");
  CHECK_MSG(rc == FERRY_ECORRUPT, "901 scans of 64x64 (no tables): %d %s", rc, ferry_last_error());
  free(b.p);
}

/* ---------------------------------------------------------------- HEIF */

/* Flips `flips` bits of d's mdat payload past its first 16 bytes (the
 * first NAL unit's length and slice header), at places a fixed linear
 * congruential sequence draws from `seed`. 0 when there is no mdat box. */
static int garble(uint8_t *d, size_t n, uint64_t seed, int flips) {
  size_t i = 0;
  while (i + 8 <= n && memcmp(d + i + 4, "mdat", 4)) {
    size_t len = (size_t)d[i] << 24 | (size_t)d[i + 1] << 16 | (size_t)d[i + 2] << 8 | d[i + 3];
    if (len < 8)
      return 0;
    i += len;
  }
  if (i + 8 > n)
    return 0;
  size_t len = (size_t)d[i] << 24 | (size_t)d[i + 1] << 16 | (size_t)d[i + 2] << 8 | d[i + 3];
  size_t a = i + 8 + 16, z = i + len < n ? i + len : n;
  if (a >= z)
    return 0;
  uint64_t x = seed * 2654435761u + 1;
  for (int k = 0; k < flips; k++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    d[a + (size_t)((x >> 33) % (z - a))] ^= (uint8_t)(1u << ((x >> 29) % 8));
  }
  return 1;
}

/* Issue 52 item 13: HEIC files with flipped bits in their HEVC data
 * decoded to wrong rows with no error (libheif 1.15's libde265 plugin
 * drops libde265's errors and warnings); through heif_hevc.c's plugin every
 * copy with 50 bits flipped (20 seeds a fixture) is FERRY_ECORRUPT naming
 * the file. A single flipped bit is caught 18-20 times in 20 here (what
 * still parses as HEVC to the end of its slice is not seen: at least 16
 * asserted); the whole files decode. */
static void test_heif_garbled(void) {
  static const char *names[] = {"rgb.heic", "gray.heic", "alpha.heic"};
  enum { SEEDS = 20 };
  fy_decoder dec = {0};
  fy_codec_req req = req3();
  fy_decoded out;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    size_t n;
    uint8_t *d = fixture(names[i], &n);
    if (!d)
      continue;
    int rc = fy_heif_decode(&dec, d, n, names[i], &req, &out);
    if (rc == FERRY_EUNSUPPORTED && strstr(ferry_last_error(), "built without libheif")) {
      SKIP("garbled HEIC: %s", ferry_last_error());
      free(d);
      break;
    }
    CHECK_MSG(rc == FERRY_OK, "%s: %s", names[i], ferry_last_error());
    int missed50 = 0, caught1 = 0, unnamed = 0;
    for (int s = 0; s < 2 * SEEDS; s++) {
      int flips = s < SEEDS ? 50 : 1;
      uint8_t *g = copy_of(d, n);
      CHECK_MSG(garble(g, n, (uint64_t)(s % SEEDS), flips), "%s: no mdat box", names[i]);
      rc = fy_heif_decode(&dec, g, n, names[i], &req, &out);
      int caught = rc == FERRY_ECORRUPT && strstr(ferry_last_error(), "damaged image data");
      unnamed += rc != FERRY_OK && !strstr(ferry_last_error(), names[i]);
      if (flips == 50 && !caught && missed50++ == 0)
        fprintf(stderr, "%s, 50 bits flipped (seed %d): %d %s\n", names[i], s, rc,
                ferry_last_error());
      caught1 += flips == 1 && caught;
      free(g);
    }
    CHECK_MSG(missed50 == 0, "%s: %d of %d copies with 50 bits flipped not refused", names[i],
              missed50, SEEDS);
    CHECK_MSG(caught1 >= 16, "%s: %d of %d copies with one bit flipped refused", names[i], caught1,
              SEEDS);
    CHECK_MSG(unnamed == 0, "%s: %d messages without the file's name", names[i], unnamed);
    free(d);
  }
  free_dec(&dec);
}

int main(void) {
  check_part("BMP");
  test_bmp();
  check_part("JPEG scan budget");
  test_jpeg_scan_budget();
  check_part("HEIF damage");
  test_heif_garbled();
  return check_done();
}
