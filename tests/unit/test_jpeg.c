/* test_jpeg.c — JPEG decoding: probe fields, DCT scaling, region-of-
 * interest crops, orientation, limits, damaged data. Uses the bundled
 * sample (data/sample) so it runs on a fresh clone. */
#include "check.h"
#include "codec/codec.h"
#include "ferry.h"

#include <stdlib.h>
#include <string.h>

static char path_buf[4096];
static const char *sample_file(const char *rel) {
  const char *s = getenv("FERRY_SAMPLE");
  snprintf(path_buf, sizeof path_buf, "%s/%s", s ? s : "data/sample", rel);
  return path_buf;
}

#define slurp(path, n) check_slurp(path, n)

static void test_probe(void) {
  ferry_info i;
  CHECK(ferry_probe_file(sample_file("class0/p0000.jpg"), &i) == FERRY_OK);
  CHECK(i.format == FERRY_FORMAT_JPEG && i.width == 702 && i.height == 712);
  CHECK(strcmp(i.subsampling, "4:4:4") == 0);
  CHECK(ferry_probe_file(sample_file("class1/p0001.jpg"), &i) == FERRY_OK);
  CHECK(i.channels == 1 && strcmp(i.colorspace, "Gray") == 0);
  CHECK(ferry_probe_file(sample_file("class0/exif_orient6.jpg"), &i) == FERRY_OK);
  CHECK(i.orientation == 6);
  CHECK(ferry_probe_file(sample_file("class1/cmyk0.jpg"), &i) == FERRY_OK);
  CHECK(i.channels == 4);
}

static void test_scaling_and_crop(void) {
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  ferry_image full, small, roi;
  const char *p = sample_file("class0/p0004.jpg"); /* 821x494 4:2:0 */
  CHECK(ferry_decode_file(p, &o, &full) == FERRY_OK);
  CHECK(full.width == 821 && full.height == 494 && full.channels == 3);
  o.min_width = 200;
  o.min_height = 120;
  CHECK(ferry_decode_file(p, &o, &small) == FERRY_OK);
  /* 1/4 scale keeps >= 200x120: ceil(821/4) x ceil(494/4) */
  CHECK_MSG(small.width == 206 && small.height == 124, "%dx%d", small.width, small.height);
  /* downscaled decode resembles the full one, averaged */
  double err = 0;
  for (int y = 0; y < small.height - 1; y++)
    for (int x = 0; x < small.width - 1; x++)
      err += abs(small.data[(size_t)y * small.stride + x * 3] -
                 full.data[(size_t)(y * 4 + 2) * full.stride + (x * 4 + 2) * 3]);
  err /= (double)(small.width - 1) * (small.height - 1);
  CHECK_MSG(err < 12, "mean abs diff %.2f", err);
  ferry_image_free(&small);
  /* region of interest: same pixels as cropping the full decode (away from
   * the crop's left/top edge, where upsampling context may differ) */
  ferry_decode_options_default(&o);
  o.crop = (ferry_rect){301, 157, 200, 150};
  CHECK(ferry_decode_file(p, &o, &roi) == FERRY_OK);
  CHECK(roi.width == 200 && roi.height == 150);
  int maxd = 0;
  for (int y = 2; y < 148; y++)
    for (int x = 2 * 3; x < 198 * 3; x++) {
      int d = abs(roi.data[(size_t)y * roi.stride + x] -
                  full.data[(size_t)(y + 157) * full.stride + 301 * 3 + x]);
      maxd = d > maxd ? d : maxd;
    }
  CHECK_MSG(maxd <= 2, "roi vs full max diff %d", maxd);
  ferry_image_free(&roi);
  ferry_image_free(&full);
}

static void test_orientation(void) {
  ferry_image up, raw;
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  CHECK(ferry_decode_file(sample_file("class0/exif_orient6.jpg"), &o, &up) == FERRY_OK);
  o.ignore_orientation = 1;
  CHECK(ferry_decode_file(sample_file("class0/exif_orient6.jpg"), &o, &raw) == FERRY_OK);
  CHECK(up.width == raw.height && up.height == raw.width);
  /* orientation 6: upright (x, y) = stored (y, H-1-x) */
  int bad = 0;
  for (int y = 0; y < up.height; y += 7)
    for (int x = 0; x < up.width; x += 5)
      bad += up.data[(size_t)y * up.stride + x * 3] !=
             raw.data[(size_t)(raw.height - 1 - x) * raw.stride + y * 3];
  CHECK(bad == 0);
  ferry_image_free(&up);
  ferry_image_free(&raw);
}

static void test_cmyk_and_gray(void) {
  ferry_image im;
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  CHECK(ferry_decode_file(sample_file("class1/cmyk0.jpg"), &o, &im) == FERRY_OK);
  CHECK(im.channels == 3);
  ferry_image_free(&im);
  o.channels = 1;
  CHECK(ferry_decode_file(sample_file("class1/cmyk0.jpg"), &o, &im) == FERRY_OK);
  CHECK(im.channels == 1);
  ferry_image_free(&im);
  CHECK(ferry_decode_file(sample_file("class0/p0000.jpg"), &o, &im) == FERRY_OK);
  CHECK(im.channels == 1 && im.stride == (size_t)im.width);
  ferry_image_free(&im);
}

/* A JPEG header claiming 65500x65500: refused before any allocation. */
static void test_bomb_header(void) {
  size_t n;
  uint8_t *d = slurp(sample_file("class0/p0000.jpg"), &n);
  CHECK(d != NULL);
  for (size_t i = 2; d && i + 9 < n; i++) {
    if (d[i] == 0xFF && (d[i + 1] == 0xC0 || d[i + 1] == 0xC2)) {
      d[i + 5] = 0xFF, d[i + 6] = 0xDC, d[i + 7] = 0xFF, d[i + 8] = 0xDC;
      break;
    }
  }
  ferry_image im;
  CHECK(ferry_decode(d, n, "bomb.jpg", NULL, &im) == FERRY_ETOO_LARGE);
  CHECK(strstr(ferry_last_error(), "bomb.jpg") && strstr(ferry_last_error(), "65500x65500"));
  free(d);
}

/* Every truncation and a sprinkle of flipped bytes: an error or an image,
 * never a crash (the sanitizer build runs this too). */
static void test_damage(void) {
  size_t n;
  uint8_t *d = slurp(sample_file("class2/p0002.jpg"), &n);
  CHECK(d != NULL);
  int errors = 0, runs = 0;
  ferry_image im;
  for (size_t cut = 0; d && cut < n; cut += 997) {
    int rc = ferry_decode(d, cut, "cut.jpg", NULL, &im);
    if (rc == FERRY_OK)
      ferry_image_free(&im);
    else
      errors += strstr(ferry_last_error(), "cut.jpg") != NULL;
    runs++;
  }
  CHECK_MSG(errors == runs, "%d of %d truncations reported", errors, runs);
  uint8_t *e = malloc(n);
  for (int k = 0; d && k < 200; k++) {
    memcpy(e, d, n);
    for (int j = 0; j < 4; j++)
      e[(size_t)(k * 7919 + j * 104729) % n] ^= (uint8_t)(0x5A + k);
    if (ferry_decode(e, n, "flip.jpg", NULL, &im) == FERRY_OK)
      ferry_image_free(&im);
  }
  CHECK(ferry_decode(d, n, "trunc.jpg", NULL, &im) == FERRY_OK);
  ferry_image_free(&im);
  CHECK(ferry_decode(d, n / 2, "half.jpg", NULL, &im) == FERRY_ECORRUPT);
  CHECK(strstr(ferry_last_error(), "half.jpg: truncated") != NULL);
  free(e);
  free(d);
}

/* The structural check that guards the GPU engine: intact baseline files
 * pass, every truncation and a stray marker in the scan fail. */
static void test_structure(void) {
  size_t n;
  uint8_t *d = slurp(sample_file("class0/p0004.jpg"), &n);
  CHECK(d && fy_jpeg_structure_ok(d, n));
  int caught = 0, cuts = 0;
  for (size_t cut = 0; d && cut < n - 1; cut += 211, cuts++)
    caught += !fy_jpeg_structure_ok(d, cut);
  CHECK_MSG(caught == cuts, "%d of %d truncations caught", caught, cuts);
  if (d) {
    d[n / 2] = 0xFF, d[n / 2 + 1] = 0xC4; /* a DHT marker inside the scan */
    CHECK(!fy_jpeg_structure_ok(d, n));
  }
  free(d);
}

int main(void) {
  test_structure();
  test_probe();
  test_scaling_and_crop();
  test_orientation();
  test_cmyk_and_gray();
  test_bomb_header();
  test_damage();
  return check_done();
}
