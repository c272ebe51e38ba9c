/* test_hash_math.c — the numeric pieces of compatible mode against their
 * oracles: scipy's DCT (bit for bit, golden from scipy), Pillow's HSV for
 * all 2^24 colours (checksum from Pillow), and the Haar transform's
 * algebra; plus hex formatting, parsing and distances. */
#include "hash/hash.h"
#include "hash_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void lcg_image(int n, int k, uint64_t *x, uint8_t *a) {
  for (int i = 0; i < n * n; i++) {
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    a[i] = (uint8_t)(*x >> 56);
  }
  if (k == 1)
    memset(a, a[0], (size_t)n * n);
  if (k == 2)
    for (int y = 1; y < n; y++)
      memcpy(a + y * n, a, (size_t)n);
}

static void test_dct(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/hash/dct_golden.txt", check_fixtures());
  FILE *f = fopen(path, "r");
  CHECK_MSG(f != NULL, "%s missing", path);
  if (!f)
    return;
  uint8_t img[64 * 64];
  double out[16 * 16];
  char line[1 << 16];
  int cases = 0, bad = 0;
  uint64_t x[65] = {0};
  int done[65] = {0};
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#')
      continue;
    int n, keep, k, off;
    if (sscanf(line, "%d %d %d%n", &n, &keep, &k, &off) != 3)
      continue;
    if (!done[n]) {
      x[n] = 12345 + (uint64_t)n;
      done[n] = 1;
    }
    lcg_image(n, k, &x[n], img);
    fy_dct_plan p;
    CHECK(fy_dct_plan_init(&p, n) == FERRY_OK);
    fy_dct2_2d_low(&p, img, (size_t)n, keep, out);
    char *s = line + off;
    for (int i = 0; i < keep * keep; i++) {
      double want = strtod(s, &s);
      if (memcmp(&want, &out[i], sizeof want)) {
        if (bad < 5)
          fprintf(stderr, "dct n %d case %d [%d]: %a, scipy %a\n", n, k, i, out[i], want);
        bad++;
      }
    }
    cases++;
  }
  fclose(f);
  CHECK_MSG(cases == 12 && bad == 0, "%d cases, %d doubles differ from scipy", cases, bad);
  fy_dct_plan p;
  CHECK(fy_dct_plan_init(&p, 48) == FERRY_EINVAL);
}

/* colorhash category of one colour, from the per-pixel function */
static int category(int r, int g, int b) {
  int l = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16, h, s;
  if (l < 32)
    return 0;
  fy_pillow_hsv(r, g, b, &h, &s);
  if (s < 85)
    return 1;
  int bin = h >= 213 ? 5 : h >= 170 ? 4 : h >= 128 ? 3 : h >= 85 ? 2 : h >= 43 ? 1 : 0;
  return s < 170 ? 2 + bin : s > 170 ? 8 + bin : 14;
}

static void test_hsv(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/hash/hsv_golden.txt", check_fixtures());
  FILE *f = fopen(path, "r");
  CHECK_MSG(f != NULL, "%s missing", path);
  if (!f)
    return;
  unsigned long long want;
  unsigned long long wcount[15];
  int ok = fscanf(f, "%llu", &want) == 1;
  for (int i = 0; i < 15; i++)
    ok = ok && fscanf(f, "%llu", &wcount[i]) == 1;
  fclose(f);
  CHECK(ok);
  /* every colour through the per-pixel function; and the table-driven
   * counter must agree with it colour for colour */
  fy_color_tables t = {0};
  CHECK(fy_color_tables_init(&t) == FERRY_OK);
  uint64_t sum = 0, count[15] = {0};
  int table_bad = 0;
  uint8_t px[3];
  int step = HC_SANITIZED ? 997 : 61;
  for (uint32_t c = 0; c < (1u << 24); c++) {
    int r = (int)(c >> 16), g = (int)(c >> 8) & 255, b = (int)c & 255;
    int code = category(r, g, b);
    sum += (uint64_t)code * ((uint64_t)c * 2654435761ull & 0xFFFFFFFFull);
    count[code]++;
    if (c % (uint32_t)step == 0) { /* the table path on a sample */
      fy_color_counts cc = {0};
      px[0] = (uint8_t)r, px[1] = (uint8_t)g, px[2] = (uint8_t)b;
      fy_color_count_rgb(&t, px, 1, 1, 3, NULL, 0, &cc);
      int tcode = cc.black ? 0 : cc.gray ? 1 : 14;
      for (int i = 0; i < 6; i++) {
        if (cc.faint[i])
          tcode = 2 + i;
        if (cc.bright[i])
          tcode = 8 + i;
      }
      table_bad += tcode != code;
    }
  }
  fy_color_tables_free(&t);
  CHECK_MSG(sum == want, "HSV categories: checksum %llu, Pillow %llu", (unsigned long long)sum,
            want);
  for (int i = 0; i < 15; i++)
    CHECK_MSG(count[i] == wcount[i], "category %d: %llu colours, Pillow %llu", i,
              (unsigned long long)count[i], wcount[i]);
  CHECK_MSG(table_bad == 0, "%d colours classified differently by the tables", table_bad);
}

static void test_haar(void) {
  /* a constant image has no detail: after removing the top LL, all zero */
  int n = 16;
  double x[256], s[1024];
  for (int i = 0; i < n * n; i++)
    x[i] = 0.5;
  CHECK(fy_haar_scratch_doubles(n) <= 1024);
  fy_haar_remove_ll(x, n, s);
  double m = 0;
  for (int i = 0; i < n * n; i++)
    m = fmax(m, fabs(x[i]));
  CHECK(m < 1e-12);
  /* LL of a level: block sums scaled by 2 per level */
  for (int i = 0; i < n * n; i++)
    x[i] = (i % n) < n / 2 ? 1 : 0;
  fy_haar_ll(x, n, 2, s);
  CHECK(fabs(x[0] - 4) < 1e-12 && fabs(x[3]) < 1e-12);
}

static void test_hex(void) {
  ferry_hash h;
  char s[80];
  CHECK(ferry_hash_from_hex("8f00000000000001", 64, &h) == FERRY_OK);
  CHECK(h.w[0] == 0x8f00000000000001ull && h.bits == 64);
  CHECK(fy_bits_get(&h, 0) == 1 && fy_bits_get(&h, 4) == 1 && fy_bits_get(&h, 63) == 1);
  CHECK(ferry_hash_to_hex(&h, s, sizeof s) == 16 && !strcmp(s, "8f00000000000001"));
  CHECK(ferry_hash_to_hex(&h, s, 10) == FERRY_EINVAL);
  /* 42-bit colorhash: 11 digits, top digit holds 2 bits */
  CHECK(ferry_hash_from_hex("30000000001", 42, &h) == FERRY_OK && h.w[0] == 0x30000000001ull);
  CHECK(ferry_hash_from_hex("40000000001", 42, &h) == FERRY_EINVAL); /* bit 42 set */
  CHECK(ferry_hash_from_hex("3000000001", 42, &h) == FERRY_EINVAL);  /* 10 digits */
  CHECK(ferry_hash_from_hex("3000000000g", 42, &h) == FERRY_EINVAL);
  /* 256 bits: element 0 is the top bit of w[3] */
  char big[65];
  memset(big, '0', 64);
  big[64] = '\0';
  big[0] = '8';
  big[63] = '3';
  CHECK(ferry_hash_from_hex(big, 256, &h) == FERRY_OK);
  CHECK(h.w[3] == 0x8000000000000000ull && h.w[0] == 3 && fy_bits_get(&h, 0) == 1);
  CHECK(ferry_hash_to_hex(&h, s, sizeof s) == 64 && !strcmp(s, big));
  uint8_t bytes[32];
  CHECK(ferry_hash_to_bytes(&h, bytes, sizeof bytes) == 32 && bytes[0] == 0x80 && bytes[31] == 3);
  CHECK(ferry_hash_to_bytes(&h, bytes, 31) == FERRY_EINVAL);
  ferry_hash_from_hex("30000000001", 42, &h); /* 6 bytes: 0x03 0x00 ... 0x01 */
  CHECK(ferry_hash_to_bytes(&h, bytes, sizeof bytes) == 6 && bytes[0] == 3 && bytes[5] == 1);
  ferry_hash a, b;
  ferry_hash_from_hex("ff00000000000000", 64, &a);
  ferry_hash_from_hex("0f00000000000001", 64, &b);
  CHECK(ferry_hash_distance(&a, &b) == 5);
  CHECK(ferry_hash_distance(&a, &h) == -1);
  ferry_hash_kind k;
  CHECK(ferry_hash_kind_parse("PHASH", &k) == FERRY_OK && k == FERRY_HASH_PHASH);
  CHECK(ferry_hash_kind_parse("dhash_vertical", &k) == FERRY_OK && k == FERRY_HASH_DHASH_V);
  CHECK(ferry_hash_kind_parse("sha1", &k) == FERRY_EINVAL);
  CHECK(!strcmp(ferry_hash_kind_name(FERRY_HASH_WHASH), "whash"));
}

static void test_median(void) {
  double v[] = {5, 1, 4, 2, 3, 6}, s[6];
  CHECK(fy_median(v, 6, s) == 3.5);
  CHECK(fy_median(v, 5, s) == 3);
  CHECK(v[0] == 5); /* input untouched */
}

/* fy_rgb_to_l (vectorised) against Pillow's formula, pixel by pixel, for
 * every width from 1 to 200 and random and extreme pixels. */
static void test_rgb_to_l(void) {
  enum { W = 200, H = 3 };
  static uint8_t rgb[H][W * 3 + 7], gray[H][W + 5];
  uint32_t seed = 12345;
  for (int y = 0; y < H; y++)
    for (int i = 0; i < W * 3; i++) {
      seed = seed * 1664525u + 1013904223u;
      rgb[y][i] = y == 1 ? (uint8_t)((seed >> 31) ? 255 : 0) : (uint8_t)(seed >> 24);
    }
  int bad = 0;
  for (int w = 1; w <= W; w++) {
    memset(gray, 0x5A, sizeof gray);
    fy_rgb_to_l(&rgb[0][0], w, H, sizeof rgb[0], &gray[0][0], sizeof gray[0]);
    for (int y = 0; y < H; y++) {
      for (int x = 0; x < w; x++) {
        const uint8_t *p = &rgb[y][3 * x];
        unsigned want = (p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16;
        bad += gray[y][x] != want;
      }
      bad += gray[y][w] != 0x5A; /* nothing written past the row */
    }
  }
  CHECK_MSG(bad == 0, "%d pixels differ", bad);
}

int main(void) {
  test_rgb_to_l();
  test_dct();
  test_hsv();
  test_haar();
  test_hex();
  test_median();
  return check_done();
}
