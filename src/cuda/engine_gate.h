/* engine_gate.h — when a call to the GPU's JPEG engine may run beside
 * others (engine_gate.c). Plain C: tested on the CPU. */
#ifndef FY_ENGINE_GATE_H
#define FY_ENGINE_GATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The process-wide gate around nvJPEG hardware calls. A decode that only
 * reuses a state's buffers enters shared (many at once); one that may make
 * nvJPEG reallocate them (a state's first use, a larger image, bitstream or
 * chroma layout than the state has seen, destroying states) enters
 * exclusive: it waits until no other engine call is in flight, and others
 * wait for it. Reallocation frees device memory with cuMemFree inside the
 * hardware decoder (libnvcuvid), which waits for the whole device; with
 * another thread's engine job in flight that wait was seen to deadlock
 * (the GPU soak, bench/CLAIMS.md C34). Writers go first: an exclusive entrant
 * holds new shared ones back. */
void fy_engine_gate_enter(int exclusive);
void fy_engine_gate_leave(int exclusive);
/* The entrants waiting at the gate now, exclusive and shared (a wait's
 * diagnosis; the tests' way to know a thread is waiting, not to guess). */
void fy_engine_gate_waiting(int *exclusive, int *shared);

/* The largest inputs a decoding state has taken. */
typedef struct fy_engine_seen {
  int w, h;     /* widest, tallest */
  int64_t area; /* most pixels */
  size_t bytes; /* longest bitstream */
  unsigned css; /* chroma subsamplings seen, one bit each */
} fy_engine_seen;

/* 1 when an image of w x h pixels, `bytes` long, with chroma subsampling
 * css (0..31) is outside what the state has seen (so nvJPEG may grow its
 * buffers for it); fy_engine_seen_add records it. */
int fy_engine_seen_grows(const fy_engine_seen *s, int w, int h, size_t bytes, int css);
void fy_engine_seen_add(fy_engine_seen *s, int w, int h, size_t bytes, int css);
/* After nvjpegDecodeBatchedPreAllocate for a box of s->w x s->h pixels in
 * 4:4:4 (which nvJPEG says covers every image within the box, whatever its
 * subsampling): every image inside the box counts as seen. Rounds the box
 * up to multiples of `step` first; returns 1 when it grew. */
int fy_engine_seen_box(fy_engine_seen *s, int step);

#ifdef __cplusplus
}
#endif

#endif
