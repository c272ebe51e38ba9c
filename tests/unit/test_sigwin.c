/* test_sigwin.c — crops at any place (src/hash/sigwin.c, src/catalog/
 * crops.c): every crop keeping 75-90 % of a side has a window whose ends
 * are within 5 % of its own; a crop's whole code is near the code of that
 * window of its original, and the alignment from there finds its place
 * (within 2 %) and passes the verdict, while a different picture does not;
 * in ferry_dupes_find, crops at the corners, the sides and in between join
 * their original, the different picture stays apart, and without the
 * signatures (robust = 0) the crops do not join; a crop resized to 60 %
 * (not at the pixels' scale) is not joined to its original. */
#include "catalog/catalog.h"
#include "check.h"
#include "hash/hash.h"
#include "picture_testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { GG = FY_SIG_WIN_GRID * FY_SIG_WIN_GRID };

/* A picture with structure at every scale, different for each seed. */
static uint8_t *picture(int w, int h, unsigned seed) { return test_picture(w, h, seed, 8, 8, 4); }

static uint8_t *crop(const uint8_t *p, int w, int x0, int y0, int cw, int ch) {
  uint8_t *q = malloc((size_t)cw * ch);
  for (int y = 0; y < ch; y++)
    memcpy(q + (size_t)y * cw, p + (size_t)(y + y0) * w + x0, (size_t)cw);
  return q;
}

static int sign(ferry_hasher *h, const uint8_t *p, int w, int height, ferry_hash_result *r) {
  ferry_image im = {
      .data = (uint8_t *)p, .width = w, .height = height, .channels = 1, .stride = (size_t)w};
  return ferry_hash_pixels(h, &im, r);
}

/* The picture signed and added to catalog c under `name` (checked). */
static void add_signed(ferry_catalog *c, ferry_hasher *h, const uint8_t *p, int w, int height,
                       const char *name) {
  ferry_hash_result r;
  CHECK(sign(h, p, w, height, &r) == FERRY_OK);
  ferry_catalog_entry e = {.path = name,
                           .size = 1000,
                           .width = r.width,
                           .height = r.height,
                           .format = FERRY_FORMAT_JPEG,
                           .kinds = r.kinds,
                           .error = ""};
  memcpy(e.hash, r.hash, sizeof e.hash);
  e.signature = &r.signature;
  CHECK_MSG(ferry_catalog_add(c, &e) == FERRY_OK, "%s: %s", name, ferry_last_error());
}

static void windows_cover(void) {
  double worst = 0;
  for (int ki = 75; ki <= 90; ki++)
    for (int oi = 0; oi <= 100 - ki; oi++) {
      double k = ki / 100.0, o = oi / 100.0, best = 1;
      for (int w = 0; w < FY_SIG_WINDOWS; w++) {
        double b[4];
        fy_sig_window(w, b);
        double e0 = fabs(b[0] - o), e1 = fabs(b[0] + b[2] - o - k), e = e0 > e1 ? e0 : e1;
        best = e < best ? e : best;
      }
      worst = best > worst ? best : worst;
    }
  CHECK_MSG(worst <= 0.05 + 1e-9, "a crop's ends are %.3f from every window's", worst);
  for (int w = 0; w < FY_SIG_WINDOWS; w++) {
    double b[4];
    fy_sig_window(w, b);
    CHECK(b[0] >= 0 && b[1] >= 0 && b[0] + b[2] <= 1 + 1e-9 && b[1] + b[3] <= 1 + 1e-9);
    CHECK(b[2] >= FY_SIG_CROP_MIN && b[3] >= FY_SIG_CROP_MIN);
  }
}

/* The crops: (x0, y0, width, height) as fractions, at corners, sides and
 * in between, asymmetric. */
static const double cuts[][4] = {{0, 0, 0.8, 0.85},        {0.2, 0.12, 0.8, 0.88},
                                 {0.1, 0, 0.76, 0.9},      {0.03, 0.2, 0.9, 0.8},
                                 {0.12, 0.07, 0.78, 0.78}, {0, 0.1, 0.85, 0.75}};
enum { NCUTS = sizeof cuts / sizeof cuts[0] };

/* The best of the windows within 12 bits, aligned: correlation and box. */
static double best_alignment(const ferry_signature *big, const ferry_signature *small,
                             double out[4]) {
  uint64_t codes[FY_SIG_WINDOWS];
  float g[GG];
  uint64_t whole = fy_sig_whole_code(small->thumb, g);
  fy_sig_window_codes(big->thumb, codes);
  double best = -1;
  for (int k = 0; k < FY_SIG_WINDOWS; k++) {
    if (__builtin_popcountll(whole ^ codes[k]) > 12)
      continue;
    double box[4];
    fy_sig_window(k, box);
    double v = fy_sig_crop_align(big->thumb, g, box, 0.6);
    if (v > best) {
      best = v;
      memcpy(out, box, sizeof box);
    }
  }
  return best;
}

static void align(ferry_hasher *h) {
  int w = 400, height = 300;
  uint8_t *p = picture(w, height, 3), *other = picture(w, height, 4);
  ferry_hash_result base, r, o;
  CHECK(sign(h, p, w, height, &base) == FERRY_OK);
  CHECK(sign(h, other, w, height, &o) == FERRY_OK);
  for (int k = 0; k < NCUTS; k++) {
    const double *c = cuts[k];
    int x0 = (int)lround(c[0] * w), y0 = (int)lround(c[1] * height);
    int cw = (int)lround(c[2] * w), ch = (int)lround(c[3] * height);
    uint8_t *q = crop(p, w, x0, y0, cw, ch);
    CHECK(sign(h, q, cw, ch, &r) == FERRY_OK);
    double box[4] = {0};
    double v = best_alignment(&base.signature, &r.signature, box);
    CHECK_MSG(v >= 0.91, "crop %d: correlation %.3f once aligned", k, v);
    double err = 0;
    for (int i = 0; i < 4; i++)
      err = fmax(err, fabs(box[i] - c[i]));
    CHECK_MSG(err <= 0.02, "crop %d: aligned at (%.3f %.3f %.3f %.3f), %.3f off", k, box[0], box[1],
              box[2], box[3], err);
    double ob[4];
    double vo = best_alignment(&o.signature, &r.signature, ob);
    CHECK_MSG(vo < 0.91, "crop %d: found in a different picture (%.3f)", k, vo);
    free(q);
  }
  /* a flat grid matches nothing */
  float flat[GG], g[GG];
  for (int i = 0; i < GG; i++)
    flat[i] = 100;
  double all[4] = {0, 0, 1, 1};
  fy_sig_grid(base.signature.thumb, all, g);
  CHECK(fy_sig_correlation(flat, g, GG) == 0);
  CHECK(fabs(fy_sig_correlation(g, g, GG) - 1) < 1e-6);
  free(p);
  free(other);
}

/* q scaled by 3/5 (means of the source pixels each output pixel covers). */
static uint8_t *shrunk(const uint8_t *q, int w, int h, int *ow, int *oh) {
  *ow = w * 3 / 5, *oh = h * 3 / 5;
  uint8_t *o = malloc((size_t)*ow * *oh);
  for (int y = 0; y < *oh; y++)
    for (int x = 0; x < *ow; x++) {
      int sy = y * 5 / 3, sx = x * 5 / 3;
      o[y * *ow + x] = (uint8_t)((q[sy * w + sx] + q[sy * w + sx + 1] + q[(sy + 1) * w + sx] +
                                  q[(sy + 1) * w + sx + 1] + 2) /
                                 4);
    }
  return o;
}

static void groups(ferry_hasher *h, const ferry_hash_options *o) {
  enum { N = NCUTS + 2 };
  int w = 400, height = 300;
  uint8_t *p = picture(w, height, 11), *q[N];
  int qw[N], qh[N];
  char names[N][32];
  q[0] = p, qw[0] = w, qh[0] = height;
  snprintf(names[0], sizeof names[0], "/b/orig");
  for (int k = 0; k < NCUTS; k++) {
    const double *c = cuts[k];
    qw[k + 1] = (int)lround(c[2] * w), qh[k + 1] = (int)lround(c[3] * height);
    q[k + 1] = crop(p, w, (int)lround(c[0] * w), (int)lround(c[1] * height), qw[k + 1], qh[k + 1]);
    snprintf(names[k + 1], sizeof names[k + 1], "/b/crop%d", k);
  }
  q[N - 1] = picture(w, height, 12), qw[N - 1] = w, qh[N - 1] = height;
  snprintf(names[N - 1], sizeof names[N - 1], "/b/other");
  ferry_catalog *c = NULL;
  CHECK(ferry_catalog_new(o, &c) == FERRY_OK);
  for (int k = 0; c && k < N; k++)
    add_signed(c, h, q[k], qw[k], qh[k], names[k]);
  for (int robust = 0; c && robust <= 1; robust++) {
    ferry_search_options so;
    ferry_search_options_default(&so);
    so.robust = robust;
    so.threshold = ferry_dupes_default_threshold(FERRY_HASH_PHASH, 16);
    ferry_dupes *d = NULL;
    CHECK(ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d) == FERRY_OK);
    if (!d)
      continue;
    uint32_t group_of[N];
    for (int k = 0; k < N; k++)
      group_of[k] = UINT32_MAX;
    for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
      const uint32_t *m;
      size_t n = ferry_dupes_group(d, g, &m);
      for (size_t i = 0; i < n; i++)
        for (int k = 0; k < N; k++)
          if (!strcmp(ferry_catalog_get(c, m[i])->path, names[k]))
            group_of[k] = (uint32_t)g;
    }
    int with = 0;
    for (int k = 1; k <= NCUTS; k++)
      with += group_of[k] != UINT32_MAX && group_of[k] == group_of[0];
    if (robust) {
      CHECK_MSG(with == NCUTS, "%d of %d crops with their original", with, NCUTS);
      CHECK_MSG(group_of[N - 1] == UINT32_MAX || group_of[N - 1] != group_of[0],
                "a different picture joined the crops");
      CHECK(ferry_dupes_signature_joins(d) >= 1);
    } else {
      CHECK_MSG(with < NCUTS, "every crop joined without signatures");
      CHECK(ferry_dupes_signature_joins(d) == 0);
    }
    ferry_dupes_free(d);
  }
  ferry_catalog_free(c);
  for (int k = 0; k < N; k++)
    free(q[k]);
}

/* Two pictures alone in a catalog: in one group by default? */
static int paired(ferry_hasher *h, const ferry_hash_options *o, const uint8_t *a, int aw, int ah,
                  const uint8_t *b, int bw, int bh) {
  ferry_catalog *c = NULL;
  CHECK(ferry_catalog_new(o, &c) == FERRY_OK);
  const uint8_t *px[2] = {a, b};
  int ws[2] = {aw, bw}, hs[2] = {ah, bh};
  const char *names[2] = {"/c/a", "/c/b"};
  for (int k = 0; c && k < 2; k++)
    add_signed(c, h, px[k], ws[k], hs[k], names[k]);
  ferry_search_options so;
  ferry_search_options_default(&so);
  so.threshold = ferry_dupes_default_threshold(FERRY_HASH_PHASH, 16);
  ferry_dupes *d = NULL;
  int n = -1;
  if (c && ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d) == FERRY_OK)
    n = (int)ferry_dupes_group_count(d);
  ferry_dupes_free(d);
  ferry_catalog_free(c);
  return n == 1;
}

/* A crop resized is not a crop at the pixels' scale: not looked for (the
 * crop itself is found). */
static void resized(ferry_hasher *h, const ferry_hash_options *o) {
  int w = 400, height = 300;
  uint8_t *p = picture(w, height, 21);
  const double *c = cuts[4];
  int cw = (int)lround(c[2] * w), ch = (int)lround(c[3] * height), sw, sh;
  uint8_t *q = crop(p, w, (int)lround(c[0] * w), (int)lround(c[1] * height), cw, ch);
  uint8_t *s = shrunk(q, cw, ch, &sw, &sh);
  CHECK_MSG(paired(h, o, p, w, height, q, cw, ch), "the crop is not with its original");
  CHECK_MSG(!paired(h, o, p, w, height, s, sw, sh), "the crop resized to 60 %% joined");
  free(p);
  free(q);
  free(s);
}

int main(void) {
  windows_cover();
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH) | FERRY_HASH_SIGNATURE;
  o.hash_size = 16;
  ferry_hasher *h = NULL;
  CHECK(ferry_hasher_new(&o, &h) == FERRY_OK);
  if (h) {
    align(h);
    groups(h, &o);
    resized(h, &o);
  }
  ferry_hasher_free(h);
  return check_done();
}
