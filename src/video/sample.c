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
  s->first_index = s->last_index = -1;
}

int fy_vsample(fy_vsampler *s, double t) { return fy_vsample_index(s, t, -1); }

int fy_vsample_index(fy_vsampler *s, double t, int64_t index) {
  if (t + EPS < s->start)
    return 0;
  if (s->end > 0 && t + EPS >= s->end)
    return -1;
  int64_t n = s->in_range++;
  if (index >= 0) {
    if (s->first_index < 0)
      s->first_index = index;
    s->last_index = index;
    n = index - s->first_index;
  }
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

double fy_vsample_next(const fy_vsampler *s, double fps, double t0) {
  if (!s->in_range)
    return s->start > 0 ? s->start - EPS : -INFINITY;
  if (s->rate > 0)
    return s->next_t - EPS;
  if (s->stride > 1 && fps > 0 && s->first_index >= 0) {
    int64_t n = s->last_index - s->first_index;
    int64_t next = s->first_index + (n / s->stride + 1) * s->stride;
    return t0 + next / fps - EPS;
  }
  return -INFINITY;
}

int fy_vsample_wanted(const fy_vsampler *s, double t, double fps, double t0) {
  if (t + EPS < s->start)
    return 0;
  if (!s->in_range || fps <= 0)
    return 1; /* the first frame of the range is kept: any may be it */
  if (s->end > 0 && t + EPS >= s->end)
    return 0;
  if (s->rate > 0) {
    if (!s->have_first)
      return 1;
    /* kept: the first frame at or after a grid point, i.e. one lies in
     * (t - 1/fps, t]; unsure within a tenth of a frame: wanted */
    double slack = 0.1 / fps;
    double hi = floor((t + slack - s->first_t) * s->rate + EPS);
    double lo = floor((t - 1 / fps - slack - s->first_t) * s->rate + EPS);
    return hi > lo;
  }
  if (s->stride > 1 && s->first_index >= 0) {
    double pos = (t - t0) * fps;
    if (fabs(pos - floor(pos + 0.5)) > 0.25)
      return 1; /* off the grid: cannot tell */
    int64_t n = (int64_t)floor(pos + 0.5) - s->first_index;
    return n < 0 || n % s->stride == 0;
  }
  return 1;
}

int fy_video_walk_to(const fy_vwalk *w, int64_t k, double *t) {
  double tk = w->start + k / w->fps, half = 0.5 / w->fps, target = tk;
  int from_here = w->from_here;
  for (int tries = 0;; tries++) {
    if (!from_here) {
      int st = w->seek(w->dec, target, k);
      if (st != FERRY_OK)
        return st;
    }
    w->aim(w->dec, tk);
    int first = !from_here;
    for (;;) {
      int64_t idx;
      int st = w->next(w->dec, t, &idx);
      if (st == FERRY_END) {
        w->aim(w->dec, -INFINITY);
        int64_t n = w->read_end(w->dec);
        return fy_error(FERRY_EINVAL, "%s: frame %lld is out of range (the file has %lld frames)",
                        w->path, (long long)k, (long long)(n > 0 ? n : idx));
      }
      if (st != FERRY_OK || idx == k) {
        w->aim(w->dec, -INFINITY);
        return st;
      }
      if (idx > k) {
        if (first || from_here)
          break; /* the seek landed after frame k: from an earlier keyframe */
        w->aim(w->dec, -INFINITY);
        return fy_error(FERRY_ECORRUPT, "%s: frame %lld (%.3f s) is missing: frame %lld follows",
                        w->path, (long long)k, tk, (long long)idx);
      }
      first = 0;
    }
    if (target <= w->start - half || tries >= 8) {
      w->aim(w->dec, -INFINITY);
      return fy_error(FERRY_ECORRUPT, "%s: no keyframe found before frame %lld (%.3f s)", w->path,
                      (long long)k, tk);
    }
    /* further back each time: a keyframe's decode time can precede its
     * display time, or frame k is a leading picture of an open GOP */
    target = tries < 6 ? target - (1 << tries) : w->start - 1;
    from_here = 0;
  }
}

int fy_video_orientation(int rotation) {
  switch (rotation) {
  case 90: return 6;
  case 180: return 3;
  case 270: return 8;
  default: return 1;
  }
}

/* At the end of a stream that stopped without an error: did the container
 * promise more? (A truncated Matroska/WebM file just ends.) */
static int ended_early(const fy_vprogress *p) {
  if (p->sought)
    return 0;
  if (p->declared > 0)
    return p->returned < p->declared;
  if (p->duration > 0 && p->fps > 0)
    return p->last_t + 1.5 / p->fps < p->start + p->duration - 1e-6;
  return 0;
}

int fy_video_end(const char *path, const fy_vprogress *p, int pending, const char *pending_msg) {
  if (pending)
    return fy_error(pending, "%s: truncated or damaged: %s (%lld frames decoded)", path,
                    pending_msg, (long long)p->returned);
  if (!ended_early(p))
    return FERRY_END;
  if (p->declared > 0)
    return fy_error(FERRY_ECORRUPT, "%s: truncated or damaged: %lld of %lld frames decoded", path,
                    (long long)p->returned, (long long)p->declared);
  return fy_error(FERRY_ECORRUPT,
                  "%s: truncated or damaged: ends at %.3f s of %.3f s (%lld frames decoded)", path,
                  p->last_t, p->start + p->duration, (long long)p->returned);
}
