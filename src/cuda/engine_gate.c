/* engine_gate.c — shared and exclusive use of the GPU's JPEG engine (see
 * engine_gate.h for why), and what a decoding state has seen. */
#include "cuda/engine_gate.h"

#include <pthread.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int shared_in, exclusive_in, exclusive_waiting, shared_waiting;

void fy_engine_gate_enter(int exclusive) {
  pthread_mutex_lock(&mu);
  if (exclusive) {
    exclusive_waiting++;
    while (shared_in || exclusive_in)
      pthread_cond_wait(&cv, &mu);
    exclusive_waiting--;
    exclusive_in = 1;
  } else {
    shared_waiting++;
    while (exclusive_in || exclusive_waiting)
      pthread_cond_wait(&cv, &mu);
    shared_waiting--;
    shared_in++;
  }
  pthread_mutex_unlock(&mu);
}

void fy_engine_gate_leave(int exclusive) {
  pthread_mutex_lock(&mu);
  if (exclusive)
    exclusive_in = 0;
  else
    shared_in--;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

void fy_engine_gate_waiting(int *exclusive, int *shared) {
  pthread_mutex_lock(&mu);
  *exclusive = exclusive_waiting;
  *shared = shared_waiting;
  pthread_mutex_unlock(&mu);
}

int fy_engine_seen_grows(const fy_engine_seen *s, int w, int h, size_t bytes, int css) {
  unsigned bit = 1u << (css & 31);
  return w > s->w || h > s->h || (int64_t)w * h > s->area || bytes > s->bytes || !(s->css & bit);
}

void fy_engine_seen_add(fy_engine_seen *s, int w, int h, size_t bytes, int css) {
  s->w = w > s->w ? w : s->w;
  s->h = h > s->h ? h : s->h;
  if ((int64_t)w * h > s->area)
    s->area = (int64_t)w * h;
  s->bytes = bytes > s->bytes ? bytes : s->bytes;
  s->css |= 1u << (css & 31);
}

int fy_engine_seen_box(fy_engine_seen *s, int step) {
  int w = (s->w + step - 1) / step * step, h = (s->h + step - 1) / step * step;
  int grew = w != s->w || h != s->h || s->area != (int64_t)w * h || s->css != ~0u;
  s->w = w;
  s->h = h;
  s->area = (int64_t)w * h;
  s->css = ~0u;
  return grew;
}
