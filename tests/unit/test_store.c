/* test_store.c — fy_store (layouts, dtypes, flip, normalisation) against a
 * straightforward reference, the half conversions against known bit
 * patterns (numpy's astype(float16)) and exhaustively, ferry_dtype_size. */
#include "check.h"
#include "image/image.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ------------------------------------------------------------------ half */

/* float bits -> half bits, as numpy 2.x gives them. */
static const struct {
  uint32_t f;
  uint16_t h;
} known[] = {
    {0x00000000u, 0x0000}, /* 0 */
    {0x80000000u, 0x8000}, /* -0 */
    {0x3f800000u, 0x3c00}, /* 1 */
    {0xc0000000u, 0xc000}, /* -2 */
    {0x3f000000u, 0x3800}, /* 0.5 */
    {0x477fe000u, 0x7bff}, /* 65504, the largest half */
    {0x477fefffu, 0x7bff}, /* 65519.996 */
    {0x477ff000u, 0x7c00}, /* 65520 rounds (to even) to inf */
    {0x7f800000u, 0x7c00}, /* inf */
    {0xff800000u, 0xfc00}, /* -inf */
    {0x38800000u, 0x0400}, /* 2^-14, the smallest normal */
    {0x33800000u, 0x0001}, /* 2^-24, the smallest subnormal */
    {0x33000000u, 0x0000}, /* 2^-25: tie, to even 0 */
    {0x33400000u, 0x0001}, /* 1.5 * 2^-25 */
    {0x33c00000u, 0x0002}, /* 3 * 2^-25: tie, to even 2 */
    {0x3dcccccdu, 0x2e66}, /* 0.1 */
    {0x3eaaaaabu, 0x3555}, /* 1/3 */
    {0x45001000u, 0x6800}, /* 2049: tie, to 2048 */
    {0x45003000u, 0x6802}, /* 2051: tie, to 2052 */
    {0x3f801000u, 0x3c00}, /* 1 + 2^-11: tie, to 1 */
    {0x3f803000u, 0x3c02}, /* 1 + 3 * 2^-11: tie, up */
    {0xaedbe6ffu, 0x8000}, /* -1e-10 */
    {0x501502f9u, 0x7c00}, /* 1e10 */
    {0x387fda40u, 0x03ff}, /* 6.1e-5, just under 2^-14 */
    {0x337ffae5u, 0x0001}, /* 5.96e-8 */
    {0x38d1b717u, 0x068e}, /* 1e-4 */
    {0x40490fdbu, 0x4248}, /* pi */
    {0xc77fef00u, 0xfbff}, /* -65519 */
    {0x7fc00000u, 0x7e00}, /* quiet NaN */
    {0xffc00000u, 0xfe00}, /* negative NaN */
    {0x7f800001u, 0x7c01}, /* NaN whose payload is all in the dropped bits */
    {0x7fffffffu, 0x7fff}, /* NaN, all payload */
    {0x7fa00000u, 0x7d00}, /* signalling NaN keeps its payload */
};

static void test_half_known(void) {
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    uint16_t h = fy_f32_to_f16(float_of(known[i].f));
    CHECK_MSG(h == known[i].h, "f32 0x%08x -> f16 0x%04x, want 0x%04x", known[i].f, h, known[i].h);
  }
  CHECK(fy_f16_to_f32(0x3c00) == 1.0f);
  CHECK(fy_f16_to_f32(0x7bff) == 65504.0f);
  CHECK(fy_f16_to_f32(0x0001) == 0x1p-24f);
  CHECK(fy_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
  CHECK(bits_of(fy_f16_to_f32(0x8000)) == 0x80000000u);
  CHECK(bits_of(fy_f16_to_f32(0xfc00)) == 0xff800000u);
  CHECK(bits_of(fy_f16_to_f32(0x7e00)) == 0x7fc00000u);
  CHECK(isnan(fy_f16_to_f32(0x7c01)));
}

/* The value of every half from its fields, for f16 -> f32. */
static double half_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}

static void test_half_exhaustive(void) {
  int bad_value = 0, bad_trip = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = fy_f16_to_f32((uint16_t)h);
    double want = half_value((uint16_t)h);
    if (isnan(want) ? !isnan(f) : (double)f != want || !signbit(f) != !signbit(want))
      bad_value++;
    if (fy_f32_to_f16(f) != h) /* every half survives f16 -> f32 -> f16, NaNs too */
      bad_trip++;
  }
  CHECK_MSG(bad_value == 0, "%d halves convert to the wrong float", bad_value);
  CHECK_MSG(bad_trip == 0, "%d halves do not round-trip", bad_trip);
}

/* Between every two neighbouring finite halves: the exact midpoint goes to
 * the even one, a float either side of it to the nearer one. */
static void test_half_rounding(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 0x7bff; h++) {
    for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
      float lo = fy_f16_to_f32((uint16_t)(h | sign)),
            hi = fy_f16_to_f32((uint16_t)((h + 1) | sign));
      float mid = (float)(((double)lo + hi) / 2); /* exact: 12 significant bits */
      uint16_t even = (uint16_t)(((h & 1) ? h + 1 : h) | sign);
      bad += fy_f32_to_f16(mid) != even;
      bad += fy_f32_to_f16(nextafterf(mid, lo)) != (uint16_t)(h | sign);
      bad += fy_f32_to_f16(nextafterf(mid, hi)) != (uint16_t)((h + 1) | sign);
    }
  }
  CHECK_MSG(bad == 0, "%d midpoint roundings wrong", bad);
  /* Above the largest half: the midpoint to inf is 65520. */
  CHECK(fy_f32_to_f16(nextafterf(65520.0f, 0)) == 0x7bff);
  CHECK(fy_f32_to_f16(65520.0f) == 0x7c00);
  CHECK(fy_f32_to_f16(-65520.0f) == 0xfc00);
  CHECK(fy_f32_to_f16(3.0e38f) == 0x7c00);
  /* Float subnormals are far below half's range. */
  CHECK(fy_f32_to_f16(float_of(0x00000001u)) == 0x0000);
  CHECK(fy_f32_to_f16(float_of(0x80400000u)) == 0x8000);
}

/* A slow reference through double arithmetic and nearbyint (round to
 * even), on a spread of float bit patterns. */
static uint16_t ref_half(float f) {
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (isnan(f) || isinf(f) || a >= 65520.0)
    return fy_f32_to_f16(f); /* covered by the known patterns */
  if (a < 0x1p-14)
    return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
  int ex;
  frexp(a, &ex);                           /* a = fr * 2^ex, fr in [0.5, 1) */
  double m = nearbyint(ldexp(a, 11 - ex)); /* 1024 .. 2048 */
  if (m == 2048) {
    m = 1024;
    ex++;
  }
  return (uint16_t)(sign | (uint16_t)((ex - 1 + 15) << 10) | (uint16_t)(m - 1024));
}

static void test_half_random(void) {
  uint32_t x = 0x9e3779b9u;
  int bad = 0;
  for (int i = 0; i < 2000000; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    /* Mostly in half's range: exponents 90 .. 160. */
    uint32_t bits = (x & 0x807fffffu) | ((90u + (x >> 8) % 71u) << 23);
    bad += fy_f32_to_f16(float_of(bits)) != ref_half(float_of(bits));
  }
  CHECK_MSG(bad == 0, "%d random floats round differently from the reference", bad);
}

/* ----------------------------------------------------------------- store */

static void ref_store(const uint8_t *src, int w, int h, int c, size_t sstride,
                      const fy_store_params *p, void *dst) {
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int ch = 0; ch < c; ch++) {
        int sx = p->flip ? w - 1 - x : x;
        float v = src[(size_t)y * sstride + (size_t)sx * c + ch];
        float f = p->normalize ? (v / 255.0f - p->mean[ch]) / p->std[ch] : v / 255.0f;
        size_t i = p->layout == FERRY_LAYOUT_CHW ? ((size_t)ch * h + y) * w + x
                                                 : ((size_t)y * w + x) * c + ch;
        if (p->dtype == FERRY_F32) {
          ((float *)dst)[i] = f;
        } else if (p->dtype == FERRY_F16) {
          ((uint16_t *)dst)[i] = fy_f32_to_f16(f);
        } else {
          float r = p->normalize ? rintf(f) : v;
          ((uint8_t *)dst)[i] = !(r > 0) ? 0 : r >= 255 ? 255 : (uint8_t)r;
        }
      }
}

static uint8_t *make_image(int w, int h, int c, size_t stride, uint32_t seed) {
  uint8_t *p = malloc(stride * h);
  for (size_t i = 0; i < stride * h; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (uint8_t)(seed >> 24);
  }
  p[0] = 0; /* both extremes, for the clamps */
  p[c < 2 ? 0 : 1] = 255;
  (void)w;
  return p;
}

static const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f};
static const float imagenet_std[3] = {0.229f, 0.224f, 0.225f};

static void check_store(int w, int h, int c, size_t pad, fy_store_params p, int seed) {
  size_t sstride = (size_t)w * c + pad, n = (size_t)w * h * c, es = ferry_dtype_size(p.dtype);
  uint8_t *src = make_image(w, h, c, sstride, (uint32_t)seed);
  uint8_t *got = malloc(n * es + 16), *want = malloc(n * es);
  memset(got, 0xa5, n * es + 16);
  fy_store(src, w, h, c, sstride, &p, got);
  ref_store(src, w, h, c, sstride, &p, want);
  CHECK_MSG(memcmp(got, want, n * es) == 0,
            "store %dx%dx%d layout %d dtype %d flip %d normalize %d differs", w, h, c, p.layout,
            p.dtype, p.flip, p.normalize);
  int guard_ok = 1;
  for (int i = 0; i < 16; i++)
    guard_ok &= got[n * es + i] == 0xa5;
  CHECK_MSG(guard_ok, "store %dx%dx%d wrote past the sample", w, h, c);
  free(src);
  free(got);
  free(want);
}

static void test_store_matrix(void) {
  static const int sizes[][2] = {{1, 1}, {7, 3}, {224, 224}, {33, 17}, {2, 5}};
  int seed = 1;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int c = 1; c <= 3; c += 2)
      for (int layout = 0; layout < 2; layout++)
        for (int dtype = 0; dtype < 3; dtype++)
          for (int flip = 0; flip < 2; flip++)
            for (int norm = 0; norm < 2; norm++) {
              fy_store_params p = {
                  (ferry_layout)layout, (ferry_dtype)dtype, flip, norm, {0}, {0}, 0};
              memcpy(p.mean, imagenet_mean, sizeof p.mean);
              memcpy(p.std, imagenet_std, sizeof p.std);
              check_store(sizes[s][0], sizes[s][1], c, s % 2 ? 5 : 0, p, seed++);
            }
}

static void test_store_values(void) {
  uint8_t px[6] = {0, 128, 255, 10, 20, 30}; /* 2 x 1 RGB */
  float f[6];
  uint16_t h[6];
  uint8_t u[6];
  fy_store_params p = {FERRY_LAYOUT_HWC, FERRY_F32, 0, 0, {0, 0, 0}, {1, 1, 1}, 0};
  fy_store(px, 2, 1, 3, 6, &p, f);
  CHECK(f[0] == 0.0f && f[2] == 1.0f && f[1] == 128.0f / 255.0f);
  p.dtype = FERRY_F16;
  fy_store(px, 2, 1, 3, 6, &p, h);
  CHECK(h[0] == 0x0000 && h[2] == 0x3c00);
  /* CHW + flip: plane 0 is R of pixel 1 then pixel 0. */
  p = (fy_store_params){FERRY_LAYOUT_CHW, FERRY_U8, 1, 0, {0}, {1, 1, 1}, 0};
  fy_store(px, 2, 1, 3, 6, &p, u);
  static const uint8_t chw_flip[6] = {10, 0, 20, 128, 30, 255};
  CHECK(memcmp(u, chw_flip, 6) == 0);
  /* u8 with normalize: rounded half to even, clamped. */
  p = (fy_store_params){FERRY_LAYOUT_HWC, FERRY_U8, 0, 1, {0.5f, 0, 0}, {0.25f, 1.0f / 255, 1}, 0};
  fy_store(px, 2, 1, 3, 6, &p, u);
  CHECK(u[0] == 0);   /* (0 - 0.5) * 4 = -2 -> 0 */
  CHECK(u[3] == 0);   /* (10/255 - 0.5) * 4 < 0 */
  CHECK(u[1] == 128); /* 128/255 / (1/255) = 128 */
  CHECK(u[4] == 20);
  CHECK(u[2] == 1 && u[5] == 0); /* 255/255 = 1; 30/255 rounds to 0 */
  /* A zero std does not crash: inf clamps, NaN gives 0. */
  p = (fy_store_params){FERRY_LAYOUT_HWC, FERRY_U8, 0, 1, {0, 0, 0}, {0, 0, 0}, 0};
  fy_store(px, 2, 1, 3, 6, &p, u);
  CHECK(u[0] == 0 && u[1] == 255);
  /* Gray, CHW == HWC for one channel. */
  p = (fy_store_params){FERRY_LAYOUT_CHW, FERRY_F32, 1, 1, {0.5f, 0, 0}, {0.5f, 1, 1}, 0};
  fy_store(px, 3, 1, 1, 3, &p, f);
  CHECK(f[0] == (255 / 255.0f - 0.5f) / 0.5f && f[2] == (0 / 255.0f - 0.5f) / 0.5f);
}

/* fy_copy_stream equals memcpy for every length and misalignment around
 * its block sizes, leaves the bytes around the destination alone; a
 * contiguous u8 HWC store with streaming on copies the sample exactly. */
static void test_copy_stream(void) {
  enum { CAP = 3 * 4096 + 512 };
  static uint8_t src[CAP], dst[CAP + 64], ref[CAP + 64];
  for (int i = 0; i < CAP; i++)
    src[i] = (uint8_t)(i * 131 + 7);
  const size_t lens[] = {0, 1, 31, 4095, 4096, 4097, 4096 + 127, 4096 + 128, 8191, 3 * 4096 + 100};
  int bad = 0;
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (int so = 0; so < 3; so++)
      for (int dof = 0; dof < 40; dof += 13) {
        size_t n = lens[li];
        memset(dst, 0xA5, sizeof dst);
        memset(ref, 0xA5, sizeof ref);
        fy_copy_stream(dst + dof, src + so, n);
        memcpy(ref + dof, src + so, n);
        bad += memcmp(dst, ref, sizeof dst) != 0;
      }
  CHECK(bad == 0);
  static uint8_t img[64 * 48 * 3], out[64 * 48 * 3];
  for (size_t i = 0; i < sizeof img; i++)
    img[i] = (uint8_t)(i * 7 + 3);
  fy_store_params p = {FERRY_LAYOUT_HWC, FERRY_U8, 0, 0, {0, 0, 0}, {1, 1, 1}, 1};
  fy_store(img, 64, 48, 3, 64 * 3, &p, out);
  CHECK(memcmp(img, out, sizeof img) == 0);
  /* a strided source (a crop of a wider image) still copies row by row */
  memset(out, 0, sizeof out);
  fy_store(img, 32, 48, 3, 64 * 3, &p, out);
  int rows_ok = 1;
  for (int y = 0; y < 48; y++)
    rows_ok &= memcmp(out + y * 32 * 3, img + y * 64 * 3, 32 * 3) == 0;
  CHECK(rows_ok);
}

static void test_dtype_size(void) {
  CHECK(ferry_dtype_size(FERRY_U8) == 1);
  CHECK(ferry_dtype_size(FERRY_F16) == 2);
  CHECK(ferry_dtype_size(FERRY_F32) == 4);
  CHECK(ferry_dtype_size((ferry_dtype)42) == 0);
}

int main(void) {
  test_half_known();
  test_half_exhaustive();
  test_half_rounding();
  test_half_random();
  test_store_matrix();
  test_store_values();
  test_copy_stream();
  test_dtype_size();
  return check_done();
}
