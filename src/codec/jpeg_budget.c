/* jpeg_budget.c — the work a JPEG's scans will cost libjpeg, read from its
 * marker structure before anything is decoded (issue 52).
 *
 * A progressive (or multi-scan sequential) JPEG is decoded into a buffer
 * of the whole image's coefficients, and each scan goes over the blocks of
 * the components it carries: the work is scans x area. A file that repeats
 * one scan thousands of times (a "scan bomb": the review's 1 MB file of
 * 5,001 scans took 17 s) is refused here in one pass over its bytes, by two limits (jpeg_int.h):
 * more than FY_JPEG_MAX_SCANS scans whatever the size, or scans that visit the image's blocks more
 * than FY_JPEG_MAX_PASSES times over (libjpeg's own progression visits them 4.3-6 times; every file
 * of the corpus at most 5.3), beyond a floor of FY_JPEG_SCAN_FLOOR block visits that small images
 * never reach. A single sequential scan of every component (baseline photos: libjpeg refuses any
 * second scan there) is let through after the headers alone. */
#include "codec/jpeg_int.h"

#include <stdint.h>
#include <string.h>

enum { MAX_COMPS = 10 }; /* libjpeg's MAX_COMPONENTS */

typedef struct frame {
  int progressive, ncomp;
  unsigned width, height;
  int id[MAX_COMPS];
  uint64_t blocks[MAX_COMPS], total; /* 8x8 blocks of each component, all */
} frame;

static unsigned u16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

/* SOFn: the size and each component's blocks (0 where libjpeg will refuse
 * the frame itself: then the budget has nothing to say). */
static int read_frame(const fy_jpeg_seg *s, frame *f) {
  memset(f, 0, sizeof *f);
  if (s->len < 6)
    return 0;
  f->height = u16(s->data + 1);
  f->width = u16(s->data + 3);
  f->ncomp = s->data[5];
  if (!f->width || !f->height || f->ncomp < 1 || f->ncomp > MAX_COMPS ||
      s->len < 6 + 3 * (size_t)f->ncomp)
    return 0;
  int h[MAX_COMPS], v[MAX_COMPS], hmax = 1, vmax = 1;
  for (int c = 0; c < f->ncomp; c++) {
    const uint8_t *p = s->data + 6 + 3 * c;
    f->id[c] = p[0];
    h[c] = p[1] >> 4;
    v[c] = p[1] & 15;
    if (h[c] < 1 || h[c] > 4 || v[c] < 1 || v[c] > 4)
      return 0;
    hmax = h[c] > hmax ? h[c] : hmax;
    vmax = v[c] > vmax ? v[c] : vmax;
  }
  for (int c = 0; c < f->ncomp; c++) {
    uint64_t cw = ((uint64_t)f->width * h[c] + hmax - 1) / hmax;
    uint64_t ch = ((uint64_t)f->height * v[c] + vmax - 1) / vmax;
    f->blocks[c] = ((cw + 7) / 8) * ((ch + 7) / 8);
    f->total += f->blocks[c];
  }
  uint8_t m = s->marker;
  f->progressive = m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE;
  return 1;
}

/* Past a scan's entropy-coded data: to the first marker that is not a
 * stuffed byte (FF 00), a restart marker or a fill byte. */
static size_t past_scan(const uint8_t *d, size_t n, size_t i) {
  while (i + 1 < n) {
    const uint8_t *ff = memchr(d + i, 0xFF, n - 1 - i);
    if (!ff)
      return n;
    i = (size_t)(ff - d);
    uint8_t m = d[i + 1];
    if (m == 0xFF)
      i++;
    else if (m == 0x00 || (m >= 0xD0 && m <= 0xD7))
      i += 2;
    else
      return i;
  }
  return n;
}

static int is_sof(uint8_t m) {
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

int fy_jpeg_scan_budget(const uint8_t *d, size_t n, const char *name) {
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8)
    return FERRY_OK;
  frame f = {0};
  int have_frame = 0, scans = 0;
  uint64_t visits = 0, budget = 0;
  size_t pos = 2;
  fy_jpeg_seg s;
  while (fy_jpeg_seg_next(d, n, &pos, 0, &s) == 1 && s.marker != 0xD9) {
    if (is_sof(s.marker) && !have_frame) {
      if (!read_frame(&s, &f))
        return FERRY_OK; /* libjpeg's message */
      have_frame = 1;
      budget = f.total * FY_JPEG_MAX_PASSES;
      budget = budget > FY_JPEG_SCAN_FLOOR ? budget : FY_JPEG_SCAN_FLOOR;
      continue;
    }
    if (s.marker != 0xDA)
      continue;
    if (!have_frame || s.len < 1 || s.len < 1 + 2 * (size_t)s.data[0])
      return FERRY_OK;
    int ns = s.data[0];
    if (++scans > FY_JPEG_MAX_SCANS)
      return fy_error(FERRY_ETOO_LARGE, "%s: JPEG with more than %d scans, over the limit", name,
                      FY_JPEG_MAX_SCANS);
    if (scans == 1 && !f.progressive && ns == f.ncomp)
      return FERRY_OK; /* one sequential scan of everything: no other is read */
    for (int k = 0; k < ns; k++)
      for (int c = 0; c < f.ncomp; c++)
        if (f.id[c] == s.data[1 + 2 * k]) {
          visits += f.blocks[c];
          break;
        }
    if (visits > budget)
      return fy_error(FERRY_ETOO_LARGE,
                      "%s: JPEG whose first %d scans already go over its %ux%u pixels %.1f times, "
                      "more than the limit of %d: a decoding bomb, refused",
                      name, scans, f.width, f.height, (double)visits / (double)f.total,
                      FY_JPEG_MAX_PASSES);
    pos = past_scan(d, n, pos);
  }
  return FERRY_OK;
}
