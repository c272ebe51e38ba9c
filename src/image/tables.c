/* tables.c — the resizer's fixed-point filter tables for one axis, exported
 * for the GPU kernels so that they resample with the very same weights. */
#include "image/resample.h"

#include <string.h>

int fy_resize_axis_table(ferry_filter filter, int in_size, double in0, double in1, int out,
                         int32_t *dst, int capacity, fy_axis_table *t, fy_buf *scratch) {
  if (filter == FERRY_FILTER_NEAREST || out < 1 || in_size < 1 || !(in1 > in0))
    return FERRY_EUNSUPPORTED;
  int taps = fy_coeffs_max_taps(filter, in1 - in0, out);
  if (taps > in_size)
    taps = in_size;
  size_t bytes = fy_coeffs_bytes(out, taps);
  if (!bytes || (long)out * (taps + 1) > capacity)
    return FERRY_ETOO_LARGE;
  int rc = fy_buf_reserve(scratch, bytes);
  if (rc)
    return rc;
  fy_coeffs c;
  fy_coeffs_build(filter, in_size, (float)in0, (float)in1, out, taps, scratch->p, &c);
  memcpy(dst, c.start, sizeof(int32_t) * (size_t)out);
  memcpy(dst + out, c.k, sizeof(int32_t) * (size_t)out * c.taps);
  t->taps = c.taps;
  t->first = c.first;
  t->last = c.last;
  t->entries = out * (c.taps + 1);
  return FERRY_OK;
}
