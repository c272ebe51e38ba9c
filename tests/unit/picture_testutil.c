/* picture_testutil.c — synthetic grey pictures (picture_testutil.h). */
#include "picture_testutil.h"

#include <math.h>
#include <stdlib.h>

uint8_t *test_picture(int w, int h, unsigned seed, int blobs, int rmin, int rdiv) {
  uint8_t *p = malloc((size_t)w * h);
  double cx[16], cy[16], r[16], v[16];
  blobs = blobs > 16 ? 16 : blobs;
  if (!p)
    return NULL;
  srand(seed);
  for (int k = 0; k < blobs; k++) {
    cx[k] = rand() % w, cy[k] = rand() % h, r[k] = rmin + rand() % (w / rdiv);
    v[k] = (rand() % 200) - 100;
  }
  double a = (rand() % 100) / 100.0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double s = 60 + 100.0 * x / w * a + 60.0 * y / h * (1 - a);
      for (int k = 0; k < blobs; k++)
        if ((x - cx[k]) * (x - cx[k]) + (y - cy[k]) * (y - cy[k]) < r[k] * r[k])
          s += v[k];
      s += 20 * sin(x * 0.05 * (1 + seed % 3) + y * 0.02);
      s += rand() % 9 - 4;
      p[y * w + x] = (uint8_t)(s < 0 ? 0 : s > 255 ? 255 : s);
    }
  return p;
}
