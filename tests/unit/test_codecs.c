/* test_codecs.c — format sniffing, and PNG/WebP probe and decode: pixels
 * against Pillow's decodes (goldens written by tests/gen/gen_codec_fixtures.py),
 * header fields, limits, and damaged data (truncation at every length, bad
 * CRCs, random bytes, empty input). */
#include "codec/codec.h"

#include "check.h"

#include <dirent.h>
#include <stdint.h>
#include <string.h>

#define DIR_CODECS "codecs"

/* ------------------------------------------------------------- helpers */

/* Reads dir/name (dir NULL: the fixtures' codecs folder) into a fresh
 * exact-size heap copy, so that the sanitizers catch any read past the end.
 * Returns NULL (and records a failure) when the file is missing. */
static uint8_t *load(const char *dir, const char *name, size_t *size) {
  char path[4096];
  if (dir)
    snprintf(path, sizeof path, "%s/%s", dir, name);
  else
    snprintf(path, sizeof path, "%s/%s/%s", check_fixtures(), DIR_CODECS, name);
  fy_buf buf = {0};
  int rc = fy_read_file(path, 0, &buf, size);
  CHECK_MSG(rc == FERRY_OK, "cannot read %s: %s", path, ferry_last_error());
  if (rc) {
    fy_buf_free(&buf);
    return NULL;
  }
  uint8_t *copy = malloc(*size ? *size : 1);
  memcpy(copy, buf.p, *size);
  fy_buf_free(&buf);
  return copy;
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n) {
  uint8_t *q = malloc(n ? n : 1);
  if (n)
    memcpy(q, p, n);
  return q;
}

static void free_decoder(fy_decoder *dec) {
  fy_buf_free(&dec->pixels);
  fy_buf_free(&dec->temp);
  fy_buf_free(&dec->temp2);
}

static fy_codec_req make_req(int channels) {
  fy_codec_req r;
  memset(&r, 0, sizeof r);
  r.channels = channels;
  r.max_pixels = FERRY_DEFAULT_MAX_PIXELS;
  r.allow_dct_scaling = 1;
  return r;
}

typedef int (*decode_fn)(fy_decoder *, const uint8_t *, size_t, const char *, const fy_codec_req *,
                         fy_decoded *);
typedef int (*probe_fn)(const uint8_t *, size_t, const char *, ferry_info *);

static decode_fn decoder_for(ferry_format f) {
  return f == FERRY_FORMAT_PNG    ? fy_png_decode
         : f == FERRY_FORMAT_WEBP ? fy_webp_decode
         : f == FERRY_FORMAT_TIFF ? fy_tiff_decode
         : f == FERRY_FORMAT_GIF  ? fy_gif_decode
         : f == FERRY_FORMAT_HEIF ? fy_heif_decode
         : f == FERRY_FORMAT_BMP  ? fy_bmp_decode
                                  : NULL;
}

static probe_fn prober_for(ferry_format f) {
  return f == FERRY_FORMAT_PNG    ? fy_png_probe
         : f == FERRY_FORMAT_WEBP ? fy_webp_probe
         : f == FERRY_FORMAT_TIFF ? fy_tiff_probe
         : f == FERRY_FORMAT_GIF  ? fy_gif_probe
         : f == FERRY_FORMAT_HEIF ? fy_heif_probe
         : f == FERRY_FORMAT_BMP  ? fy_bmp_probe
                                  : NULL;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static uint8_t luma(const uint8_t *p) {
  return (uint8_t)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16);
}

/* Checks the fields every PNG/WebP decode must set. */
static void check_decoded(const fy_decoded *out, int w, int h, int c, const char *what) {
  CHECK_MSG(out->image.width == w && out->image.height == h, "%s: %dx%d, want %dx%d", what,
            out->image.width, out->image.height, w, h);
  CHECK_MSG(out->image.channels == c && out->image.stride == (size_t)w * c, "%s: layout", what);
  CHECK_MSG(out->src_w == w && out->src_h == h, "%s: src size", what);
  CHECK_MSG(out->x0 == 0 && out->y0 == 0 && out->sx == 1 && out->sy == 1, "%s: box", what);
  CHECK_MSG(out->scale_num == 1 && out->scale_denom == 1, "%s: scale", what);
}

/* --------------------------------------------------------------- sniff */

static void test_sniff_bytes(void) {
  static const struct {
    const char *bytes;
    size_t n;
    ferry_format want;
  } cases[] = {
      {"\xFF\xD8\xFF\xE0", 4, FERRY_FORMAT_JPEG},
      {"\xFF\xD8\xFF", 3, FERRY_FORMAT_JPEG},
      {"\xFF\xD8", 2, FERRY_FORMAT_UNKNOWN},
      {"\xFF\xD8\x00\xE0", 4, FERRY_FORMAT_UNKNOWN},
      {"\x89PNG\r\n\x1A\n\0\0\0\rIHDR", 16, FERRY_FORMAT_PNG},
      {"\x89PNG\r\n\x1A", 7, FERRY_FORMAT_UNKNOWN},
      {"\x89PNG\n\r\x1A\n", 8, FERRY_FORMAT_UNKNOWN}, /* line ends swapped in transit */
      {"RIFF\x10\0\0\0WEBPVP8 ", 16, FERRY_FORMAT_WEBP},
      {"RIFF\x10\0\0\0WAVEfmt ", 16, FERRY_FORMAT_UNKNOWN},
      {"RIFF\x10\0\0\0WEB", 11, FERRY_FORMAT_UNKNOWN},
      {"GIF87a\x01\0", 8, FERRY_FORMAT_GIF},
      {"GIF89a\x01\0", 8, FERRY_FORMAT_GIF},
      {"GIF88a\x01\0", 8, FERRY_FORMAT_UNKNOWN},
      {"BM\x36\0\0\0\0\0\0\0\x36\0\0\0", 14, FERRY_FORMAT_BMP},
      {"BMW", 3, FERRY_FORMAT_UNKNOWN},
      {"II*\0\x08\0\0\0", 8, FERRY_FORMAT_TIFF},
      {"MM\0*\0\0\0\x08", 8, FERRY_FORMAT_TIFF},
      {"II\0*\0\0\0\x08", 8, FERRY_FORMAT_UNKNOWN},
      {"II*\0\x10\0\0\0CR\x02\0", 12, FERRY_FORMAT_RAW},         /* Canon CR2 */
      {"IIRO\x08\0\0\0\0\0\0\0\0\0\0\0", 16, FERRY_FORMAT_RAW},  /* Olympus ORF */
      {"IIU\0\x08\0\0\0\0\0\0\0\0\0\0\0", 16, FERRY_FORMAT_RAW}, /* Panasonic RW2 */
      {"FUJIFILMCCD-RAW 0201", 20, FERRY_FORMAT_RAW},
      {"\0\0\0\x18"
       "ftypcrx \0\0\0\x01",
       16, FERRY_FORMAT_RAW}, /* Canon CR3 */
      /* a TIFF whose first IFD has DNGVersion (50706 = 0xC612): DNG */
      {"II*\0\x08\0\0\0\x01\0\x12\xC6\x01\0\x04\0\0\0\x01\x04\0\0", 22, FERRY_FORMAT_RAW},
      /* one whose first IFD has Make "NIKON CORPORATION": NEF */
      {"II*\0\x08\0\0\0\x01\0\x0F\x01\x02\0\x12\0\0\0\x16\0\0\0NIKON CORPORATION", 39,
       FERRY_FORMAT_RAW},
      /* and one with another Make: a TIFF */
      {"II*\0\x08\0\0\0\x01\0\x0F\x01\x02\0\x06\0\0\0\x16\0\0\0Epson", 27, FERRY_FORMAT_TIFF},
      {"hello, world", 12, FERRY_FORMAT_UNKNOWN},
      {"", 0, FERRY_FORMAT_UNKNOWN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t *b = dup_bytes((const uint8_t *)cases[i].bytes, cases[i].n);
    ferry_format got = fy_sniff(b, cases[i].n);
    CHECK_MSG(got == cases[i].want, "case %zu: %s, want %s", i, ferry_format_name(got),
              ferry_format_name(cases[i].want));
    free(b);
  }
  CHECK(fy_sniff(NULL, 0) == FERRY_FORMAT_UNKNOWN);
}

static void test_format_names(void) {
  CHECK(strcmp(ferry_format_name(FERRY_FORMAT_JPEG), "JPEG") == 0);
  CHECK(strcmp(ferry_format_name(FERRY_FORMAT_PNG), "PNG") == 0);
  CHECK(strcmp(ferry_format_name(FERRY_FORMAT_WEBP), "WebP") == 0);
  CHECK(strcmp(ferry_format_name(FERRY_FORMAT_GIF), "GIF") == 0);
  CHECK(strcmp(ferry_format_name(FERRY_FORMAT_BMP), "BMP") == 0);
  CHECK(strcmp(ferry_format_name(FERRY_FORMAT_TIFF), "TIFF") == 0);
  CHECK(strcmp(ferry_format_name(FERRY_FORMAT_PACK), "pack") == 0);
  CHECK(strcmp(ferry_format_name(FERRY_FORMAT_UNKNOWN), "unknown") == 0);
  CHECK(strcmp(ferry_format_name((ferry_format)99), "unknown") == 0);
}

/* Fixture files, misnamed ones included: the name never decides. */
static void test_sniff_files(void) {
  static const struct {
    const char *name;
    ferry_format want;
  } cases[] = {
      {"png_named.jpg", FERRY_FORMAT_PNG},    {"jpeg_named.png", FERRY_FORMAT_JPEG},
      {"webp_named.png", FERRY_FORMAT_WEBP},  {"tiny.gif", FERRY_FORMAT_GIF},
      {"tiny.bmp", FERRY_FORMAT_BMP},         {"tiny.tiff", FERRY_FORMAT_TIFF},
      {"rgb8.png", FERRY_FORMAT_PNG},         {"lossy.webp", FERRY_FORMAT_WEBP},
      {"lossless.webp", FERRY_FORMAT_WEBP},   {"anim.webp", FERRY_FORMAT_WEBP},
      {"rgb8.png.rgb", FERRY_FORMAT_UNKNOWN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n;
    uint8_t *b = load(NULL, cases[i].name, &n);
    if (!b)
      continue;
    ferry_format got = fy_sniff(b, n);
    CHECK_MSG(got == cases[i].want, "%s: sniffed %s, want %s", cases[i].name,
              ferry_format_name(got), ferry_format_name(cases[i].want));
    free(b);
  }
}

/* ------------------------------------------------------------- goldens */

/* Largest per-sample difference, and the first differing index. */
static int max_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *first) {
  int m = 0;
  *first = n;
  for (size_t i = 0; i < n; i++) {
    int d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    if (d && *first == n)
      *first = i;
    if (d > m)
      m = d;
  }
  return m;
}

/* Decodes `name` with 1 and 3 channels and compares with its goldens. */
static void check_golden(fy_decoder *dec, const char *name, int w, int h, int tol) {
  size_t n;
  uint8_t *data = load(NULL, name, &n);
  if (!data)
    return;
  ferry_format f = fy_sniff(data, n);
  decode_fn decode = decoder_for(f);
  CHECK_MSG(decode != NULL, "%s: sniffed as %s", name, ferry_format_name(f));
  ferry_info info;
  if (decode && prober_for(f)(data, n, name, &info) == FERRY_OK)
    CHECK_MSG(info.format == f && info.width == w && info.height == h, "%s: probe", name);
  for (int c = 1; decode && c <= 3; c += 2) {
    char gname[600];
    snprintf(gname, sizeof gname, "%s.%s", name, c == 3 ? "rgb" : "gray");
    size_t gn;
    uint8_t *golden = load(NULL, gname, &gn);
    fy_codec_req req = make_req(c);
    fy_decoded out;
    int rc = decode(dec, data, n, name, &req, &out);
    CHECK_MSG(rc == FERRY_OK, "%s (c=%d): %s", name, c, ferry_last_error());
    if (rc == FERRY_OK && golden) {
      check_decoded(&out, w, h, c, name);
      CHECK_MSG(gn == (size_t)w * h * c, "%s: golden size %zu", gname, gn);
      size_t first = gn;
      int d = gn == (size_t)w * h * c ? max_diff(out.image.data, golden, gn, &first) : 999;
      CHECK_MSG(d <= tol, "%s (c=%d): max diff %d > %d, first at sample %zu (%d vs %d)", name, c, d,
                tol, first, first < gn ? out.image.data[first] : -1,
                first < gn ? golden[first] : -1);
    }
    free(golden);
  }
  free(data);
}

static void test_goldens(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s/MANIFEST.txt", check_fixtures(), DIR_CODECS);
  FILE *f = fopen(path, "r");
  CHECK_MSG(f != NULL, "cannot open %s", path);
  if (!f)
    return;
  fy_decoder dec = {0};
  char line[1024];
  int count = 0;
  while (fgets(line, sizeof line, f)) {
    char name[512];
    int w, h, tol;
    if (line[0] == '#' || sscanf(line, "%511s %d %d %d", name, &w, &h, &tol) != 4)
      continue;
    check_golden(&dec, name, w, h, tol);
    count++;
  }
  fclose(f);
  free_decoder(&dec);
  CHECK_MSG(count >= 30, "only %d golden images listed", count);
}

/* Every 16-bit value once: the output must be round(v / 257). */
static void test_gray16_ramp(void) {
  size_t n;
  uint8_t *data = load(NULL, "gray16_ramp.png", &n);
  if (!data)
    return;
  fy_decoder dec = {0};
  for (int c = 1; c <= 3; c += 2) {
    fy_codec_req req = make_req(c);
    fy_decoded out;
    int rc = fy_png_decode(&dec, data, n, "gray16_ramp.png", &req, &out);
    CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
    if (rc)
      continue;
    check_decoded(&out, 256, 256, c, "gray16_ramp.png");
    int bad = 0;
    for (uint32_t v = 0; v < 65536; v++) {
      uint8_t want = (uint8_t)((v * 255 + 32895) >> 16);
      for (int k = 0; k < c; k++)
        bad += out.image.data[(size_t)v * c + k] != want;
      /* and it is the rounded quotient */
      bad += want != (uint8_t)((v + 128) / 257);
    }
    CHECK_MSG(bad == 0, "c=%d: %d samples differ from (v * 255 + 32895) >> 16", c, bad);
  }
  free_decoder(&dec);
  free(data);
}

/* ------------------------------------------------------------- probing */

static void test_probe_fields(void) {
  static const struct {
    const char *name;
    int channels, bit_depth, orientation, progressive, has_alpha, lossless;
    const char *colorspace;
  } cases[] = {
      {"gray8.png", 1, 8, 1, 0, 0, 0, "Gray"},
      {"gray1.png", 1, 1, 1, 0, 0, 0, "Gray"},
      {"gray4.png", 2, 4, 1, 0, 1, 0, "Gray"}, /* tRNS colour key */
      {"graya8.png", 2, 8, 1, 0, 1, 0, "GrayA"},
      {"graya16.png", 2, 16, 1, 0, 1, 0, "GrayA"},
      {"pal8_trns.png", 4, 8, 1, 0, 1, 0, "Palette"},
      {"pal4.png", 3, 4, 1, 0, 0, 0, "Palette"},
      {"pal4_adam7.png", 4, 4, 1, 1, 1, 0, "Palette"},
      {"rgb8.png", 3, 8, 1, 0, 0, 0, "RGB"},
      {"rgb16.png", 3, 16, 1, 0, 0, 0, "RGB"},
      {"rgb8_adam7.png", 3, 8, 1, 1, 0, 0, "RGB"},
      {"rgba8.png", 4, 8, 1, 0, 1, 0, "RGBA"},
      {"orient6.png", 3, 8, 6, 0, 0, 0, "RGB"},
      {"orient8_late.png", 3, 8, 8, 0, 0, 0, "RGB"},
      {"lossy.webp", 3, 8, 1, 0, 0, 0, "RGB"},
      {"lossy_alpha.webp", 4, 8, 1, 0, 1, 0, "RGBA"},
      {"lossless.webp", 3, 8, 1, 0, 0, 1, "RGB"},
      {"lossless_alpha.webp", 4, 8, 1, 0, 1, 1, "RGBA"},
      {"orient3.webp", 3, 8, 3, 0, 0, 0, "RGB"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n;
    uint8_t *data = load(NULL, cases[i].name, &n);
    if (!data)
      continue;
    ferry_format f = fy_sniff(data, n);
    ferry_info info;
    memset(&info, 0x55, sizeof info); /* every field must be written */
    int rc = prober_for(f) ? prober_for(f)(data, n, cases[i].name, &info) : -100;
    CHECK_MSG(rc == FERRY_OK, "%s: %s", cases[i].name, ferry_last_error());
    if (rc == FERRY_OK) {
      CHECK_MSG(info.format == f && info.width == 37 && info.height == 23, "%s: format/size",
                cases[i].name);
      CHECK_MSG(info.channels == cases[i].channels, "%s: channels %d", cases[i].name,
                info.channels);
      CHECK_MSG(info.bit_depth == cases[i].bit_depth, "%s: bit_depth %d", cases[i].name,
                info.bit_depth);
      CHECK_MSG(info.orientation == cases[i].orientation, "%s: orientation %d", cases[i].name,
                info.orientation);
      CHECK_MSG(info.progressive == cases[i].progressive, "%s: progressive", cases[i].name);
      CHECK_MSG(info.has_alpha == cases[i].has_alpha, "%s: has_alpha", cases[i].name);
      CHECK_MSG(info.lossless == cases[i].lossless, "%s: lossless", cases[i].name);
      CHECK_MSG(info.arithmetic == 0, "%s: arithmetic", cases[i].name);
      CHECK_MSG(strcmp(info.colorspace, cases[i].colorspace) == 0, "%s: colorspace %.16s",
                cases[i].name, info.colorspace);
      CHECK_MSG(info.subsampling[0] == '\0', "%s: subsampling", cases[i].name);
    }
    free(data);
  }
}

/* ------------------------------------------------------------- errors */

/* Expects `rc` to be `want` with a message naming `name`. */
static void check_fails(int rc, int want, const char *name, const char *what) {
  CHECK_MSG(rc == want, "%s: status %d (%s), want %d; message: %s", what, rc, ferry_strerror(rc),
            want, ferry_last_error());
  CHECK_MSG(strstr(ferry_last_error(), name) != NULL, "%s: message does not name %s: %s", what,
            name, ferry_last_error());
}

/* Decoding every prefix of a valid file must fail cleanly (never reading
 * past the end: the prefixes are exact-size heap copies). A probe may
 * succeed once the header is there, and then must go on succeeding. */
static void check_all_truncations(const char *name, decode_fn decode, probe_fn probe) {
  size_t n;
  uint8_t *data = load(NULL, name, &n);
  if (!data)
    return;
  fy_decoder dec = {0};
  fy_codec_req req = make_req(3);
  int bad_decode = 0, bad_probe = 0, bad_msg = 0, probed = 0;
  for (size_t len = 0; len < n; len++) {
    uint8_t *cut = dup_bytes(data, len);
    fy_decoded out;
    int rc = decode(&dec, cut, len, name, &req, &out);
    bad_decode += rc != FERRY_ECORRUPT;
    bad_msg += strstr(ferry_last_error(), name) == NULL;
    ferry_info info;
    rc = probe(cut, len, name, &info);
    if (rc == FERRY_OK)
      bad_probe += info.width != 37 || info.height != 23;
    else
      bad_probe += rc != FERRY_ECORRUPT || probed;
    probed |= rc == FERRY_OK;
    free(cut);
  }
  CHECK_MSG(bad_decode == 0, "%s: %d truncated copies did not fail with FERRY_ECORRUPT", name,
            bad_decode);
  CHECK_MSG(bad_probe == 0, "%s: %d truncated copies probed wrongly", name, bad_probe);
  CHECK_MSG(probed, "%s: no truncated copy could be probed", name);
  CHECK_MSG(bad_msg == 0, "%s: %d messages without the file name", name, bad_msg);
  /* The message says what happened. */
  uint8_t *half = dup_bytes(data, n / 2);
  fy_decoded out;
  decode(&dec, half, n / 2, name, &req, &out);
  CHECK_MSG(strstr(ferry_last_error(), "truncated") != NULL, "%s: %s", name, ferry_last_error());
  free(half);
  free_decoder(&dec);
  free(data);
}

/* Offset of the `nth` chunk of type `type` in a PNG, or 0. */
static size_t png_chunk_at(const uint8_t *p, size_t n, const char *type, int nth) {
  size_t pos = 8;
  while (pos + 12 <= n) {
    size_t len =
        (size_t)p[pos] << 24 | (size_t)p[pos + 1] << 16 | (size_t)p[pos + 2] << 8 | p[pos + 3];
    if (memcmp(p + pos + 4, type, 4) == 0 && nth-- == 0)
      return pos;
    pos += 12 + len;
  }
  return 0;
}

/* Flips one byte of a chunk's stored CRC and expects a CRC error. */
static void check_bad_crc(const char *name, const char *type, int nth) {
  size_t n;
  uint8_t *data = load(NULL, name, &n);
  if (!data)
    return;
  size_t pos = png_chunk_at(data, n, type, nth);
  CHECK_MSG(pos != 0, "%s: no %s chunk", name, type);
  if (pos) {
    size_t len = (size_t)data[pos] << 24 | (size_t)data[pos + 1] << 16 |
                 (size_t)data[pos + 2] << 8 | data[pos + 3];
    data[pos + 8 + len + 2] ^= 0x20;
    fy_decoder dec = {0};
    fy_codec_req req = make_req(3);
    fy_decoded out;
    char what[128];
    snprintf(what, sizeof what, "%s with a bad %s #%d CRC", name, type, nth);
    check_fails(fy_png_decode(&dec, data, n, name, &req, &out), FERRY_ECORRUPT, name, what);
    CHECK_MSG(strstr(ferry_last_error(), "CRC") != NULL, "%s: %s", what, ferry_last_error());
    free_decoder(&dec);
  }
  free(data);
}

/* Flips bytes inside the compressed data: zlib or the CRC must notice. */
static void check_damaged_idat(const char *name) {
  size_t n;
  uint8_t *data = load(NULL, name, &n);
  if (!data)
    return;
  size_t pos = png_chunk_at(data, n, "IDAT", 0);
  size_t len = pos ? (size_t)data[pos + 2] << 8 | data[pos + 3] : 0;
  fy_decoder dec = {0};
  fy_codec_req req = make_req(3);
  int bad = 0;
  for (size_t at = 0; at < len; at += 7) {
    data[pos + 8 + at] ^= 0x01;
    fy_decoded out;
    bad += fy_png_decode(&dec, data, n, name, &req, &out) != FERRY_ECORRUPT;
    data[pos + 8 + at] ^= 0x01;
  }
  CHECK_MSG(len > 100 && bad == 0, "%s: %d damaged copies decoded", name, bad);
  free_decoder(&dec);
  free(data);
}

static void test_png_errors(void) {
  /* Cut anywhere, including inside IEND: the decoder reads to IEND. */
  check_all_truncations("rgb8.png", fy_png_decode, fy_png_probe);
  check_all_truncations("rgba8_adam7.png", fy_png_decode, fy_png_probe);
  check_bad_crc("rgb8.png", "IHDR", 0);
  check_bad_crc("rgb8_adam7.png", "IDAT", 0);
  check_bad_crc("rgb8_adam7.png", "IDAT", 2);  /* the last one */
  check_bad_crc("text_chunks.png", "tEXt", 0); /* ancillary, before the pixels */
  check_bad_crc("text_chunks.png", "tEXt", 1); /* ancillary, after the pixels */
  check_bad_crc("text_chunks.png", "IEND", 0);
  check_damaged_idat("rgb8.png");
  /* Only the rows are inflated: a 1x1 pixel whose stream goes on with
   * 64 MiB of compressed zeros decodes to its pixel (the sequential
   * reader inflated the rest: its 1 GiB version took 2.3 s); one whose
   * stream turns into bytes that are no deflate data before the row is
   * complete fails, as in Pillow, instead of giving a black pixel. */
  {
    /* a side over FY_MAX_SIDE: refused before decoding; no limit asked
     * (max_pixels 0): decoded */
    size_t n;
    uint8_t *data = load(NULL, "tall_1x1048577.png", &n);
    if (data) {
      fy_decoder dec = {0};
      fy_codec_req req = make_req(3);
      fy_decoded out;
      check_fails(fy_png_decode(&dec, data, n, "tall_1x1048577.png", &req, &out), FERRY_ETOO_LARGE,
                  "tall_1x1048577.png", "a 1x1048577 PNG");
      CHECK(strstr(ferry_last_error(), "a side over the limit of 1048576") != NULL);
      req.max_pixels = 0;
      CHECK(fy_png_decode(&dec, data, n, "tall_1x1048577.png", &req, &out) == FERRY_OK &&
            out.image.height == (1 << 20) + 1 && out.image.data[3 * (1 << 20) + 2] == 48);
      free_decoder(&dec);
      free(data);
    }
  }
  static const char *excess[] = {"inflate_bomb_1x1.png", "excess_idat_1x1.png"};
  for (int i = 0; i < 2; i++) {
    size_t n;
    uint8_t *data = load(NULL, excess[i], &n);
    if (!data)
      continue;
    fy_decoder dec = {0};
    fy_codec_req req = make_req(3);
    fy_decoded out;
    int rc = fy_png_decode(&dec, data, n, excess[i], &req, &out);
    if (i == 0)
      CHECK_MSG(rc == FERRY_OK && out.image.width == 1 && out.image.height == 1 &&
                    out.image.data[0] == 16 && out.image.data[1] == 32 && out.image.data[2] == 48,
                "%s: %d, %s", excess[i], rc, rc ? ferry_last_error() : "other pixels");
    else
      CHECK_MSG(rc == FERRY_ECORRUPT && strstr(ferry_last_error(), "damaged image data"),
                "%s: %d, %s", excess[i], rc, ferry_last_error());
    free_decoder(&dec);
    free(data);
  }

  fy_decoder dec = {0};
  fy_codec_req req = make_req(3);
  fy_decoded out;
  uint8_t *empty = malloc(1);
  check_fails(fy_png_decode(&dec, empty, 0, "empty.png", &req, &out), FERRY_ECORRUPT, "empty.png",
              "zero-length PNG");
  ferry_info info;
  check_fails(fy_png_probe(empty, 0, "empty.png", &info), FERRY_ECORRUPT, "empty.png",
              "zero-length PNG probe");
  free(empty);

  /* Random bytes, alone and behind a PNG signature. */
  enum { N = 4096 };
  uint8_t *junk = malloc(N);
  for (int trial = 0; trial < 50; trial++) {
    for (int i = 0; i < N; i++)
      junk[i] = (uint8_t)fy_rand_u64(7, (uint64_t)trial, (uint64_t)i);
    if (trial & 1)
      memcpy(junk, "\x89PNG\r\n\x1A\n", 8);
    int rc = fy_png_decode(&dec, junk, N, "junk.png", &req, &out);
    CHECK_MSG(rc == FERRY_ECORRUPT, "random bytes (trial %d): %d %s", trial, rc,
              ferry_last_error());
  }
  free(junk);

  /* A PNG IHDR that claims 65500 x 65500: refused before any allocation. */
  size_t n;
  uint8_t *bomb = load(NULL, "bomb_65500x65500.png", &n);
  if (bomb) {
    fy_decoder fresh = {0};
    check_fails(fy_png_decode(&fresh, bomb, n, "bomb_65500x65500.png", &req, &out),
                FERRY_ETOO_LARGE, "bomb_65500x65500.png", "65500x65500 PNG");
    CHECK_MSG(strstr(ferry_last_error(), "65500x65500") != NULL, "%s", ferry_last_error());
    CHECK_MSG(fresh.pixels.cap == 0 && fresh.temp.cap == 0, "allocated before the limit check");
    CHECK(fy_png_probe(bomb, n, "bomb_65500x65500.png", &info) == FERRY_OK);
    CHECK(info.width == 65500 && info.height == 65500);
    free_decoder(&fresh);
    free(bomb);
  }
  free_decoder(&dec);
}

static void test_webp_errors(void) {
  check_all_truncations("lossless.webp", fy_webp_decode, fy_webp_probe);
  check_all_truncations("lossy_alpha.webp", fy_webp_decode, fy_webp_probe);
  fy_decoder dec = {0};
  fy_codec_req req = make_req(3);
  fy_decoded out;
  uint8_t *empty = malloc(1);
  check_fails(fy_webp_decode(&dec, empty, 0, "empty.webp", &req, &out), FERRY_ECORRUPT,
              "empty.webp", "zero-length WebP");
  free(empty);
  /* Animations: probed, but not decoded. */
  size_t n;
  uint8_t *anim = load(NULL, "anim.webp", &n);
  if (anim) {
    ferry_info info;
    CHECK(fy_webp_probe(anim, n, "anim.webp", &info) == FERRY_OK && info.width == 8);
    check_fails(fy_webp_decode(&dec, anim, n, "anim.webp", &req, &out), FERRY_EUNSUPPORTED,
                "anim.webp", "animated WebP");
    free(anim);
  }
  enum { N = 4096 };
  uint8_t *junk = malloc(N);
  for (int trial = 0; trial < 50; trial++) {
    for (int i = 0; i < N; i++)
      junk[i] = (uint8_t)fy_rand_u64(8, (uint64_t)trial, (uint64_t)i);
    if (trial & 1)
      memcpy(junk, "RIFF\xf8\x0f\0\0WEBPVP8 ", 16);
    int rc = fy_webp_decode(&dec, junk, N, "junk.webp", &req, &out);
    CHECK_MSG(rc == FERRY_ECORRUPT || rc == FERRY_EUNSUPPORTED, "random bytes (trial %d): %d %s",
              trial, rc, ferry_last_error());
    CHECK_MSG(strstr(ferry_last_error(), "junk.webp") != NULL, "%s", ferry_last_error());
  }
  free(junk);
  free_decoder(&dec);
}

/* max_pixels is inclusive; channels other than 1 and 3 are refused. */
static void test_limits(void) {
  static const char *names[] = {"rgb8.png", "lossy.webp"};
  for (int i = 0; i < 2; i++) {
    size_t n;
    uint8_t *data = load(NULL, names[i], &n);
    if (!data)
      continue;
    decode_fn decode = decoder_for(fy_sniff(data, n));
    fy_decoder dec = {0};
    fy_decoded out;
    fy_codec_req req = make_req(3);
    req.max_pixels = 37 * 23;
    CHECK_MSG(decode(&dec, data, n, names[i], &req, &out) == FERRY_OK, "%s: at the limit",
              names[i]);
    free_decoder(&dec);
    req.max_pixels = 37 * 23 - 1;
    check_fails(decode(&dec, data, n, names[i], &req, &out), FERRY_ETOO_LARGE, names[i],
                "one pixel over the limit");
    CHECK_MSG(dec.pixels.cap == 0, "%s: allocated before the limit check", names[i]);
    req.max_pixels = 0; /* no limit */
    CHECK(decode(&dec, data, n, names[i], &req, &out) == FERRY_OK);
    req.channels = 4;
    check_fails(decode(&dec, data, n, names[i], &req, &out), FERRY_EINVAL, names[i], "4 channels");
    free_decoder(&dec);
    free(data);
  }
}

/* One decoder, images of different sizes in turn: buffers are reused. */
static void test_decoder_reuse(void) {
  static const char *names[] = {"gray16_ramp.png", "rgb8_adam7_1x1.png", "lossy.webp", "rgb8.png",
                                "gray16_ramp.png"};
  fy_decoder dec = {0};
  for (int i = 0; i < 5; i++) {
    size_t n;
    uint8_t *data = load(NULL, names[i], &n);
    if (!data)
      continue;
    fy_codec_req req = make_req(3);
    fy_decoded out;
    int rc = decoder_for(fy_sniff(data, n))(&dec, data, n, names[i], &req, &out);
    CHECK_MSG(rc == FERRY_OK && out.image.data == dec.pixels.p, "%s: %s", names[i],
              ferry_last_error());
    free(data);
  }
  CHECK(dec.pixels.cap >= 256 * 256 * 3);
  free_decoder(&dec);
}

/* -------------------------------------------------------------- corpus */

/* gray must be Pillow's luma of rgb, pixel for pixel (also true for gray
 * sources, where r = g = b = gray). */
static int gray_matches_rgb(const uint8_t *rgb, const uint8_t *gray, size_t pixels) {
  for (size_t i = 0; i < pixels; i++)
    if (gray[i] != luma(rgb + 3 * i))
      return 0;
  return 1;
}

static void corpus_decode(fy_decoder *dec, fy_buf *keep, const char *path, const char *name,
                          const uint8_t *data, size_t n, ferry_format f) {
  ferry_info info;
  int rc = prober_for(f)(data, n, path, &info);
  CHECK_MSG(rc == FERRY_OK, "%s: probe: %s", name, ferry_last_error());
  fy_codec_req req = make_req(3);
  fy_decoded out;
  rc = decoder_for(f)(dec, data, n, path, &req, &out);
  CHECK_MSG(rc == FERRY_OK, "%s: %s", name, ferry_last_error());
  if (rc)
    return;
  check_decoded(&out, info.width, info.height, 3, name);
  size_t pixels = (size_t)info.width * info.height;
  if (fy_buf_reserve(keep, pixels * 3) != FERRY_OK)
    return;
  memcpy(keep->p, out.image.data, pixels * 3);
  req.channels = 1;
  rc = decoder_for(f)(dec, data, n, path, &req, &out);
  CHECK_MSG(rc == FERRY_OK, "%s (gray): %s", name, ferry_last_error());
  if (rc == FERRY_OK)
    CHECK_MSG(gray_matches_rgb(keep->p, out.image.data, pixels), "%s: gray != luma(rgb)", name);
}

/* The corpus's formats/ folder names files by content, except two that
 * lie on purpose. */
static ferry_format expected_format(const char *name) {
  if (strcmp(name, "png_named.jpg") == 0)
    return FERRY_FORMAT_PNG;
  if (strcmp(name, "jpeg_named.png") == 0)
    return FERRY_FORMAT_JPEG;
  static const struct {
    const char *ext;
    ferry_format f;
  } ext[] = {{".png", FERRY_FORMAT_PNG}, {".jpg", FERRY_FORMAT_JPEG}, {".webp", FERRY_FORMAT_WEBP},
             {".gif", FERRY_FORMAT_GIF}, {".bmp", FERRY_FORMAT_BMP},  {".tiff", FERRY_FORMAT_TIFF}};
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
    if (ends_with(name, ext[i].ext))
      return ext[i].f;
  return FERRY_FORMAT_UNKNOWN;
}

static void test_corpus_formats(const char *corpus) {
  char dir[4096], path[8192];
  snprintf(dir, sizeof dir, "%s/formats", corpus);
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "cannot open %s", dir);
  if (!d)
    return;
  fy_decoder dec = {0};
  fy_buf keep = {0};
  int decoded = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n;
    uint8_t *data = load(dir, e->d_name, &n);
    if (!data)
      continue;
    ferry_format f = fy_sniff(data, n), want = expected_format(e->d_name);
    CHECK_MSG(f == want, "%s: sniffed %s, want %s", e->d_name, ferry_format_name(f),
              ferry_format_name(want));
    if (decoder_for(f)) {
      corpus_decode(&dec, &keep, path, e->d_name, data, n, f);
      decoded++;
    }
    free(data);
  }
  closedir(d);
  CHECK_MSG(decoded >= 10, "only %d PNG/WebP/TIFF/GIF files decoded in %s", decoded, dir);
  fy_buf_free(&keep);
  free_decoder(&dec);
}

static void test_corpus_bad(const char *corpus) {
  static const char *names[] = {"bad_crc.png", "truncated.png"};
  char dir[4096], path[8192];
  snprintf(dir, sizeof dir, "%s/bad", corpus);
  fy_decoder dec = {0};
  for (int i = 0; i < 2; i++) {
    size_t n;
    uint8_t *data = load(dir, names[i], &n);
    if (!data)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    CHECK_MSG(fy_sniff(data, n) == FERRY_FORMAT_PNG, "%s: not sniffed as PNG", names[i]);
    fy_codec_req req = make_req(3);
    fy_decoded out;
    check_fails(fy_png_decode(&dec, data, n, path, &req, &out), FERRY_ECORRUPT, names[i], names[i]);
    free(data);
  }
  free_decoder(&dec);
}

int main(void) {
  test_sniff_bytes();
  test_format_names();
  test_sniff_files();
  test_goldens();
  test_gray16_ramp();
  test_probe_fields();
  test_png_errors();
  test_webp_errors();
  test_limits();
  test_decoder_reuse();
  const char *corpus = check_corpus("test_codecs corpus");
  if (corpus) {
    test_corpus_formats(corpus);
    test_corpus_bad(corpus);
  }
  return check_done();
}
