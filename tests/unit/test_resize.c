/* test_resize.c — fy_resize_u8 / ferry_resize against Pillow's outputs
 * (tests/fixtures/resize, written by tests/gen/gen_resize_golden.py), the
 * 2-tap bilinear filter against a double-precision reference, and the
 * argument checks. */
#include "check.h"
#include "image/image.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------ fixtures */

/* Mirrors pattern() in gen_resize_golden.py. */
static uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

static uint8_t pattern_at(int w, int x, int y, int c, uint32_t seed) {
  uint32_t ux = (uint32_t)x, uy = (uint32_t)y, uc = (uint32_t)c;
  uint32_t r = mix32(seed * 0x9E3779B1u + (uy * (uint32_t)w + ux) * 4u + uc);
  switch (((ux >> 3) + (uy >> 3) + seed) & 3u) {
  case 0: return (uint8_t)(r & 255u);
  case 1: return (uint8_t)((ux * 5u + uy * 3u + uc * 70u) & 255u);
  case 2: return (r >> 9) & 1u ? 255 : 0;
  default: return (uint8_t)((ux + uy * 2u + uc * 60u) & 255u);
  }
}

/* A w x h x c image with `pad` spare bytes at the end of every row. */
static uint8_t *make_pattern(int w, int h, int c, uint32_t seed, size_t pad) {
  size_t stride = (size_t)w * c + pad;
  uint8_t *p = malloc(stride * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int ch = 0; ch < c; ch++)
        p[y * stride + (size_t)x * c + ch] = pattern_at(w, x, y, ch, seed);
  return p;
}

static uint64_t fnv1a64(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static uint8_t *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
  *size = fread(p, 1, (size_t)n, f);
  fclose(f);
  return p;
}

static ferry_filter filter_named(const char *s) {
  if (!strcmp(s, "triangle"))
    return FERRY_FILTER_TRIANGLE;
  if (!strcmp(s, "area"))
    return FERRY_FILTER_AREA;
  if (!strcmp(s, "bicubic"))
    return FERRY_FILTER_BICUBIC;
  if (!strcmp(s, "lanczos"))
    return FERRY_FILTER_LANCZOS;
  return FERRY_FILTER_NEAREST;
}

typedef struct golden_case {
  char name[96], filter[16], box[4][32], kind[8], value[32];
  int channels, sw, sh, dw, dh;
  unsigned seed;
} golden_case;

static int parse_case(const char *line, golden_case *g) {
  return sscanf(line, "%95s %15s %d %d %d %u %31s %31s %31s %31s %d %d %7s %31s", g->name,
                g->filter, &g->channels, &g->sw, &g->sh, &g->seed, g->box[0], g->box[1], g->box[2],
                g->box[3], &g->dw, &g->dh, g->kind, g->value) == 14;
}

static int max_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *count) {
  int m = 0;
  *count = 0;
  for (size_t i = 0; i < n; i++) {
    int d = abs((int)a[i] - (int)b[i]);
    *count += d != 0;
    m = d > m ? d : m;
  }
  return m;
}

/* Compares an output with the golden pixels or digest of case g. */
static void check_output(const golden_case *g, const uint8_t *out, const uint8_t *blob,
                         size_t blob_size, const char *via) {
  size_t n = (size_t)g->dw * g->dh * g->channels, count;
  if (!strcmp(g->kind, "fnv")) {
    unsigned long long want = strtoull(g->value, NULL, 16);
    CHECK_MSG(fnv1a64(out, n) == want, "%s (%s): digest differs from Pillow's", g->name, via);
    return;
  }
  size_t off = strtoull(g->value, NULL, 10);
  CHECK_MSG(off + n <= blob_size, "%s: golden.bin too short", g->name);
  if (off + n > blob_size)
    return;
  int m = max_diff(out, blob + off, n, &count);
  CHECK_MSG(m == 0, "%s (%s): max diff %d in %zu of %zu bytes", g->name, via, m, count, n);
}

/* ferry_resize takes integer boxes only: run it where the case allows. */
static void check_public(const golden_case *g, const fy_box *box, const uint8_t *src,
                         const uint8_t *blob, size_t blob_size) {
  ferry_rect rect, *r = NULL;
  if (box) {
    if (box->x0 != floor(box->x0) || box->y0 != floor(box->y0) || box->x1 != floor(box->x1) ||
        box->y1 != floor(box->y1) || box->x1 == box->x0 || box->y1 == box->y0)
      return;
    rect = (ferry_rect){(int)box->x0, (int)box->y0, (int)(box->x1 - box->x0),
                        (int)(box->y1 - box->y0)};
    r = &rect;
  }
  ferry_image in = {(uint8_t *)src, g->sw, g->sh, g->channels, (size_t)g->sw * g->channels};
  ferry_image out;
  int rc = ferry_resize(&in, r, &out, g->dw, g->dh, filter_named(g->filter));
  CHECK_MSG(rc == FERRY_OK, "%s: ferry_resize: %s", g->name, ferry_last_error());
  if (rc)
    return;
  CHECK(out.width == g->dw && out.height == g->dh && out.channels == g->channels);
  CHECK(out.stride == (size_t)g->dw * g->channels);
  check_output(g, out.data, blob, blob_size, "ferry_resize");
  free(out.data); /* ferry_image_free() is free(data) */
}

/* Runs one case through fy_resize_u8 with a padded source and output
 * stride every third case, so that strides are honoured. */
static void run_case(const golden_case *g, const uint8_t *blob, size_t blob_size,
                     fy_resize_ctx *ctx, int index) {
  fy_box box, *pbox = NULL;
  if (strcmp(g->box[0], "-")) {
    box = (fy_box){strtod(g->box[0], NULL), strtod(g->box[1], NULL), strtod(g->box[2], NULL),
                   strtod(g->box[3], NULL)};
    pbox = &box;
  }
  size_t spad = index % 3 == 0 ? 13 : 0, dpad = index % 3 == 0 ? 7 : 0;
  uint8_t *src = make_pattern(g->sw, g->sh, g->channels, g->seed, spad);
  size_t drow = (size_t)g->dw * g->channels, dstride = drow + dpad;
  uint8_t *dst = malloc(dstride * g->dh), *packed = malloc(drow * g->dh);
  int rc = fy_resize_u8(src, g->sw, g->sh, (size_t)g->sw * g->channels + spad, g->channels, pbox,
                        dst, g->dw, g->dh, dstride, filter_named(g->filter), ctx);
  CHECK_MSG(rc == FERRY_OK, "%s: %s", g->name, ferry_last_error());
  if (rc == FERRY_OK) {
    for (int y = 0; y < g->dh; y++)
      memcpy(packed + y * drow, dst + y * dstride, drow);
    check_output(g, packed, blob, blob_size, "fy_resize_u8");
  }
  if (!spad) /* ferry_resize wants a packed source here */
    check_public(g, pbox, src, blob, blob_size);
  free(src);
  free(dst);
  free(packed);
}

static void test_pillow_goldens(void) {
  char path[4096], line[512];
  size_t blob_size = 0;
  snprintf(path, sizeof path, "%s/resize/golden.bin", check_fixtures());
  uint8_t *blob = read_all(path, &blob_size);
  snprintf(path, sizeof path, "%s/resize/cases.txt", check_fixtures());
  FILE *f = fopen(path, "r");
  CHECK_MSG(f && blob, "cannot read %s (set FERRY_FIXTURES)", path);
  if (!f || !blob) {
    free(blob);
    if (f)
      fclose(f);
    return;
  }
  fy_resize_ctx ctx = {{0}, {0}};
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    golden_case g;
    if (line[0] == '#' || !parse_case(line, &g))
      continue;
    run_case(&g, blob, blob_size, &ctx, n++);
  }
  CHECK_MSG(n >= 100, "only %d golden cases", n);
  fclose(f);
  free(blob);
  fy_resize_ctx_free(&ctx);
}

/* ----------------------------------------------- an independent reference */

/* Pillow's resampling written as plainly as possible (full-size
 * intermediate, variable-length windows, no padding or blocking), to
 * cross-check the optimised passes on many random geometries. */
/* Products rounded before any addition (no fused multiply-add), as in
 * Pillow's build, whatever -ffp-contract says. */
static double rmul(double a, double b) {
  volatile double p = a * b;
  return p;
}

static double ref_filter(ferry_filter f, double x) {
  double ax = fabs(x);
  switch (f) {
  case FERRY_FILTER_AREA: return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0;
  case FERRY_FILTER_TRIANGLE: return ax < 1.0 ? 1.0 - ax : 0.0;
  case FERRY_FILTER_BICUBIC:
    if (ax < 1.0)
      return rmul(rmul(rmul(1.5, ax) - 2.5, ax), ax) + 1;
    return ax < 2.0 ? rmul(rmul(rmul(ax - 5, ax) + 8, ax) - 4, -0.5) : 0.0;
  default: {
    if (!(-3.0 <= x && x < 3.0))
      return 0.0;
    double a = x == 0.0 ? 1.0 : sin(x * M_PI) / (x * M_PI);
    double b = x / 3 == 0.0 ? 1.0 : sin(x / 3 * M_PI) / (x / 3 * M_PI);
    return a * b;
  }
  }
}

static double ref_support(ferry_filter f) {
  return f == FERRY_FILTER_AREA       ? 0.5
         : f == FERRY_FILTER_TRIANGLE ? 1.0
         : f == FERRY_FILTER_BICUBIC  ? 2.0
                                      : 3.0;
}

typedef struct ref_axis {
  int ksize, *xmin, *n;
  int32_t *k;
} ref_axis;

static ref_axis ref_weights(ferry_filter f, int in_size, float in0, float in1, int out) {
  ref_axis a;
  double scale = (double)(in1 - in0) / out, fs = scale < 1 ? 1 : scale;
  double support = rmul(ref_support(f), fs);
  a.ksize = (int)ceil(support) * 2 + 1;
  a.xmin = malloc(sizeof(int) * out);
  a.n = malloc(sizeof(int) * out);
  a.k = calloc((size_t)out * a.ksize, sizeof(int32_t));
  double *w = malloc(sizeof(double) * a.ksize);
  for (int i = 0; i < out; i++) {
    double center = in0 + rmul(i + 0.5, scale), sum = 0;
    int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
    lo = lo < 0 ? 0 : lo;
    hi = hi > in_size ? in_size : hi;
    a.xmin[i] = lo;
    a.n[i] = hi - lo;
    for (int j = 0; j < hi - lo; j++)
      sum += w[j] = ref_filter(f, rmul(j + lo - center + 0.5, 1.0 / fs));
    for (int j = 0; j < hi - lo; j++) {
      double v = sum != 0.0 ? w[j] / sum : w[j];
      a.k[(size_t)i * a.ksize + j] = (int32_t)(v < 0 ? -0.5 + v * (1 << 22) : 0.5 + v * (1 << 22));
    }
  }
  free(w);
  return a;
}

static void ref_free(ref_axis *a) {
  free(a->xmin);
  free(a->n);
  free(a->k);
}

static uint8_t ref_clip(int64_t acc) {
  int64_t v = acc >> 22;
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* One pass along x (dx = c, dy = row bytes) or y, image w x h -> out. */
static void ref_pass(const uint8_t *in, int w, int h, int c, int horizontal, const ref_axis *a,
                     int out_len, uint8_t *out) {
  int ow = horizontal ? out_len : w, oh = horizontal ? h : out_len;
  for (int y = 0; y < oh; y++)
    for (int x = 0; x < ow; x++)
      for (int ch = 0; ch < c; ch++) {
        int i = horizontal ? x : y;
        int64_t acc = 1 << 21;
        for (int j = 0; j < a->n[i]; j++) {
          int sx = horizontal ? a->xmin[i] + j : x, sy = horizontal ? y : a->xmin[i] + j;
          acc += (int64_t)in[((size_t)sy * w + sx) * c + ch] * a->k[(size_t)i * a->ksize + j];
        }
        out[((size_t)y * ow + x) * c + ch] = ref_clip(acc);
      }
}

static void ref_resize(const uint8_t *src, int sw, int sh, int c, const float b[4], int dw, int dh,
                       ferry_filter f, uint8_t *out) {
  int need_h = dw != sw || b[0] != 0 || b[2] != dw, need_v = dh != sh || b[1] != 0 || b[3] != dh;
  int h_first = !((sh - dh) > 0 && (sh - dh) > (sw - dw) * 2);
  ref_axis h = ref_weights(f, sw, b[0], b[2], dw), v = ref_weights(f, sh, b[1], b[3], dh);
  uint8_t *tmp = malloc((size_t)(sw > dw ? sw : dw) * (sh > dh ? sh : dh) * c);
  if (!need_h && !need_v)
    memcpy(out, src, (size_t)sw * sh * c);
  else if (!need_v)
    ref_pass(src, sw, sh, c, 1, &h, dw, out);
  else if (!need_h)
    ref_pass(src, sw, sh, c, 0, &v, dh, out);
  else if (h_first) {
    ref_pass(src, sw, sh, c, 1, &h, dw, tmp);
    ref_pass(tmp, dw, sh, c, 0, &v, dh, out);
  } else {
    ref_pass(src, sw, sh, c, 0, &v, dh, tmp);
    ref_pass(tmp, sw, dh, c, 1, &h, dw, out);
  }
  free(tmp);
  ref_free(&h);
  ref_free(&v);
}

/* Pillow's nearest neighbour: a running sum of the step, truncated. */
static void ref_nearest(const uint8_t *src, int sw, int sh, int c, const float b[4], int dw, int dh,
                        uint8_t *out) {
  double sx = (double)(b[2] - b[0]) / dw, sy = (double)(b[3] - b[1]) / dh;
  double yo = b[1] + sy * 0.5;
  for (int y = 0; y < dh; y++, yo += sy) {
    double xo = b[0] + sx * 0.5;
    for (int x = 0; x < dw; x++, xo += sx) {
      int xi = (int)xo, yi = (int)yo;
      for (int ch = 0; ch < c; ch++)
        out[((size_t)y * dw + x) * c + ch] =
            xi < sw && yi < sh ? src[((size_t)yi * sw + xi) * c + ch] : 0;
    }
  }
}

static int rand_int(uint32_t *state, int lo, int hi) {
  *state = *state * 1664525u + 1013904223u;
  return lo + (int)((*state >> 8) % (uint32_t)(hi - lo + 1));
}

/* A random box inside w x h, in 1/16 pixels or not at all. */
static void rand_box(uint32_t *st, int w, int h, fy_box *box, float fb[4]) {
  if (rand_int(st, 0, 3) == 0) {
    *box = (fy_box){0, 0, w, h};
  } else {
    int x0 = rand_int(st, 0, w * 16 - 1), y0 = rand_int(st, 0, h * 16 - 1);
    *box = (fy_box){x0 / 16.0, y0 / 16.0, rand_int(st, x0 + 1, w * 16) / 16.0,
                    rand_int(st, y0 + 1, h * 16) / 16.0};
  }
  fb[0] = (float)box->x0, fb[1] = (float)box->y0, fb[2] = (float)box->x1, fb[3] = (float)box->y1;
}

static void test_against_reference(void) {
  static const ferry_filter filters[] = {FERRY_FILTER_TRIANGLE, FERRY_FILTER_AREA,
                                         FERRY_FILTER_BICUBIC, FERRY_FILTER_LANCZOS,
                                         FERRY_FILTER_NEAREST};
  static const int chans[] = {1, 3, 4};
  uint32_t st = 12345;
  fy_resize_ctx ctx = {{0}, {0}};
  int bad = 0;
  for (int i = 0; i < 400; i++) {
    int c = chans[rand_int(&st, 0, 2)], sw = rand_int(&st, 1, 160), sh = rand_int(&st, 1, 160);
    int dw = rand_int(&st, 1, 160), dh = rand_int(&st, 1, 160);
    ferry_filter f = filters[i % 5];
    fy_box box;
    float fb[4];
    rand_box(&st, sw, sh, &box, fb);
    uint8_t *src = make_pattern(sw, sh, c, (uint32_t)i, 0);
    uint8_t *got = malloc((size_t)dw * dh * c), *want = malloc((size_t)dw * dh * c);
    int rc =
        fy_resize_u8(src, sw, sh, (size_t)sw * c, c, &box, got, dw, dh, (size_t)dw * c, f, &ctx);
    if (f == FERRY_FILTER_NEAREST)
      ref_nearest(src, sw, sh, c, fb, dw, dh, want);
    else
      ref_resize(src, sw, sh, c, fb, dw, dh, f, want);
    size_t count;
    int m = rc ? -1 : max_diff(got, want, (size_t)dw * dh * c, &count);
    CHECK_MSG(m == 0,
              "random case %d: %dx%dx%d box (%g,%g)-(%g,%g) -> %dx%d filter %d: rc %d, "
              "max diff %d",
              i, sw, sh, c, box.x0, box.y0, box.x1, box.y1, dw, dh, f, rc, m);
    bad += m != 0;
    free(src);
    free(got);
    free(want);
  }
  CHECK(bad == 0);
  fy_resize_ctx_free(&ctx);
}

/* ------------------------------------------------------------ bilinear */

/* Straightforward 2-tap interpolation in double: half-pixel centres,
 * coordinates clamped to the image. */
static double ref_coord(double b0, double b1, int out, int in, int i, int *x0, int *x1) {
  double s = b0 + (i + 0.5) * (b1 - b0) / out - 0.5;
  if (s < 0)
    s = 0;
  if (s > in - 1)
    s = in - 1;
  *x0 = (int)s;
  *x1 = *x0 + 1 < in ? *x0 + 1 : *x0;
  return s - *x0;
}

static int bilinear_max_error(const uint8_t *src, int sw, int sh, int c, const fy_box *b,
                              const uint8_t *out, int dw, int dh) {
  int worst = 0;
  for (int y = 0; y < dh; y++) {
    int y0, y1, x0, x1;
    double fy = ref_coord(b->y0, b->y1, dh, sh, y, &y0, &y1);
    for (int x = 0; x < dw; x++) {
      double fx = ref_coord(b->x0, b->x1, dw, sw, x, &x0, &x1);
      for (int ch = 0; ch < c; ch++) {
#define P(yy, xx) src[((size_t)(yy)*sw + (xx)) * c + ch]
        double top = P(y0, x0) * (1 - fx) + P(y0, x1) * fx;
        double bot = P(y1, x0) * (1 - fx) + P(y1, x1) * fx;
#undef P
        int want = (int)floor(top * (1 - fy) + bot * fy + 0.5);
        int d = abs(want - out[((size_t)y * dw + x) * c + ch]);
        worst = d > worst ? d : worst;
      }
    }
  }
  return worst;
}

static void test_bilinear(void) {
  static const struct {
    int c, sw, sh, dw, dh;
    fy_box box;
  } cases[] = {
      {3, 97, 73, 31, 23, {0, 0, 97, 73}},
      {3, 13, 11, 41, 37, {0, 0, 13, 11}},
      {1, 64, 48, 17, 29, {0, 0, 64, 48}},
      {4, 50, 40, 23, 57, {0, 0, 50, 40}},
      {3, 120, 90, 33, 27, {10.25, 7.5, 97.75, 80.125}},
      {3, 60, 45, 64, 48, {3.3, 4.7, 55.1, 41.9}},
      {3, 500, 375, 224, 224, {0, 0, 500, 375}},
      {1, 1, 1, 3, 2, {0, 0, 1, 1}},
      {3, 40, 300, 36, 20, {0, 0, 40, 300}},
  };
  fy_resize_ctx ctx = {{0}, {0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int c = cases[i].c, dw = cases[i].dw, dh = cases[i].dh;
    uint8_t *src = make_pattern(cases[i].sw, cases[i].sh, c, 1000 + (uint32_t)i, 0);
    uint8_t *out = malloc((size_t)dw * dh * c);
    int rc = fy_resize_u8(src, cases[i].sw, cases[i].sh, (size_t)cases[i].sw * c, c, &cases[i].box,
                          out, dw, dh, (size_t)dw * c, FERRY_FILTER_BILINEAR, &ctx);
    CHECK_MSG(rc == FERRY_OK, "bilinear %zu: %s", i, ferry_last_error());
    if (rc == FERRY_OK) {
      int e = bilinear_max_error(src, cases[i].sw, cases[i].sh, c, &cases[i].box, out, dw, dh);
      CHECK_MSG(e <= 1, "bilinear case %zu: off by %d from the double reference", i, e);
    }
    free(src);
    free(out);
  }
  fy_resize_ctx_free(&ctx);
}

/* ------------------------------------------------------- other checks */

/* Once warmed up on a size, the context does not allocate again. */
static void test_ctx_reuse(void) {
  fy_resize_ctx ctx = {{0}, {0}};
  uint8_t *src = make_pattern(500, 375, 3, 7, 0), *a = malloc(224 * 224 * 3),
          *b = malloc(224 * 224 * 3);
  fy_box box = {31.25, 0, 468.75, 375};
  CHECK(fy_resize_u8(src, 500, 375, 1500, 3, &box, a, 224, 224, 672, FERRY_FILTER_TRIANGLE, &ctx) ==
        FERRY_OK);
  void *coeffs = ctx.coeffs.p, *temp = ctx.temp.p;
  size_t ccap = ctx.coeffs.cap, tcap = ctx.temp.cap;
  CHECK(fy_resize_u8(src, 500, 375, 1500, 3, &box, b, 224, 224, 672, FERRY_FILTER_TRIANGLE, &ctx) ==
        FERRY_OK);
  CHECK(ctx.coeffs.p == coeffs && ctx.temp.p == temp);
  CHECK(ctx.coeffs.cap == ccap && ctx.temp.cap == tcap);
  CHECK(memcmp(a, b, 224 * 224 * 3) == 0);
  free(src);
  free(a);
  free(b);
  fy_resize_ctx_free(&ctx);
  fy_resize_ctx_free(&ctx); /* twice is harmless */
  CHECK(ctx.coeffs.p == NULL && ctx.temp.p == NULL);
}

/* Same size, whole box: a copy, whatever the filter. */
static void test_identity(void) {
  fy_resize_ctx ctx = {{0}, {0}};
  uint8_t *src = make_pattern(33, 17, 3, 9, 0), *out = malloc(33 * 17 * 3);
  for (int f = FERRY_FILTER_BILINEAR; f <= FERRY_FILTER_NEAREST; f++) {
    memset(out, 0xaa, 33 * 17 * 3);
    CHECK(fy_resize_u8(src, 33, 17, 99, 3, NULL, out, 33, 17, 99, (ferry_filter)f, &ctx) ==
          FERRY_OK);
    CHECK_MSG(memcmp(src, out, 33 * 17 * 3) == 0, "filter %d: not a copy", f);
  }
  free(src);
  free(out);
  fy_resize_ctx_free(&ctx);
}

static int resize_rc(int sw, int sh, size_t sstride, int c, const fy_box *box, int dw, int dh,
                     size_t dstride, int filter) {
  static uint8_t src[64 * 64 * 4], dst[64 * 64 * 4];
  fy_resize_ctx ctx = {{0}, {0}};
  fy_error_clear();
  int rc =
      fy_resize_u8(src, sw, sh, sstride, c, box, dst, dw, dh, dstride, (ferry_filter)filter, &ctx);
  if (rc != FERRY_OK)
    CHECK_MSG(ferry_last_error()[0] != '\0', "no message for status %d", rc);
  fy_resize_ctx_free(&ctx);
  return rc;
}

static void test_invalid(void) {
  static uint8_t buf[16];
  fy_resize_ctx ctx = {{0}, {0}};
  fy_box inside = {1, 1, 5, 5}, neg = {-1, 0, 5, 5}, wide = {0, 0, 9, 5}, inverted = {4, 0, 2, 5};
  fy_box nan_box = {0, 0, NAN, 5}, inf_box = {0, 0, INFINITY, 5};
  CHECK(resize_rc(8, 8, 24, 3, &inside, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_OK);
  CHECK(resize_rc(8, 8, 24, 3, &neg, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 3, &wide, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 3, &inverted, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 3, &nan_box, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 3, &inf_box, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 2, NULL, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 5, NULL, 4, 4, 20, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(0, 8, 24, 3, NULL, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 3, NULL, 4, 0, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 23, 3, NULL, 4, 4, 12, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 3, NULL, 4, 4, 11, FERRY_FILTER_TRIANGLE) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 3, NULL, 4, 4, 12, 99) == FERRY_EINVAL);
  CHECK(resize_rc(8, 8, 24, 3, NULL, 4, 4, 12, -1) == FERRY_EINVAL);
  CHECK(fy_resize_u8(NULL, 8, 8, 24, 3, NULL, buf, 1, 1, 3, FERRY_FILTER_TRIANGLE, &ctx) ==
        FERRY_EINVAL);
  CHECK(fy_resize_u8(buf, 1, 1, 3, 3, NULL, NULL, 1, 1, 3, FERRY_FILTER_TRIANGLE, &ctx) ==
        FERRY_EINVAL);
  CHECK(fy_resize_u8(buf, 1, 1, 3, 3, NULL, buf + 3, 1, 1, 3, FERRY_FILTER_TRIANGLE, NULL) ==
        FERRY_EINVAL);
  fy_resize_ctx_free(&ctx);
}

static void test_public_invalid(void) {
  uint8_t px[4 * 4 * 3] = {0};
  ferry_image src = {px, 4, 4, 3, 12}, out = {px, 1, 1, 1, 1};
  ferry_rect outside = {2, 2, 3, 1}, empty = {0, 0, 0, 2};
  CHECK(ferry_resize(&src, NULL, &out, 0, 2, FERRY_FILTER_AREA) == FERRY_EINVAL);
  CHECK(out.data == NULL); /* cleared on failure */
  CHECK(ferry_resize(&src, &outside, &out, 2, 2, FERRY_FILTER_AREA) == FERRY_EINVAL);
  CHECK(ferry_resize(&src, &empty, &out, 2, 2, FERRY_FILTER_AREA) == FERRY_EINVAL);
  CHECK(ferry_resize(NULL, NULL, &out, 2, 2, FERRY_FILTER_AREA) == FERRY_EINVAL);
  CHECK(ferry_resize(&src, NULL, NULL, 2, 2, FERRY_FILTER_AREA) == FERRY_EINVAL);
  src.channels = 2;
  CHECK(ferry_resize(&src, NULL, &out, 2, 2, FERRY_FILTER_AREA) == FERRY_EINVAL);
  CHECK(out.data == NULL);
  src.channels = 3;
  CHECK(ferry_resize(&src, NULL, &out, 2, 3, FERRY_FILTER_AREA) == FERRY_OK);
  CHECK(out.width == 2 && out.height == 3 && out.channels == 3 && out.stride == 6);
  /* In place: dst may be the source; a failure leaves it alone. */
  ferry_image img = out;
  CHECK(ferry_resize(&img, NULL, &img, 0, 1, FERRY_FILTER_AREA) == FERRY_EINVAL);
  CHECK(img.data == out.data && img.width == 2);
  CHECK(ferry_resize(&img, NULL, &img, 5, 4, FERRY_FILTER_LANCZOS) == FERRY_OK);
  CHECK(img.data != out.data && img.width == 5 && img.height == 4 && img.stride == 15);
  free(out.data); /* ferry_image_free() is free(data) */
  free(img.data);
}

int main(void) {
  test_pillow_goldens();
  test_against_reference();
  test_bilinear();
  test_ctx_reuse();
  test_identity();
  test_invalid();
  test_public_invalid();
  return check_done();
}
