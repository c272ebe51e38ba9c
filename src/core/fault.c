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
#include "core/testctl.h"

#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

typedef struct fault_point {
  fy_tc control;
  atomic_llong at; /* -1 until the test control is read; 0 = never */
  atomic_ullong bytes;
} fault_point;

static fault_point points[FY_FAULT_COUNT] = {
    [FY_FAULT_READ] = {FY_TC_FAIL_READ, -1, 0},   /* FERRY_FAIL_READ */
    [FY_FAULT_WRITE] = {FY_TC_FAIL_WRITE, -1, 0}, /* FERRY_FAIL_WRITE */
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
  long n = 0;
  fy_tc_long(f->control, &n);
  long long expect = -1;
  atomic_compare_exchange_strong(&f->at, &expect, (long long)n);
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

/* ------------------------------------------------------- injected stall */

static atomic_llong stall_at = -1; /* -1 until the test control is read */
static atomic_int stall_ms;
static atomic_ullong stall_calls;

void fy_fault_stall_set(uint64_t n, int ms) {
  atomic_store(&stall_calls, 0);
  atomic_store(&stall_ms, ms);
  atomic_store(&stall_at, (long long)(n > (uint64_t)LLONG_MAX ? LLONG_MAX : n));
}

void fy_fault_stall(void) {
  long long at = atomic_load_explicit(&stall_at, memory_order_relaxed);
  if (at < 0) {
    long n = 0, ms = 0;
    fy_tc_pair(FY_TC_STALL_AT, &n, &ms); /* FERRY_STALL_AT=N:MS */
    atomic_store(&stall_ms, (int)ms);
    long long expect = -1;
    atomic_compare_exchange_strong(&stall_at, &expect, (long long)n);
    at = atomic_load(&stall_at);
  }
  if (at == 0 || atomic_fetch_add(&stall_calls, 1) + 1 != (unsigned long long)at)
    return;
  int ms = atomic_load(&stall_ms);
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int fy_fault_dir_denied(const char *dir) {
  const char *e = fy_tc_text(FY_TC_DENY_DIR); /* FERRY_DENY_DIR */
  if (!e)
    return 0;
  const char *slash = strrchr(dir, '/');
  return !strcmp(slash ? slash + 1 : dir, e);
}
