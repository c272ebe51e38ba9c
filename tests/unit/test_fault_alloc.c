/* test_fault_alloc.c — allocation failure at every allocation site of a
 * decode (and of ferry_resize): fy_fail_alloc_set(N) makes the Nth
 * allocation through fy_buf_reserve/fy_malloc fail. For N = 1, 2, ... each
 * decode must fail cleanly (FERRY_ENOMEM, "out of memory", no image handed
 * out) until N passes the last site and the decode succeeds. Leaks show up
 * under the ASan build (detect_leaks=1 in make test). */
#include "check.h"
#include "core/internal.h"

#include <string.h>

#define slurp(path, n) check_slurp(path, n)

/* Sweeps N over one decode; returns the number of injected failures seen. */
static int sweep(const char *path, const uint8_t *data, size_t n, const ferry_decode_options *o,
                 int resize) {
  int failures = 0;
  for (long at = 1; at <= 64; at++) {
    fy_fail_alloc_set(at);
    ferry_image im;
    memset(&im, 0xab, sizeof im);
    int rc = ferry_decode(data, n, path, o, &im);
    ferry_image out = {0};
    if (rc == FERRY_OK && resize) {
      rc = ferry_resize(&im, NULL, &out, 17, 13, FERRY_FILTER_BICUBIC);
      ferry_image_free(&im);
    }
    if (rc == FERRY_OK) {
      fy_fail_alloc_set(0);
      ferry_image_free(resize ? &out : &im);
      CHECK_MSG(failures > 0, "%s: no allocation site was hit", path);
      return failures;
    }
    failures++;
    CHECK_MSG(rc == FERRY_ENOMEM, "%s: N=%ld: %s (%s)", path, at, ferry_strerror(rc),
              ferry_last_error());
    CHECK_MSG(strstr(ferry_last_error(), "out of memory") != NULL, "%s: N=%ld: %s", path, at,
              ferry_last_error());
    CHECK_MSG(resize || im.data == NULL, "%s: N=%ld: failed decode left an image", path, at);
  }
  fy_fail_alloc_set(0);
  CHECK_MSG(0, "%s: still failing after 64 injected failures", path);
  return failures;
}

int main(void) {
  const char *fx = getenv("FERRY_FIXTURES");
  fx = fx ? fx : "tests/fixtures";
  static const char *files[] = {"hash/rgb420.jpg",       "hash/orient6.jpg",
                                "hash/cmyk.jpg",         "hash/gray.jpg",
                                "codecs/rgb8.png",       "codecs/rgba16.png",
                                "codecs/pal4_adam7.png", "codecs/orient6.png",
                                "codecs/lossy.webp",     "codecs/lossless_alpha.webp",
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
