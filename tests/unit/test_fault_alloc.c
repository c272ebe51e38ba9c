/* test_fault_alloc.c — allocation failure at every allocation site of a
 * decode (and of ferry_resize): fy_fail_alloc_set(N) makes the Nth
 * allocation through fy_buf_reserve/fy_malloc fail, and, while armed, the
 * Nth of libjpeg's (cinfo->mem, jpeg_common.c) and libpng's (user malloc,
 * png.c) too. For N = 1, 2, ... each decode must fail cleanly
 * (FERRY_ENOMEM, "out of memory" and the file's name, no image handed out)
 * until N passes the last site; the decode that then succeeds must give
 * the pixels of an unfaulted decode. Leaks show up under the ASan build
 * (detect_leaks=1 in make test). libwebp has no allocator hook: only
 * ferry's own sites are reached in WebP decodes. */
#include "check.h"
#include "core/internal.h"

#include <string.h>

#define slurp(path, n) check_slurp(path, n)

#define MAX_SITES 2000

/* One decode (then a resize when asked) into *out. */
static int run(const char *path, const uint8_t *data, size_t n, const ferry_decode_options *o,
               int resize, ferry_image *out) {
  ferry_image im;
  memset(&im, 0xab, sizeof im);
  memset(out, 0, sizeof *out);
  int rc = ferry_decode(data, n, path, o, &im);
  if (rc != FERRY_OK) {
    CHECK_MSG(im.data == NULL, "%s: failed decode left an image", path);
    return rc;
  }
  if (!resize) {
    *out = im;
    return FERRY_OK;
  }
  rc = ferry_resize(&im, NULL, out, 17, 13, FERRY_FILTER_BICUBIC);
  ferry_image_free(&im);
  return rc;
}

static int same_pixels(const ferry_image *a, const ferry_image *b) {
  if (a->width != b->width || a->height != b->height || a->channels != b->channels)
    return 0;
  for (int y = 0; y < a->height; y++)
    if (memcmp((const uint8_t *)a->data + (size_t)y * a->stride,
               (const uint8_t *)b->data + (size_t)y * b->stride,
               (size_t)a->width * (size_t)a->channels))
      return 0;
  return 1;
}

/* Sweeps N over one decode; returns the number of injected failures seen. */
static int sweep(const char *path, const uint8_t *data, size_t n, const ferry_decode_options *o,
                 int resize) {
  ferry_image want;
  fy_fail_alloc_set(0);
  if (run(path, data, n, o, resize, &want) != FERRY_OK) {
    CHECK_MSG(0, "%s: unfaulted decode failed: %s", path, ferry_last_error());
    return 0;
  }
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  int failures = 0;
  for (long at = 1; at <= MAX_SITES; at++) {
    fy_fail_alloc_set(at);
    ferry_image got;
    int rc = run(path, data, n, o, resize, &got);
    fy_fail_alloc_set(0);
    if (rc == FERRY_OK) {
      CHECK_MSG(same_pixels(&got, &want), "%s: N=%ld: pixels differ from an unfaulted decode", path,
                at);
      ferry_image_free(&got);
      ferry_image_free(&want);
      CHECK_MSG(failures > 0, "%s: no allocation site was hit", path);
      return failures;
    }
    failures++;
    CHECK_MSG(rc == FERRY_ENOMEM, "%s: N=%ld: %s (%s)", path, at, ferry_strerror(rc),
              ferry_last_error());
    /* ferry_resize has no file to name; webp.c's pixel buffer reports the
     * bytes, not the file (to do there) */
    int named = resize || strstr(path, ".webp") || strstr(ferry_last_error(), base);
    CHECK_MSG(strstr(ferry_last_error(), "out of memory") && named, "%s: N=%ld: %s", path, at,
              ferry_last_error());
  }
  ferry_image_free(&want);
  CHECK_MSG(0, "%s: still failing after %d injected failures", path, MAX_SITES);
  return failures;
}

int main(void) {
  const char *fx = getenv("FERRY_FIXTURES");
  fx = fx ? fx : "tests/fixtures";
  static const char *files[] = {
      "hash/rgb420.jpg",    "hash/orient6.jpg",     "hash/cmyk.jpg",
      "hash/gray.jpg",      "hash/progressive.jpg", "hash/restart.jpg",
      "codecs/rgb8.png",    "codecs/rgba16.png",    "codecs/pal4_adam7.png",
      "codecs/orient6.png", "codecs/lossy.webp",    "codecs/lossless_alpha.webp",
      "codecs/orient3.webp"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", fx, files[i]);
    size_t n = 0;
    uint8_t *data = slurp(path, &n);
    CHECK_MSG(data && n > 0, "%s: cannot read", path);
    if (!data)
      continue;
    ferry_decode_options o;
    ferry_decode_options_default(&o);
    int f = sweep(path, data, n, &o, 0);
    /* reduced-scale decode of a crop, gray output, then a resize */
    o.min_width = o.min_height = 4;
    o.crop = (ferry_rect){1, 1, 6, 5};
    o.channels = 1;
    f += sweep(path, data, n, &o, 1);
    printf("%s: %d injected allocation failures, each refused cleanly\n", files[i], f);
    free(data);
  }
  return check_done();
}
