/* test_hash_api.c — the hashing API beyond bit-exactness: fast mode on
 * every fixture (sizes right, close to compatible mode), crafted pictures
 * with known hashes, options, limits, and bad input (each error names the
 * file and the reason, in both modes). */
#include "core/internal.h"
#include "hash_check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ferry_hasher *make(ferry_hash_mode mode, int size) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.mode = mode;
  o.hash_size = size;
  ferry_hasher *h = NULL;
  CHECK(ferry_hasher_new(&o, &h) == FERRY_OK);
  return h;
}

static void test_fast_vs_compat(void) {
  const char *names[] = {"rgb420.jpg",    "rgb444.jpg", "rgb422.jpg",  "progressive.jpg",
                         "gray.jpg",      "cmyk.jpg",   "orient6.jpg", "rgb.png",
                         "rgba.png",      "gray.png",   "palette.png", "lossy.webp",
                         "lossless.webp", "restart.jpg"};
  ferry_hasher *fast = make(FERRY_HASH_FAST, 8), *compat = make(FERRY_HASH_COMPATIBLE, 8);
  int total = 0, bits = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/hash/%s", check_fixtures(), names[i]);
    ferry_hash_result a, b;
    CHECK_MSG(ferry_hash_file(fast, path, &a) == FERRY_OK, "%s", ferry_last_error());
    CHECK_MSG(ferry_hash_file(compat, path, &b) == FERRY_OK, "%s", ferry_last_error());
    CHECK(a.width == b.width && a.height == b.height && a.format == b.format);
    CHECK(a.kinds == FERRY_HASH_ALL && b.exact == 1 && a.exact == 0);
    for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
      CHECK(a.hash[k].bits == b.hash[k].bits);
      bits += ferry_hash_distance(&a.hash[k], &b.hash[k]);
      total++;
    }
  }
  /* small crafted pictures decode almost fully in fast mode: close */
  CHECK_MSG(bits <= 2 * total, "fast vs compatible: %d bits over %d hashes", bits, total);
  ferry_hasher_free(fast);
  ferry_hasher_free(compat);
}

/* A fast hash of a file does not depend on the other hashes asked for:
 * each kind alone equals the same kind among all of them, sizes 8 and 16,
 * on the DC path (large JPEGs) and the reduced-decode path (the rest). */
static void test_fast_kind_sets(void) {
  const char *names[] = {"rgb420.jpg", "progressive.jpg", "gray.jpg",  "cmyk.jpg",
                         "rgb.png",    "palette.png",     "lossy.webp"};
  int compared = 0, same = 0;
  for (int s = 8; s <= 16; s += 8) {
    ferry_hasher *all = make(FERRY_HASH_FAST, s);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/hash/%s", check_fixtures(), names[i]);
      ferry_hash_result a;
      CHECK_MSG(ferry_hash_file(all, path, &a) == FERRY_OK, "%s", ferry_last_error());
      for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
        ferry_hash_options o;
        ferry_hash_options_default(&o);
        o.hash_size = s;
        o.kinds = FERRY_HASH_MASK(k);
        ferry_hasher *one = NULL;
        ferry_hash_result b;
        CHECK(ferry_hasher_new(&o, &one) == FERRY_OK);
        CHECK(one && ferry_hash_file(one, path, &b) == FERRY_OK);
        compared++;
        int eq = one && ferry_hash_distance(&a.hash[k], &b.hash[k]) == 0;
        same += eq;
        if (!eq)
          fprintf(stderr, "  %s size %d: %s alone differs from it among all\n", names[i], s,
                  ferry_hash_kind_name((ferry_hash_kind)k));
        ferry_hasher_free(one);
      }
    }
    ferry_hasher_free(all);
  }
  printf("fast mode, each kind alone against all kinds: %d of %d equal\n", same, compared);
  CHECK(same == compared);
}

/* ferry_hash_files: each file's result or error in place, equal to
 * ferry_hash_file; progress rises to the total; NULL options are the
 * defaults; device without a GPU: compatible mode refuses, fast mode runs
 * on the CPU with a note. */
struct progress_seen {
  size_t calls, last, total;
  int backwards;
};

static void on_progress(void *user, size_t done, size_t total) {
  struct progress_seen *p = user;
  __atomic_fetch_add(&p->calls, 1, __ATOMIC_RELAXED);
  if (done < p->last)
    p->backwards = 1;
  p->last = done;
  p->total = total;
}

static void test_hash_files(void) {
  const char *names[] = {"rgb420.jpg", "missing.jpg", "rgb.png", "progressive.jpg", "lossy.webp"};
  enum { N = 5 };
  char paths[N][4096];
  const char *pv[N];
  for (int i = 0; i < N; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/hash/%s", check_fixtures(), names[i]);
    pv[i] = paths[i];
  }
  ferry_hash_result res[N];
  int status[N];
  char *errors[N];
  struct progress_seen seen = {0, 0, 0, 0};
  ferry_hash_files_options run;
  ferry_hash_files_options_default(&run);
  run.threads = 2;
  run.progress = on_progress;
  run.progress_user = &seen;
  ferry_hash_files_report rep;
  CHECK(ferry_hash_files(pv, N, NULL, &run, res, status, errors, &rep) == FERRY_OK);
  ferry_hasher *h = make(FERRY_HASH_FAST, 8);
  for (int i = 0; i < N; i++) {
    ferry_hash_result one;
    int rc = ferry_hash_file(h, pv[i], &one);
    CHECK_MSG(rc == status[i], "%s: %d against %d", names[i], status[i], rc);
    if (rc) {
      CHECK(errors[i] && strstr(errors[i], names[i]));
    } else {
      CHECK(!errors[i] && res[i].width == one.width && res[i].kinds == one.kinds);
      for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
        CHECK(ferry_hash_distance(&res[i].hash[k], &one.hash[k]) == 0);
    }
    free(errors[i]);
  }
  ferry_hasher_free(h);
  CHECK(seen.calls >= 1 && seen.last == N && seen.total == N && !seen.backwards);
  CHECK(rep.note[0] == 0 && rep.engine_files == 0);
  /* defaults everywhere; nothing to do */
  CHECK(ferry_hash_files(pv, 1, NULL, NULL, res, status, errors, NULL) == FERRY_OK &&
        status[0] == FERRY_OK);
  CHECK(ferry_hash_files(NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL) == FERRY_OK);
  CHECK(ferry_hash_files(NULL, 2, NULL, NULL, res, status, errors, NULL) == FERRY_EINVAL);
  ferry_hash_options bad;
  ferry_hash_options_default(&bad);
  bad.hash_size = 7;
  CHECK(ferry_hash_files(pv, 1, &bad, NULL, res, status, errors, NULL) == FERRY_EINVAL);
}

/* A gray image whose brightness rises to the right: every horizontal
 * difference is positive, every vertical one zero. */
static void test_crafted(void) {
  ferry_hasher *h = make(FERRY_HASH_COMPATIBLE, 8);
  int w = 64, ht = 48;
  uint8_t *px = malloc((size_t)w * ht);
  for (int y = 0; y < ht; y++)
    for (int x = 0; x < w; x++)
      px[y * w + x] = (uint8_t)(x * 4);
  ferry_image im = {px, w, ht, 1, (size_t)w};
  ferry_hash_result r;
  char hex[80];
  CHECK(ferry_hash_pixels(h, &im, &r) == FERRY_OK);
  ferry_hash_to_hex(&r.hash[FERRY_HASH_DHASH], hex, sizeof hex);
  CHECK_MSG(!strcmp(hex, "ffffffffffffffff"), "dhash of a ramp: %s", hex);
  ferry_hash_to_hex(&r.hash[FERRY_HASH_DHASH_V], hex, sizeof hex);
  CHECK_MSG(!strcmp(hex, "0000000000000000"), "vertical dhash of a ramp: %s", hex);
  ferry_hash_to_hex(&r.hash[FERRY_HASH_AHASH], hex, sizeof hex);
  CHECK_MSG(!strcmp(hex, "0f0f0f0f0f0f0f0f"), "ahash of a ramp: %s", hex);
  /* a flat picture: nothing is above the mean; colorhash: all gray */
  memset(px, 128, (size_t)w * ht);
  CHECK(ferry_hash_pixels(h, &im, &r) == FERRY_OK);
  ferry_hash_to_hex(&r.hash[FERRY_HASH_AHASH], hex, sizeof hex);
  CHECK(!strcmp(hex, "0000000000000000"));
  ferry_hash_to_hex(&r.hash[FERRY_HASH_COLORHASH], hex, sizeof hex);
  CHECK_MSG(!strcmp(hex, "07000000000"), "colorhash of gray: %s", hex); /* gray bin full */
  /* black: the first bin full */
  memset(px, 0, (size_t)w * ht);
  CHECK(ferry_hash_pixels(h, &im, &r) == FERRY_OK);
  ferry_hash_to_hex(&r.hash[FERRY_HASH_COLORHASH], hex, sizeof hex);
  CHECK_MSG(!strcmp(hex, "38000000000"), "colorhash of black: %s", hex);
  /* bad images */
  ferry_image bad = {px, w, ht, 2, (size_t)w * 2};
  CHECK(ferry_hash_pixels(h, &bad, &r) == FERRY_EINVAL);
  bad = (ferry_image){px, w, ht, 3, (size_t)w};
  CHECK(ferry_hash_pixels(h, &bad, &r) == FERRY_EINVAL);
  free(px);
  ferry_hasher_free(h);
}

static void test_options(void) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  CHECK(o.mode == FERRY_HASH_FAST && o.hash_size == 8 && o.kinds == FERRY_HASH_ALL &&
        o.colorhash_bits == 3);
  ferry_hasher *h;
  o.hash_size = 12;
  CHECK(ferry_hasher_new(&o, &h) == FERRY_EINVAL && strstr(ferry_last_error(), "8 or 16"));
  o.hash_size = 8;
  o.kinds = 0;
  CHECK(ferry_hasher_new(&o, &h) == FERRY_EINVAL);
  o.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH) | FERRY_HASH_MASK(FERRY_HASH_WHASH);
  o.colorhash_bits = 0;
  CHECK(ferry_hasher_new(&o, &h) == FERRY_EINVAL);
  o.colorhash_bits = 3;
  CHECK(ferry_hasher_new(&o, &h) == FERRY_OK);
  char path[4096];
  snprintf(path, sizeof path, "%s/hash/rgb420.jpg", check_fixtures());
  ferry_hash_result r;
  CHECK(ferry_hash_file(h, path, &r) == FERRY_OK);
  CHECK(r.kinds == o.kinds && r.hash[FERRY_HASH_AHASH].bits == 0);
  ferry_hasher_free(h);
  CHECK(ferry_hasher_new(NULL, &h) == FERRY_OK);
  ferry_hasher_free(h);
  CHECK(ferry_hasher_new(NULL, NULL) == FERRY_EINVAL);
  ferry_hasher_free(NULL);
}

static void test_bad_input(void) {
  char tmp[256], path[300];
  snprintf(tmp, sizeof tmp, "/tmp/ferry_test_hash_api_%d", (int)getpid());
  const struct {
    const char *name, *bytes, *expect;
    size_t len;
  } cases[] = {
      {"empty.jpg", "", "empty file", 0},
      {"random.jpg", "\x12\x34\x56\x78\x9a\xbc\xde\xf0", "unsupported format", 8},
      {"gif.jpg", "GIF89a\x01\x00\x01\x00", "GIF: No screen descriptor", 10},
      {"bmp.jpg", "BM\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c", "BMP: ", 14},
      {"header_only.jpg", "\xff\xd8\xff\xdb\x00\x43\x00", "", 7},
  };
  for (int mode = 0; mode < 2; mode++) {
    ferry_hasher *h = make((ferry_hash_mode)mode, 8);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      snprintf(path, sizeof path, "%s_%s", tmp, cases[i].name);
      FILE *f = fopen(path, "wb");
      fwrite(cases[i].bytes, 1, cases[i].len, f);
      fclose(f);
      ferry_hash_result r;
      int rc = ferry_hash_file(h, path, &r);
      CHECK_MSG(rc != FERRY_OK && strstr(ferry_last_error(), path) &&
                    strstr(ferry_last_error(), cases[i].expect),
                "mode %d %s: rc %d '%s'", mode, cases[i].name, rc, ferry_last_error());
      CHECK(r.kinds == 0);
      remove(path);
    }
    /* a truncated JPEG, every way: an error, never a crash */
    char src[4096];
    snprintf(src, sizeof src, "%s/hash/progressive.jpg", check_fixtures());
    fy_buf b = {0};
    size_t n;
    CHECK(fy_read_file(src, 0, &b, &n) == FERRY_OK);
    int accepted = 0;
    for (size_t cut = 2; cut + 2 < n; cut += HC_SANITIZED ? 97 : 13) {
      ferry_hash_result r;
      accepted += ferry_hash_memory(h, b.p, cut, "cut.jpg", &r) == FERRY_OK;
      CHECK(strstr(ferry_last_error(), "cut.jpg") || accepted);
    }
    CHECK_MSG(accepted == 0, "mode %d: %d truncated files hashed", mode, accepted);
    /* limits */
    ferry_hash_options o;
    ferry_hash_options_default(&o);
    o.mode = (ferry_hash_mode)mode;
    o.max_pixels = 1000;
    ferry_hasher *lim;
    CHECK(ferry_hasher_new(&o, &lim) == FERRY_OK);
    ferry_hash_result r;
    CHECK(ferry_hash_memory(lim, b.p, n, "big.jpg", &r) == FERRY_ETOO_LARGE &&
          strstr(ferry_last_error(), "big.jpg"));
    ferry_hasher_free(lim);
    o.max_pixels = 0;
    o.max_bytes = 100;
    CHECK(ferry_hasher_new(&o, &lim) == FERRY_OK);
    CHECK(ferry_hash_file(lim, src, &r) == FERRY_ETOO_LARGE);
    ferry_hasher_free(lim);
    CHECK(ferry_hash_file(h, "/no/such/file.jpg", &r) == FERRY_EIO &&
          strstr(ferry_last_error(), "/no/such/file.jpg"));
    fy_buf_free(&b);
    ferry_hasher_free(h);
  }
}

int main(void) {
  test_fast_vs_compat();
  test_fast_kind_sets();
  test_hash_files();
  test_crafted();
  test_options();
  test_bad_input();
  return check_done();
}
