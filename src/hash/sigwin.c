/* sigwin.c — crops at any place, from a signature's thumbnail (the
 * 24 x 24 grey picture of ferry_signature; nothing more is stored, so every
 * catalog with signatures has what this needs). Matched in
 * src/catalog/crops.c.
 *
 *   window codes  a picture's windows: FY_SIG_WIN_AXIS spans of each side
 *                 (78 % at 5 places, 88 % at 3: both ends of every crop
 *                 that keeps 75-90 % of a side are within 5 % of one's), all
 *                 FY_SIG_WINDOWS pairs of them; each window's code is the
 *                 signs of the 8 x 8 lowest DCT-II frequencies of it
 *                 reduced to 16 x 16 (bit 8 u + v, u vertical): 64 bits, as
 *                 is the whole thumbnail's. A crop's whole code is close to
 *                 the code of the window of its original that it nearly is.
 *   alignment     fy_sig_crop_align: from that window, the crop's place
 *                 and size (x0, y0, width, height, fractions of the
 *                 original) are refined by coordinate steps of 4, 2, 1 and
 *                 0.5 % that raise the correlation (Pearson) of the
 *                 window's 16 x 16 grid with the crop's whole grid; the
 *                 best correlation is the verdict's measure.
 *
 * Exact-area means everywhere (as the signature's grid), in fractions of
 * the sides: the aspect ratios do not matter. */
#include "hash/hash.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

enum { T = FERRY_SIGNATURE_THUMB, G = FY_SIG_WIN_GRID, L = 8 };

/* the spans of one side: (start, length) */
static const double spans[FY_SIG_WIN_AXIS][2] = {{0, 0.78},     {0.055, 0.78}, {0.11, 0.78},
                                                 {0.165, 0.78}, {0.22, 0.78},  {0, 0.88},
                                                 {0.06, 0.88},  {0.12, 0.88}};

static double cosines[L][G];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
  for (int k = 0; k < L; k++)
    for (int j = 0; j < G; j++)
      cosines[k][j] = cos(M_PI * k * (2 * j + 1) / (2.0 * G));
}

void fy_sig_window(int k, double box[4]) {
  const double *sx = spans[k % FY_SIG_WIN_AXIS], *sy = spans[k / FY_SIG_WIN_AXIS];
  box[0] = sx[0];
  box[1] = sy[0];
  box[2] = sx[1];
  box[3] = sy[1];
}

/* The weights of g cells over [a, a + len) (fractions) of n: w[o][i]. */
static void weights(double a, double len, int n, double w[G][T]) {
  double step = len * n / G, a0 = a * n;
  for (int o = 0; o < G; o++) {
    double lo = a0 + o * step, hi = lo + step;
    for (int i = 0; i < n; i++) {
      double l = lo > i ? lo : i, h = hi < i + 1 ? hi : i + 1;
      w[o][i] = h > l ? (h - l) / step : 0;
    }
  }
}

void fy_sig_grid(const uint8_t *thumb, const double box[4], float *out) {
  double wx[G][T], wy[G][T], rows[G][T];
  weights(box[0], box[2], T, wx);
  weights(box[1], box[3], T, wy);
  for (int y = 0; y < G; y++)
    for (int j = 0; j < T; j++) {
      double s = 0;
      for (int i = 0; i < T; i++)
        s += wy[y][i] * thumb[i * T + j];
      rows[y][j] = s;
    }
  for (int y = 0; y < G; y++)
    for (int x = 0; x < G; x++) {
      double s = 0;
      for (int j = 0; j < T; j++)
        s += wx[x][j] * rows[y][j];
      out[y * G + x] = (float)s;
    }
}

/* The 64-bit code of a G x G grid. */
static uint64_t grid_code(const float *g) {
  double rows[L][G];
  for (int u = 0; u < L; u++)
    for (int x = 0; x < G; x++) {
      double s = 0;
      for (int y = 0; y < G; y++)
        s += cosines[u][y] * g[y * G + x];
      rows[u][x] = s;
    }
  uint64_t code = 0;
  for (int u = 0; u < L; u++)
    for (int v = 0; v < L; v++) {
      double s = 0;
      for (int x = 0; x < G; x++)
        s += cosines[v][x] * rows[u][x];
      if (s > 0)
        code |= 1ull << (u * L + v);
    }
  return code;
}

uint64_t fy_sig_whole_code(const uint8_t *thumb, float *grid) {
  pthread_once(&once, init);
  const double whole[4] = {0, 0, 1, 1};
  fy_sig_grid(thumb, whole, grid);
  return grid_code(grid);
}

/* For each span of a side, its G cells' weights times the low cosines
 * (L x T): a window's low coefficients are P_y T P_x^T. */
static double proj[FY_SIG_WIN_AXIS][L][T];
static pthread_once_t proj_once = PTHREAD_ONCE_INIT;

static void proj_init(void) {
  pthread_once(&once, init);
  for (int a = 0; a < FY_SIG_WIN_AXIS; a++) {
    double w[G][T];
    weights(spans[a][0], spans[a][1], T, w);
    for (int u = 0; u < L; u++)
      for (int i = 0; i < T; i++) {
        double s = 0;
        for (int o = 0; o < G; o++)
          s += cosines[u][o] * w[o][i];
        proj[a][u][i] = s;
      }
  }
}

void fy_sig_window_codes(const uint8_t *thumb, uint64_t codes[FY_SIG_WINDOWS]) {
  pthread_once(&proj_once, proj_init);
  double rows[FY_SIG_WIN_AXIS][L][T]; /* P_y T for each span down */
  for (int a = 0; a < FY_SIG_WIN_AXIS; a++)
    for (int u = 0; u < L; u++)
      for (int j = 0; j < T; j++) {
        double s = 0;
        for (int i = 0; i < T; i++)
          s += proj[a][u][i] * thumb[i * T + j];
        rows[a][u][j] = s;
      }
  for (int k = 0; k < FY_SIG_WINDOWS; k++) {
    const double(*r)[T] = rows[k / FY_SIG_WIN_AXIS], (*px)[T] = proj[k % FY_SIG_WIN_AXIS];
    uint64_t code = 0;
    for (int u = 0; u < L; u++)
      for (int v = 0; v < L; v++) {
        double s = 0;
        for (int j = 0; j < T; j++)
          s += r[u][j] * px[v][j];
        if (s > 0)
          code |= 1ull << (u * L + v);
      }
    codes[k] = code;
  }
}

double fy_sig_correlation(const float *a, const float *b, int n) {
  double ma = 0, mb = 0;
  for (int i = 0; i < n; i++)
    ma += a[i], mb += b[i];
  ma /= n, mb /= n;
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; i++) {
    double x = a[i] - ma, y = b[i] - mb;
    ab += x * y, aa += x * x, bb += y * y;
  }
  /* a flat grid says nothing either way: no match */
  return aa > 1e-9 && bb > 1e-9 ? ab / sqrt(aa * bb) : 0;
}

/* Is the box a window of the picture this search may take? */
static int allowed(const double b[4]) {
  return b[2] >= FY_SIG_CROP_MIN && b[3] >= FY_SIG_CROP_MIN && b[0] >= -0.005 && b[1] >= -0.005 &&
         b[0] + b[2] <= 1.005 && b[1] + b[3] <= 1.005;
}

double fy_sig_crop_align(const uint8_t *big, const float *small, double box[4], double floor) {
  float g[G * G];
  fy_sig_grid(big, box, g);
  double best = fy_sig_correlation(g, small, G * G);
  if (best < floor)
    return best; /* not worth aligning */
  for (double step = 0.04; step > 0.004; step /= 2)
    for (int moved = 1; moved;) {
      moved = 0;
      for (int p = 0; p < 4; p++)
        for (int s = -1; s <= 1; s += 2) {
          double b[4] = {box[0], box[1], box[2], box[3]};
          b[p] += s * step;
          if (p >= 2) /* a size changes about the centre */
            b[p - 2] -= s * step / 2;
          if (!allowed(b))
            continue;
          fy_sig_grid(big, b, g);
          double c = fy_sig_correlation(g, small, G * G);
          if (c > best + 1e-6) {
            best = c;
            memcpy(box, b, sizeof b);
            moved = 1;
          }
        }
    }
  return best;
}
