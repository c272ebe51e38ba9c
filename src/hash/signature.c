/* signature.c — a picture's signature for robust near-duplicate matching
 * (ferry_signature; matched in src/catalog/robust.c):
 *
 *   1. the picture reduced to a 128 x 128 grey grid (exact-area means; the
 *      aspect ratio does not matter: every later step works in fractions
 *      of the sides);
 *   2. flat borders cut off: rows and columns whose grey levels span at most
 *      FY_SIG_FLAT and whose mean stays within FY_SIG_SAME of the outermost
 *      one's (one colour: letterboxing, black or white bars; a sky, whose
 *      rows change slowly, is not a bar), from each side in turn, at least
 *      8 cells kept;
 *   3. six parts of what is left: the whole and five 90 % crops (centre and
 *      the four corners), each reduced to 64 x 64, and the signs of its
 *      16 x 16 lowest DCT-II frequencies: 256 bits (bit 16 u + v, u the
 *      vertical frequency). A picture turned or mirrored has the same
 *      coefficients with odd frequencies negated and u, v swapped for a
 *      transpose, so its codes follow from these (fy_sig_turn);
 *   4. a 24 x 24 thumbnail of the trimmed picture (rounded grey levels).
 *
 * Fast mode computes it from its float luminance image, compatible mode
 * and the GPU paths from 8-bit pixels (fy_signature_u8). */
#include "hash/hash.h"

#if defined(__GNUC__) && !defined(__clang__)
/* the sums of reduce() stay scalar at -O2 (as gray.c's conversion) */
#pragma GCC optimize("O3")
#endif

#include <math.h>
#include <pthread.h>
#include <string.h>

#define GRID FY_SIG_GRID
#define PART 64
#define LOW 16

/* The parts, as fractions of the trimmed picture (x0, y0, x1, y1). */
const double fy_sig_parts[FERRY_SIGNATURE_PARTS][4] = {{0, 0, 1, 1},     {0.05, 0.05, 0.95, 0.95},
                                                       {0.1, 0.1, 1, 1}, {0, 0, 0.9, 0.9},
                                                       {0.1, 0, 1, 0.9}, {0, 0.1, 0.9, 1}};

static double cosines[LOW][PART];
static pthread_once_t cos_once = PTHREAD_ONCE_INIT;

static void cos_init(void) {
  for (int k = 0; k < LOW; k++)
    for (int j = 0; j < PART; j++)
      cosines[k][j] = cos(M_PI * k * (2 * j + 1) / (2.0 * PART));
}

/* Is the run of n values (step apart) flat, and of the bar's colour (its
 * mean within FY_SIG_SAME of *ref, the first line's mean, set here)? */
static int flat(const float *p, int n, size_t step, double *ref) {
  float lo = p[0], hi = p[0];
  double sum = 0;
  for (int i = 0; i < n; i++) {
    float v = p[(size_t)i * step];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum += v;
  }
  if (hi - lo > FY_SIG_FLAT)
    return 0;
  double mean = sum / n;
  if (*ref < 0)
    *ref = mean;
  return fabs(mean - *ref) <= FY_SIG_SAME;
}

void fy_sig_trim(const float *g, int n, int box[4]) {
  int t = 0, b = n, l = 0, r = n;
  double rt = -1, rb = -1, rl = -1, rr = -1;
  while (t < b - 8 && flat(g + (size_t)t * n + l, r - l, 1, &rt))
    t++;
  while (b - 1 > t + 8 && flat(g + (size_t)(b - 1) * n + l, r - l, 1, &rb))
    b--;
  while (l < r - 8 && flat(g + (size_t)t * n + l, b - t, (size_t)n, &rl))
    l++;
  while (r - 1 > l + 8 && flat(g + (size_t)t * n + r - 1, b - t, (size_t)n, &rr))
    r--;
  box[0] = l;
  box[1] = t;
  box[2] = r;
  box[3] = b;
}

/* The 256-bit code of a 64 x 64 grey part. */
static void part_code(const float *p, uint64_t code[4]) {
  double rows[LOW][PART]; /* the vertical transform of each column, low rows */
  for (int u = 0; u < LOW; u++)
    for (int x = 0; x < PART; x++) {
      double s = 0;
      for (int y = 0; y < PART; y++)
        s += cosines[u][y] * p[y * PART + x];
      rows[u][x] = s;
    }
  memset(code, 0, 4 * sizeof *code);
  for (int u = 0; u < LOW; u++)
    for (int v = 0; v < LOW; v++) {
      double s = 0;
      for (int x = 0; x < PART; x++)
        s += cosines[v][x] * rows[u][x];
      if (s > 0) {
        int bit = u * LOW + v;
        code[bit >> 6] |= 1ull << (bit & 63);
      }
    }
}

int fy_signature(fy_hash_ctx *c, const fy_fimage *img, ferry_signature *out) {
  pthread_once(&cos_once, cos_init);
  size_t need = (GRID * GRID + PART * PART) * sizeof(float);
  int rc = fy_buf_reserve(&c->sig, need);
  if (rc)
    return fy_error(rc, "hash: out of memory");
  float *g = c->sig.p, *part = g + GRID * GRID;
  rc = fy_box_f(img->p, img->w, img->h, img->box, g, GRID, GRID, &c->fscratch);
  if (rc)
    return rc;
  int box[4];
  fy_sig_trim(g, GRID, box);
  double w = box[2] - box[0], h = box[3] - box[1];
  for (int k = 0; k < FERRY_SIGNATURE_PARTS; k++) {
    const double *f = fy_sig_parts[k];
    double pb[4] = {box[0] + f[0] * w, box[1] + f[1] * h, box[0] + f[2] * w, box[1] + f[3] * h};
    if ((rc = fy_box_f(g, GRID, GRID, pb, part, PART, PART, &c->fscratch)) != FERRY_OK)
      return rc;
    part_code(part, out->code[k]);
  }
  enum { T = FERRY_SIGNATURE_THUMB };
  double tb[4] = {box[0], box[1], box[2], box[3]};
  if ((rc = fy_box_f(g, GRID, GRID, tb, part, T, T, &c->fscratch)) != FERRY_OK)
    return rc;
  for (int i = 0; i < T * T; i++) {
    float v = floorf(part[i] + 0.5f);
    out->thumb[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
  }
  return FERRY_OK;
}

/* Means of f x f cells (Pillow's L of RGB), integer sums a band of rows
 * at a time: the one pass over a full-size picture. */
static void reduce(const uint8_t *restrict px, int w, int h, size_t stride, int channels, int f,
                   uint32_t *restrict sums, float *restrict out) {
  int ow = (w + f - 1) / f, oh = (h + f - 1) / f;
  for (int oy = 0; oy < oh; oy++) {
    int y0 = oy * f, y1 = y0 + f < h ? y0 + f : h;
    memset(sums, 0, (size_t)w * sizeof *sums);
    for (int y = y0; y < y1; y++) {
      const uint8_t *restrict p = px + (size_t)y * stride;
      if (channels == 1)
        for (int x = 0; x < w; x++)
          sums[x] += p[x];
      else
        for (int x = 0; x < w; x++, p += 3)
          sums[x] += (uint32_t)(p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16;
    }
    for (int ox = 0; ox < ow; ox++) {
      int x0 = ox * f, x1 = x0 + f < w ? x0 + f : w;
      uint64_t t = 0;
      for (int x = x0; x < x1; x++)
        t += sums[x];
      out[(size_t)oy * ow + ox] = (float)((double)t / ((double)(x1 - x0) * (y1 - y0)));
    }
  }
}

int fy_signature_u8(fy_hash_ctx *c, const uint8_t *px, int w, int h, size_t stride, int channels,
                    ferry_signature *out) {
  /* means of f x f cells first, so that the grid is made from about
   * 256 x 256 values whatever the size */
  int m = w < h ? w : h, f = m / (2 * GRID) > 1 ? m / (2 * GRID) : 1;
  int ow = (w + f - 1) / f, oh = (h + f - 1) / f;
  int rc = fy_buf_reserve(&c->sig_in, ((size_t)ow * oh + (size_t)w) * sizeof(float));
  if (rc)
    return fy_error(rc, "hash: out of memory for a %dx%d image", w, h);
  float *cells = c->sig_in.p;
  reduce(px, w, h, stride, channels, f, (uint32_t *)(cells + (size_t)ow * oh), cells);
  fy_fimage img = {cells, ow, oh, {0, 0, (double)w / f, (double)h / f}};
  return fy_signature(c, &img, out);
}

void fy_sig_turn(const uint64_t in[4], int turn, uint64_t out[4]) {
  uint64_t t[4];
  if (turn & 4) { /* transposed: bit (u, v) to (v, u) */
    memset(t, 0, sizeof t);
    for (int u = 0; u < LOW; u++)
      for (int v = 0; v < LOW; v++) {
        int a = u * LOW + v, b = v * LOW + u;
        if (in[a >> 6] >> (a & 63) & 1)
          t[b >> 6] |= 1ull << (b & 63);
      }
  } else {
    memcpy(t, in, sizeof t);
  }
  /* bits of odd v: 0xAAAA in every 16-bit row; of odd u: rows 1, 3, ...
   * (bits 16..31 and 48..63 of every word) */
  const uint64_t odd_v = 0xAAAAAAAAAAAAAAAAull, odd_u = 0xFFFF0000FFFF0000ull;
  for (int w = 0; w < 4; w++)
    out[w] = t[w] ^ (turn & 2 ? odd_v : 0) ^ (turn & 1 ? odd_u : 0);
}

void fy_sig_turn_thumb(const uint8_t *in, int n, int turn, uint8_t *out) {
  for (int y = 0; y < n; y++)
    for (int x = 0; x < n; x++)
      out[y * n + x] = in[fy_sig_turn_at(n, turn, y, x)];
}
