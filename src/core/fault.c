/* fault.c — injected I/O faults for the tests: a read that fails with EIO
 * part-way through a file, a catalog journal write that fails with ENOSPC.
 *
 * Each fault point counts the bytes that pass through it (all threads
 * together) and fails the one operation that would carry byte N, after the
 * bytes before it: a disk that returns the start of a file and then an
 * error, a disk that fills up in the middle of a record. Once: later
 * operations succeed again. Disarmed (the default), a check costs one
 * atomic load. */
#include "core/internal.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct fault_point {
  const char *env;
  atomic_llong at; /* -1 until the environment is read; 0 = never */
  atomic_ullong bytes;
} fault_point;

static fault_point points[FY_FAULT_COUNT] = {
    [FY_FAULT_READ] = {"FERRY_FAIL_READ", -1, 0},
    [FY_FAULT_WRITE] = {"FERRY_FAIL_WRITE", -1, 0},
};

void fy_fail_bytes_set(fy_fault_kind kind, uint64_t n) {
  fault_point *f = &points[kind];
  atomic_store(&f->bytes, 0);
  atomic_store(&f->at, (long long)(n > (uint64_t)LLONG_MAX ? LLONG_MAX : n));
}

static long long armed_at(fault_point *f) {
  long long at = atomic_load_explicit(&f->at, memory_order_relaxed);
  if (at >= 0)
    return at;
  const char *e = getenv(f->env);
  long long n = e ? strtoll(e, NULL, 10) : 0, expect = -1;
  atomic_compare_exchange_strong(&f->at, &expect, n > 0 ? n : 0);
  return atomic_load(&f->at);
}

int fy_fail_bytes_due(fy_fault_kind kind, size_t want, size_t *ok) {
  fault_point *f = &points[kind];
  unsigned long long at = (unsigned long long)armed_at(f);
  if (at == 0 || want == 0)
    return 0;
  unsigned long long before = atomic_fetch_add(&f->bytes, want);
  if (before >= at || before + want < at)
    return 0; /* byte N is not in this operation */
  *ok = (size_t)(at - 1 - before);
  return 1;
}
