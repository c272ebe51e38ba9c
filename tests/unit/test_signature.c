/* test_signature.c — the signatures robust matching uses (src/hash/
 * signature.c) and the second pass of ferry_dupes_find (src/catalog/
 * robust.c): a picture turned or mirrored any of the eight ways has the
 * codes fy_sig_turn predicts; black bars are trimmed; copies turned,
 * mirrored, cropped and letterboxed join their original's group while a
 * different picture, and every copy with robust = 0, stays apart. */
#include "catalog/catalog.h"
#include "check.h"
#include "hash/hash.h"
#include "picture_testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A picture with structure at every scale: a gradient, discs, stripes and
 * noise, different for each seed. */
static uint8_t *picture(int w, int h, unsigned seed) { return test_picture(w, h, seed, 6, 10, 3); }

/* The picture turned as fy_sig_turn's turn: transposed, then columns
 * reversed, then rows reversed. */
static uint8_t *turned(const uint8_t *p, int w, int h, int turn, int *ow, int *oh) {
  int tw = turn & 4 ? h : w, th = turn & 4 ? w : h;
  uint8_t *q = malloc((size_t)tw * th);
  for (int y = 0; y < th; y++)
    for (int x = 0; x < tw; x++) {
      int sy = turn & 1 ? th - 1 - y : y, sx = turn & 2 ? tw - 1 - x : x;
      q[y * tw + x] = turn & 4 ? p[sx * w + sy] : p[sy * w + sx];
    }
  *ow = tw, *oh = th;
  return q;
}

static int distance(const uint64_t a[4], const uint64_t b[4]) {
  int d = 0;
  for (int w = 0; w < 4; w++)
    d += __builtin_popcountll(a[w] ^ b[w]);
  return d;
}

static int sign(ferry_hasher *h, const uint8_t *p, int w, int height, ferry_hash_result *r) {
  ferry_image im = {
      .data = (uint8_t *)p, .width = w, .height = height, .channels = 1, .stride = (size_t)w};
  return ferry_hash_pixels(h, &im, r);
}

static void turns(ferry_hasher *h) {
  int w = 300, height = 200;
  uint8_t *p = picture(w, height, 1);
  ferry_hash_result base, r;
  CHECK(sign(h, p, w, height, &base) == FERRY_OK && (base.kinds & FERRY_HASH_SIGNATURE));
  for (int t = 0; t < 8; t++) {
    int tw, th;
    uint8_t *q = turned(p, w, height, t, &tw, &th);
    CHECK(sign(h, q, tw, th, &r) == FERRY_OK);
    uint64_t want[4];
    fy_sig_turn(base.signature.code[0], t, want);
    int d = distance(want, r.signature.code[0]);
    CHECK_MSG(d <= 4, "turn %d: the whole's code is %d bits from the predicted one", t, d);
    uint8_t thumb[FERRY_SIGNATURE_THUMB * FERRY_SIGNATURE_THUMB];
    fy_sig_turn_thumb(base.signature.thumb, FERRY_SIGNATURE_THUMB, t, thumb);
    int worst = 0;
    for (int i = 0; i < FERRY_SIGNATURE_THUMB * FERRY_SIGNATURE_THUMB; i++) {
      int e = abs(thumb[i] - r.signature.thumb[i]);
      worst = e > worst ? e : worst;
    }
    CHECK_MSG(worst <= 1, "turn %d: the thumbnail differs by %d levels", t, worst);
    if (t == 0) /* the same pixels: the same signature */
      CHECK(!memcmp(&r.signature, &base.signature, sizeof r.signature));
    free(q);
  }
  /* transposing a code twice, or mirroring it twice, gives it back */
  uint64_t once[4], twice[4];
  for (int t = 1; t < 8; t++) {
    fy_sig_turn(base.signature.code[3], t, once);
    fy_sig_turn(once, t == 4 + 2 || t == 4 + 1 ? 4 + (3 - (t & 3)) : t, twice);
    CHECK_MSG(!memcmp(twice, base.signature.code[3], sizeof twice), "turn %d undone", t);
  }
  free(p);
}

static void trim(void) {
  float g[128 * 128];
  for (int y = 0; y < 128; y++) /* black bars above and below, a white one left */
    for (int x = 0; x < 128; x++)
      g[y * 128 + x] = y < 16 || y >= 112 ? 3.0f : x < 10 ? 250.0f : (float)((x * 7 + y * 3) % 200);
  int box[4];
  fy_sig_trim(g, 128, box);
  CHECK_MSG(box[0] == 10 && box[1] == 16 && box[2] == 128 && box[3] == 112, "trim %d %d %d %d",
            box[0], box[1], box[2], box[3]);
  for (int y = 0; y < 128; y++) /* a sky: flat rows, slowly darker: not a bar */
    for (int x = 0; x < 128; x++)
      g[y * 128 + x] = y < 64 ? 200.0f - y : (float)((x * 7 + y * 3) % 200);
  fy_sig_trim(g, 128, box);
  CHECK_MSG(box[1] <= 7, "a sky trimmed to row %d", box[1]);
  for (int i = 0; i < 128 * 128; i++)
    g[i] = 77; /* flat everywhere: at least 8 cells are kept */
  fy_sig_trim(g, 128, box);
  CHECK(box[2] - box[0] >= 8 && box[3] - box[1] >= 8);
}

/* The original, its copies and a different picture, through an in-memory
 * catalog and ferry_dupes_find. */
static void groups(ferry_hasher *h, const ferry_hash_options *o) {
  enum { N = 8 };
  const char *names[N] = {"/a/orig", "/a/rot90",     "/a/mirror", "/a/rot180",
                          "/a/crop", "/a/letterbox", "/a/other",  "/a/other_rot90"};
  int w = 320, height = 240;
  uint8_t *p = picture(w, height, 7), *q[N] = {0};
  int qw[N], qh[N];
  q[0] = p, qw[0] = w, qh[0] = height;
  q[1] = turned(p, w, height, 4 + 2, &qw[1], &qh[1]); /* a quarter turn clockwise */
  q[2] = turned(p, w, height, 2, &qw[2], &qh[2]);
  q[3] = turned(p, w, height, 3, &qw[3], &qh[3]);
  /* 10 % off the left and the top */
  qw[4] = w - w / 10, qh[4] = height - height / 10;
  q[4] = malloc((size_t)qw[4] * qh[4]);
  for (int y = 0; y < qh[4]; y++)
    memcpy(q[4] + (size_t)y * qw[4], p + (size_t)(y + height / 10) * w + w / 10, (size_t)qw[4]);
  /* black bars to 16:9 */
  qw[5] = height * 16 / 9, qh[5] = height;
  q[5] = calloc((size_t)qw[5] * qh[5], 1);
  for (int y = 0; y < height; y++)
    memcpy(q[5] + (size_t)y * qw[5] + (qw[5] - w) / 2, p + (size_t)y * w, (size_t)w);
  q[6] = picture(w, height, 8), qw[6] = w, qh[6] = height;
  q[7] = turned(q[6], w, height, 4 + 2, &qw[7], &qh[7]);
  ferry_catalog *c = NULL;
  CHECK(ferry_catalog_new(o, &c) == FERRY_OK);
  for (int k = 0; c && k < N; k++) {
    ferry_hash_result r;
    CHECK(sign(h, q[k], qw[k], qh[k], &r) == FERRY_OK);
    ferry_catalog_entry e = {.path = names[k],
                             .size = 1000,
                             .width = r.width,
                             .height = r.height,
                             .format = FERRY_FORMAT_JPEG,
                             .kinds = r.kinds,
                             .error = ""};
    memcpy(e.hash, r.hash, sizeof e.hash);
    e.signature = &r.signature;
    CHECK_MSG(ferry_catalog_add(c, &e) == FERRY_OK, "%s", ferry_last_error());
  }
  for (int robust = 0; c && robust <= 1; robust++) {
    ferry_search_options so;
    ferry_search_options_default(&so);
    CHECK(so.robust == 1);
    so.robust = robust;
    so.threshold = ferry_dupes_default_threshold(FERRY_HASH_PHASH, 16);
    ferry_dupes *d = NULL;
    CHECK(ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d) == FERRY_OK);
    if (!d)
      continue;
    /* catalog indices are path order: other, other_rot90 are 6 and 7... by name */
    size_t of[N];
    for (size_t i = 0; i < ferry_catalog_size(c); i++)
      for (int k = 0; k < N; k++)
        if (!strcmp(ferry_catalog_get(c, i)->path, names[k]))
          of[k] = i;
    uint32_t group_of[N];
    for (int k = 0; k < N; k++)
      group_of[k] = UINT32_MAX;
    for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
      const uint32_t *m;
      size_t n = ferry_dupes_group(d, g, &m);
      for (size_t i = 0; i < n; i++)
        for (int k = 0; k < N; k++)
          if (m[i] == of[k])
            group_of[k] = (uint32_t)g;
    }
    if (robust) {
      for (int k = 1; k < 6; k++)
        CHECK_MSG(group_of[k] != UINT32_MAX && group_of[k] == group_of[0],
                  "%s is not with its original", names[k]);
      CHECK_MSG(group_of[6] != group_of[0] && group_of[6] == group_of[7],
                "the other picture: with the first (%u, %u) or apart from its turned copy (%u)",
                group_of[6], group_of[0], group_of[7]);
      CHECK(ferry_dupes_signature_joins(d) >= 5);
    } else {
      for (int k = 1; k < 4; k++)
        CHECK_MSG(group_of[k] == UINT32_MAX || group_of[k] != group_of[0],
                  "%s joined without signatures", names[k]);
      CHECK(ferry_dupes_signature_joins(d) == 0);
    }
    ferry_dupes_free(d);
  }
  ferry_catalog_free(c);
  for (int k = 0; k < N; k++)
    free(q[k]);
}

int main(void) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH) | FERRY_HASH_SIGNATURE;
  o.hash_size = 16;
  ferry_hasher *h = NULL;
  CHECK(ferry_hasher_new(&o, &h) == FERRY_OK);
  if (h) {
    turns(h);
    groups(h, &o);
  }
  trim();
  ferry_hasher_free(h);
  return check_done();
}
