/* sample.c — which decoded frames a video reader keeps: a time range, then
 * every Nth frame of it or frames on a fixed-rate grid anchored at the first
 * frame of the range (the frame at or just after each grid point). */
#include "video/video.h"

#include <math.h>

#define EPS 1e-6

void fy_vsampler_init(fy_vsampler *s, int stride, double rate, double start, double end) {
  s->stride = stride < 1 ? 1 : stride;
  s->rate = rate > 0 ? rate : 0;
  s->start = start;
  s->end = end;
  s->in_range = 0;
  s->have_first = 0;
  s->first_t = s->next_t = 0;
}

int fy_vsample(fy_vsampler *s, double t) {
  if (t + EPS < s->start)
    return 0;
  if (s->end > 0 && t + EPS >= s->end)
    return -1;
  int64_t n = s->in_range++;
  if (s->rate <= 0)
    return n % s->stride == 0;
  if (s->have_first && t + EPS < s->next_t)
    return 0;
  if (!s->have_first) {
    s->have_first = 1;
    s->first_t = t;
  }
  /* next grid point strictly after t */
  double k = floor((t - s->first_t) * s->rate + EPS) + 1;
  s->next_t = s->first_t + k / s->rate;
  return 1;
}

int fy_video_orientation(int rotation) {
  switch (rotation) {
  case 90: return 6;
  case 180: return 3;
  case 270: return 8;
  default: return 1;
  }
}
