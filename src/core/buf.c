/* buf.c — grow-only buffers and overflow-checked sizes.
 *
 * Large buffers come straight from mmap, sized in powers of two: a worker
 * that meets a bigger image than before replaces its buffer without
 * fragmenting the malloc heap, the old pages go back to the system at once,
 * and the few possible sizes mean workers settle after the first epoch, so
 * memory stays flat over a long training run. */
#include "core/internal.h"
#include "core/testctl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#define FY_MMAP_MIN ((size_t)64 << 10)

static size_t round_pow2(size_t n) {
  size_t c = FY_MMAP_MIN;
  while (c < n && c <= SIZE_MAX / 2)
    c *= 2;
  return c < n ? n : c;
}

static void release(void *p, size_t cap, int mapped) {
  if (!p)
    return;
  if (mapped)
    munmap(p, cap);
  else
    free(p);
}

/* -1 until the test control is read; then the failing allocation's number */
static atomic_long fail_at = -1;
static atomic_long alloc_count;

void fy_fail_alloc_set(long n) {
  atomic_store(&alloc_count, 0);
  atomic_store(&fail_at, n > 0 ? n : 0);
}

static long armed_at(void) {
  long at = atomic_load(&fail_at);
  if (at < 0) {
    long n = 0, expect = -1;
    fy_tc_long(FY_TC_FAIL_ALLOC, &n); /* FERRY_FAIL_ALLOC */
    atomic_compare_exchange_strong(&fail_at, &expect, n > 0 ? n : 0);
    at = atomic_load(&fail_at);
  }
  return at;
}

int fy_fail_alloc_armed(void) { return armed_at() > 0; }

int fy_fail_alloc_now(void) {
  long at = armed_at();
  return at > 0 && atomic_fetch_add(&alloc_count, 1) + 1 == at;
}

void *fy_malloc(size_t n) { return fy_fail_alloc_now() ? NULL : malloc(n); }

int fy_buf_reserve(fy_buf *buf, size_t size) {
  if (size <= buf->cap)
    return FERRY_OK;
  if (fy_fail_alloc_now())
    return fy_error(FERRY_ENOMEM, "out of memory allocating %zu bytes (injected)", size);
  void *p;
  size_t cap;
  int mapped = !buf->heap_only && size >= FY_MMAP_MIN / 2;
  if (mapped) {
    cap = round_pow2(size);
    p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      p = NULL;
  } else {
    cap = buf->heap_only ? size : size < 4096 ? 4096 : size;
    p = malloc(cap);
  }
  if (!p)
    return fy_error(FERRY_ENOMEM, "out of memory allocating %zu bytes", size);
  release(buf->p, buf->cap, buf->mapped);
  buf->p = p;
  buf->cap = cap;
  buf->mapped = mapped;
  return FERRY_OK;
}

void fy_buf_free(fy_buf *buf) {
  release(buf->p, buf->cap, buf->mapped);
  buf->p = NULL;
  buf->cap = 0;
  buf->mapped = 0;
}

int fy_mul_size(size_t a, size_t b, size_t *out) {
  if (a && b > SIZE_MAX / a)
    return 0;
  *out = a * b;
  return 1;
}

void *fy_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first) {
  if (need <= *cap && p)
    return p;
  size_t n = *cap ? *cap : first ? first : 1, bytes;
  while (n < need) {
    if (n > SIZE_MAX / 2)
      return NULL;
    n *= 2;
  }
  if (!fy_mul_size(n, elem, &bytes))
    return NULL;
  void *q = realloc(p, bytes);
  if (q)
    *cap = n;
  return q;
}
