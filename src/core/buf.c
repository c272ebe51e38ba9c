/* buf.c — grow-only buffers and overflow-checked sizes. */
#include "core/internal.h"

#include <stdlib.h>

int fy_buf_reserve(fy_buf *buf, size_t size) {
  if (size <= buf->cap)
    return FERRY_OK;
  /* Grow by half again so a slowly growing series of images settles fast. */
  size_t cap = buf->cap + buf->cap / 2;
  if (cap < size)
    cap = size;
  void *p = malloc(cap);
  if (!p) {
    p = malloc(size);
    cap = size;
    if (!p)
      return fy_error(FERRY_ENOMEM, "out of memory allocating %zu bytes", size);
  }
  free(buf->p);
  buf->p = p;
  buf->cap = cap;
  return FERRY_OK;
}

void fy_buf_free(fy_buf *buf) {
  free(buf->p);
  buf->p = NULL;
  buf->cap = 0;
}

int fy_mul_size(size_t a, size_t b, size_t *out) {
  if (a && b > SIZE_MAX / a)
    return 0;
  *out = a * b;
  return 1;
}
