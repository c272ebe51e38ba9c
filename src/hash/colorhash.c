/* colorhash.c — imagehash's colorhash: fractions of black, gray, and of six
 * hue bins among faint and bright colours, each quantised to binbits.
 *
 * Pixels are classified exactly as imagehash sees them: intensity from
 * convert("L"), hue and saturation from Pillow's convert("HSV") (Pillow's
 * rgb2hsv_row, float and double arithmetic reproduced below), hue binned by
 * numpy.histogram over linspace(0, 255, 7). The per-pixel division work is
 * done once per hasher into two tables: saturation class by (max, min) and
 * hue bin by (which channel is max, the other two channels' distance to
 * the max) — hue does not depend on the max itself. */
#include "hash/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

enum { SAT_GRAY = 0, SAT_FAINT = 1, SAT_NONE = 2, SAT_BRIGHT = 3 };

static int clip8(int v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

/* Pillow's rgb2hsv_row, h and s only (v is the max). */
void fy_pillow_hsv(int r, int g, int b, int *hue, int *sat) {
  int maxc = r > g ? (r > b ? r : b) : (g > b ? g : b);
  int minc = r < g ? (r < b ? r : b) : (g < b ? g : b);
  if (minc == maxc) {
    *hue = *sat = 0;
    return;
  }
  float cr = (float)(maxc - minc);
  float s = cr / (float)maxc;
  float rc = ((float)(maxc - r)) / cr;
  float gc = ((float)(maxc - g)) / cr;
  float bc = ((float)(maxc - b)) / cr;
  float h;
  if (r == maxc)
    h = bc - gc;
  else if (g == maxc)
    h = (float)(2.0 + rc - bc);
  else
    h = (float)(4.0 + gc - rc);
  h = (float)fmod((h / 6.0 + 1.0), 1.0);
  *hue = clip8((int)(h * 255.0));
  *sat = clip8((int)(s * 255.0));
}

/* numpy.histogram(h, bins=linspace(0, 255, 7)): edges 0, 42.5, 85, 127.5,
 * 170, 212.5, 255, the last bin closed. */
static int hue_bin(int h) {
  static const double edges[6] = {0, 42.5, 85, 127.5, 170, 212.5};
  int b = 0;
  while (b < 5 && (double)h >= edges[b + 1])
    b++;
  return b;
}

static int sat_class(int s) {
  if (s < 256 / 3)
    return SAT_GRAY;
  if (s < 256 * 2 / 3)
    return SAT_FAINT;
  return s > 256 * 2 / 3 ? SAT_BRIGHT : SAT_NONE;
}

int fy_color_tables_init(fy_color_tables *t) {
  if (t->ready)
    return FERRY_OK;
  t->sat = malloc(256 * 256);
  t->hue = malloc(3 * 256 * 256);
  if (!t->sat || !t->hue) {
    fy_color_tables_free(t);
    return fy_error(FERRY_ENOMEM, "colorhash: out of memory for tables");
  }
  for (int mx = 0; mx < 256; mx++)
    for (int mn = 0; mn <= mx; mn++) {
      int h, s;
      fy_pillow_hsv(mx, mn, mn, &h, &s);
      t->sat[mx * 256 + mn] = (uint8_t)sat_class(s);
    }
  /* (branch, dA, dB): branch 0 red is the max (others green, blue),
   * 1 green (others red, blue), 2 blue (others red, green). */
  memset(t->hue, 0, 3 * 256 * 256);
  for (int br = 0; br < 3; br++)
    for (int da = 0; da < 256; da++)
      for (int db = 0; db < 256; db++) {
        if (!da && !db)
          continue;
        int c[3], o1 = br == 0 ? 1 : 0, o2 = br == 2 ? 1 : 2;
        c[br] = 255;
        c[o1] = 255 - da;
        c[o2] = 255 - db;
        int h, s;
        fy_pillow_hsv(c[0], c[1], c[2], &h, &s);
        t->hue[(br * 256 + da) * 256 + db] = (uint8_t)hue_bin(h);
      }
  t->ready = 1;
  return FERRY_OK;
}

void fy_color_tables_free(fy_color_tables *t) {
  free(t->sat);
  free(t->hue);
  memset(t, 0, sizeof *t);
}

static inline uint8_t pillow_l(const uint8_t *p) {
  return (uint8_t)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
}

void fy_color_count_rgb(const fy_color_tables *t, const uint8_t *rgb, int w, int h, size_t stride,
                        uint8_t *gray, size_t gstride, fy_color_counts *c) {
  for (int y = 0; y < h; y++) {
    const uint8_t *p = rgb + (size_t)y * stride;
    uint8_t *g = gray ? gray + (size_t)y * gstride : NULL;
    for (int x = 0; x < w; x++, p += 3) {
      uint8_t l = pillow_l(p);
      if (g)
        g[x] = l;
      if (l < 256 / 8) {
        c->black++;
        continue;
      }
      int r = p[0], gg = p[1], b = p[2];
      int mx = r > gg ? (r > b ? r : b) : (gg > b ? gg : b);
      int mn = r < gg ? (r < b ? r : b) : (gg < b ? gg : b);
      int sc = t->sat[mx * 256 + mn];
      if (sc == SAT_GRAY) {
        c->gray++;
        continue;
      }
      c->colors++;
      if (sc == SAT_NONE)
        continue;
      int bin;
      if (r == mx)
        bin = t->hue[(0 * 256 + (mx - gg)) * 256 + (mx - b)];
      else if (gg == mx)
        bin = t->hue[(1 * 256 + (mx - r)) * 256 + (mx - b)];
      else
        bin = t->hue[(2 * 256 + (mx - r)) * 256 + (mx - gg)];
      if (sc == SAT_FAINT)
        c->faint[bin]++;
      else
        c->bright[bin]++;
    }
  }
  c->total += (uint64_t)w * h;
}

void fy_color_count_gray(const uint8_t *gray, int w, int h, size_t stride, fy_color_counts *c) {
  /* HSV of a gray pixel has s = 0: everything not black is gray */
  for (int y = 0; y < h; y++) {
    const uint8_t *p = gray + (size_t)y * stride;
    uint64_t black = 0;
    for (int x = 0; x < w; x++)
      black += p[x] < 256 / 8;
    c->black += black;
    c->gray += (uint64_t)w - black;
  }
  c->total += (uint64_t)w * h;
}

void fy_colorhash_bits(const fy_color_counts *c, int binbits, ferry_hash *out) {
  int maxv = 1 << binbits, values[14];
  double total = (double)c->total;
  double fb = (double)c->black / total, fg = (double)c->gray / total;
  int v = (int)(fb * maxv);
  values[0] = v < maxv - 1 ? v : maxv - 1;
  v = (int)(fg * maxv);
  values[1] = v < maxv - 1 ? v : maxv - 1;
  double cc = c->colors > 1 ? (double)c->colors : 1.0;
  const uint64_t *bins[2] = {c->faint, c->bright};
  for (int i = 0; i < 12; i++) {
    v = (int)((double)(bins[i / 6][i % 6] * (uint64_t)maxv) / cc);
    values[2 + i] = v < maxv - 1 ? v : maxv - 1;
  }
  /* imagehash's bit i of a value: v // 2^(b-i-1) % 2^(b-i) > 0 (not the
   * binary digits: the quirk is kept so that hashes match) */
  fy_bits_clear(out, 14 * binbits);
  for (int k = 0; k < 14; k++)
    for (int i = 0; i < binbits; i++)
      if ((values[k] >> (binbits - i - 1)) % (1 << (binbits - i)) > 0)
        fy_bits_set(out, k * binbits + i);
}
