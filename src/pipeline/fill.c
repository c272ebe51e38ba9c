/* fill.c — which samples fill an epoch's batches (fill.h). */
#include "pipeline/fill.h"

int64_t fy_fill_planned(int64_t n, int batch_size, int drop_last) {
  int64_t full = n / batch_size;
  return drop_last || n % batch_size == 0 ? full : full + 1;
}

void fy_fill_start(fy_fill *f, int64_t n, int batch_size, int drop_last) {
  f->n = n;
  f->batch_size = batch_size;
  f->drop_last = drop_last;
  f->regular = n / batch_size;
  f->pool_next = f->regular * batch_size;
  f->pool_end = n;
  f->settled = 0;
  f->last = -1;
  f->in_tail = 0;
}

int64_t fy_fill_batches(const fy_fill *f) {
  if (f->last >= 0)
    return f->last;
  return f->regular + (!f->drop_last && (f->pool_next < f->pool_end || f->in_tail));
}

int64_t fy_fill_own_end(const fy_fill *f) { return f->regular * f->batch_size; }

int fy_fill_is_tail(const fy_fill *f, int64_t b) { return b == f->regular && !f->drop_last; }

int64_t fy_fill_take(fy_fill *f, int64_t b) {
  if (f->pool_next == f->pool_end && b < f->regular - 1) {
    /* give up the last full batch: its positions are the pool now */
    f->regular--;
    f->pool_next = f->regular * f->batch_size;
    f->pool_end = f->pool_next + f->batch_size;
  }
  if (b == f->regular && !f->drop_last)
    f->in_tail = 1;
  return f->pool_next < f->pool_end ? f->pool_next++ : -1;
}

int fy_fill_settle(fy_fill *f, int64_t b, int count) {
  f->settled = b + 1;
  int full = count == f->batch_size;
  if (!full || b + 1 >= fy_fill_batches(f)) {
    /* short (the pool ran out) or the last there is: the epoch ends here */
    int delivered = count > 0 && (full || !f->drop_last);
    f->last = b + delivered;
    return delivered;
  }
  return 1;
}
