/* internal.h — helpers shared by every ferry source file (not installed). */
#ifndef FY_INTERNAL_H
#define FY_INTERNAL_H

#include "ferry.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FY_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FY_PRINTF(a, b)
#endif

/* Records the thread's last error message and returns `status`, so that a
 * failure path reads `return fy_error(FERRY_EIO, "%s: cannot open", path);` */
int fy_error(int status, const char *fmt, ...) FY_PRINTF(2, 3);
/* Clears the thread's last error message. */
void fy_error_clear(void);

/* A grow-only buffer: reused across images so that the hot path does not
 * allocate once it has seen the largest image. */
typedef struct fy_buf {
  void *p;
  size_t cap;
  int mapped;    /* p came from mmap (large buffers) */
  int heap_only; /* set by the owner: always malloc, so that p can be handed
                    to a caller who will free() it */
} fy_buf;

/* Makes buf->p hold at least `size` bytes (contents not kept). FERRY_OK or
 * FERRY_ENOMEM. */
int fy_buf_reserve(fy_buf *buf, size_t size);
void fy_buf_free(fy_buf *buf);

/* Fault injection (tests): with FERRY_FAIL_ALLOC=N (a test control,
 * core/testctl.h) in the environment, or
 * after fy_fail_alloc_set(N), the Nth allocation through fy_buf_reserve or
 * fy_malloc (counted from 1, all threads together) fails as if memory ran
 * out; 0 = never. fy_fail_alloc_set also restarts the count. */
void fy_fail_alloc_set(long n);
/* 1 when an allocation failure is set to come (FERRY_FAIL_ALLOC or
 * fy_fail_alloc_set with N > 0), whether or not it has come yet. */
int fy_fail_alloc_armed(void);
/* 1 when the injected failure is due now (counts one allocation). */
int fy_fail_alloc_now(void);
/* malloc(n), or NULL when an injected failure is due. */
void *fy_malloc(size_t n);

/* Byte-counting fault points (tests; src/core/fault.c). FY_FAULT_READ:
 * file reads through fy_read_file (FERRY_FAIL_READ=N in the environment);
 * FY_FAULT_WRITE: catalog journal writes and the copy of a move across
 * file systems (ferry dupes --move-dupes-to; FERRY_FAIL_WRITE=N). The one
 * operation that would carry byte N (counted from 1 over all operations of
 * the kind since the set call, all threads) moves the bytes before it and
 * then fails: EIO for a read, ENOSPC for a write. Once. 0 = never. */
typedef enum { FY_FAULT_READ, FY_FAULT_WRITE, FY_FAULT_COUNT } fy_fault_kind;
void fy_fail_bytes_set(fy_fault_kind kind, uint64_t n);
/* For an operation about to move `want` bytes: 1 when the injected fault
 * falls inside it (*ok = the bytes to move before failing), else 0. */
int fy_fail_bytes_due(fy_fault_kind kind, size_t want, size_t *ok);

/* An injected stall (tests of the loader's watchdog; src/core/fault.c):
 * the call of fy_fault_stall() that is the Nth since fy_fault_stall_set(N,
 * ms) (all threads together; FERRY_STALL_AT=N:MS in the environment)
 * sleeps ms milliseconds. Once. The loader's workers call it before each
 * decode, `ferry dupes` before each block of a copy across file systems. Disarmed (the default), a call costs one atomic load. */
void fy_fault_stall_set(uint64_t n, int ms);
void fy_fault_stall(void);
/* A folder that cannot be listed (tests of the catalog walk, which run as
 * root in CI, where permissions deny nothing): 1 when the last name of
 * `dir` is FERRY_DENY_DIR in the environment. */
int fy_fault_dir_denied(const char *dir);

/* Runs fn(arg) with SIGBUS (a memory-mapped file that shrank under its
 * mapping) turned into a return of -1 for this thread; 0 when fn ran to
 * its end. fn must not leave locks held or state half-changed when cut
 * short (src/core/bus.c). */
int fy_bus_guard(void (*fn)(void *), void *arg);

/* A message to the host's log function (ferry_set_log; log.c), or to
 * stderr as "ferry: MESSAGE" without one: the library's only way to say
 * something that is not the call's own error. */
void fy_log(ferry_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when a message of `level` would be said (ferry_set_log_level): what a
 * debug line's costly preparation (timing, counting) waits for. */
int fy_log_on(ferry_log_level level);

/* The pixel limit (max_pixels of the decode, loader and hasher options;
 * 0 = none), one rule for every decoder and every path that falls back to
 * one: 1 when a width x height image is over it. */
static inline int fy_over_pixel_limit(uint64_t width, uint64_t height, uint64_t max_pixels) {
  return max_pixels && width * height > max_pixels;
}
/* The error for such an image (FERRY_ETOO_LARGE), in one wording:
 * "NAME: FORMAT is WxH (N pixels), over the MAX-pixel limit". */
int fy_pixel_limit_error(const char *name, const char *format, uint64_t width, uint64_t height,
                         uint64_t max_pixels);

/* Overflow-checked size arithmetic: 0 on overflow. */
int fy_mul_size(size_t a, size_t b, size_t *out);
/* A growing array: p (NULL at first) reallocated to hold at least `need`
 * elements of `elem` bytes, its capacity *cap doubled from `first`, the
 * contents kept. The new pointer, *cap updated; NULL (p and *cap untouched)
 * when memory runs out or the size overflows. */
void *fy_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first);

/* Monotonic clock in seconds. */
double fy_now(void);

/* Number of online CPU cores (at least 1). */
int fy_num_cores(void);

/* Names the calling thread (at most 15 characters are kept), as `top -H`,
 * /proc/PID/task/TID/comm and profilers show it: ferry's threads are
 * "ferry-worker" (a loader's CPU decoding) and "ferry-engine" (a loader's
 * JPEG engine feeding). Best effort: a failure changes nothing. */
void fy_thread_name(const char *name);

/* Whether this CPU runs AVX2 (asked once; 0 off x86-64). */
int fy_cpu_avx2(void);

/* Reads a whole file into buf (grown as needed); *size gets its length.
 * Regular files only (core/user_file.h: a FIFO, device or socket is refused
 * at once, by name, never waited on). Refuses files over max_bytes (0 = no
 * limit) before reading. Errors name the path. A hung network mount can
 * block read() itself, which nothing here can interrupt: the loader's stall
 * watchdog reports it. */
int fy_read_file(const char *path, uint64_t max_bytes, fy_buf *buf, size_t *size);
/* A byte range of a file (a shard's member, io/shard_fd.c), in two steps.
 * fy_read_range_check: whether `len` bytes at `off` may be read at all,
 * before any open or allocation: over max_bytes (0 = no limit) is
 * FERRY_ETOO_LARGE, a size or offset out of range FERRY_ECORRUPT; messages
 * name `name` (the member). fy_read_range_fd then reads them with pread()
 * from the open regular file fd (its position neither used nor moved, so
 * threads may share fd): a file that ends early is FERRY_ECORRUPT ("NAME:
 * the shard ends after N of the member's M bytes"), a failed read FERRY_EIO
 * with its place. */
int fy_read_range_check(const char *name, uint64_t off, uint64_t len, uint64_t max_bytes);
int fy_read_range_fd(int fd, const char *name, uint64_t off, uint64_t len, fy_buf *buf,
                     size_t *size);

/* Counter-based random numbers: the same (seed, stream, index) always gives
 * the same value, whatever thread asks (SplitMix64 over a mixed key). */
uint64_t fy_rand_u64(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform double in [0, 1) from a 64-bit random value. */
double fy_rand_unit(uint64_t r);

/* memcpy with non-temporal (streaming) stores where the CPU has them: for
 * destinations far larger than the caches (batch rings), whose bytes the
 * consumer reads much later. It skips the read-for-ownership of every
 * destination line, about 1.5x the bandwidth of memcpy there; for small or
 * soon-read destinations plain memcpy is better. The stores are fenced
 * before it returns. */
void fy_copy_stream(void *dst, const void *src, size_t n);
/* Destinations (a whole batch ring) larger than this take streaming
 * copies: the last-level cache's size (sysfs; 32 MiB when unknown), at
 * least FY_STREAM_MIN_BYTES. A ring that fits in the cache is faster with
 * plain stores (measured: 300 MiB L3, 115 MB ring, +8 %), a larger one with
 * streaming stores (32 MiB L3: +40 %). The test control FERRY_STREAM_MIN_MB
 * (testctl.h) overrides it. */
#define FY_STREAM_MIN_BYTES ((size_t)16 << 20)
size_t fy_stream_min_bytes(void);

#endif
