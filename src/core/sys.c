/* sys.c — clock, core count, thread names, whole-file reads (with a
 * time-out for FIFOs and devices) and byte-range reads of an open file (a
 * shard's member), all through the injected read fault of fault.c. */
#include "core/internal.h"
#include "core/user_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double fy_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int fy_num_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void fy_thread_name(const char *name) {
  char n[16];
  snprintf(n, sizeof n, "%s", name);
  (void)pthread_setname_np(pthread_self(), n);
}

int fy_cpu_avx2(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  static int v = -1; /* a race only asks twice */
  int a = __atomic_load_n(&v, __ATOMIC_RELAXED);
  if (a < 0) {
    __builtin_cpu_init();
    a = __builtin_cpu_supports("avx2") ? 1 : 0;
    __atomic_store_n(&v, a, __ATOMIC_RELAXED);
  }
  return a;
#else
  return 0;
#endif
}

/* A failing read, injected (fault.c) or real, reported with its place. */
static int read_error(const char *path, size_t at, int err) {
  return fy_error(FERRY_EIO, "%s: read failed at byte %zu: %s", path, at, strerror(err));
}

/* read() at the file position (at < 0), or pread() at byte `at`. */
static ssize_t read_at(int fd, void *p, size_t n, int64_t at) {
  return at < 0 ? read(fd, p, n) : pread(fd, p, n, (off_t)at);
}

/* read_at(), or the injected EIO (fault.c): then -1 with errno = EIO after
 * reading the bytes before the fault into p (*before of them). */
static ssize_t read_some(int fd, void *p, size_t n, int64_t at, size_t *before) {
  size_t ok;
  *before = 0;
  if (!fy_fail_bytes_due(FY_FAULT_READ, n, &ok))
    return read_at(fd, p, n, at);
  ssize_t got = ok ? read_at(fd, p, ok, at) : 0;
  *before = got > 0 ? (size_t)got : 0;
  errno = EIO;
  return -1;
}

/* Reads `want` bytes of a regular file (fewer if it ends first: it shrank
 * meanwhile), from its position (at < 0) or with pread() from byte `at`
 * (the position neither used nor moved: threads may share the fd). */
static int read_regular(int fd, const char *path, int64_t at, size_t want, fy_buf *buf,
                        size_t *size) {
  /* One spare byte so an empty file still gets a valid pointer. */
  int rc = fy_buf_reserve(buf, want + 1);
  if (rc)
    return fy_error(rc, "%s: out of memory for %zu bytes", path, want);
  size_t got = 0;
  while (got < want) {
    size_t before;
    ssize_t n =
        read_some(fd, (char *)buf->p + got, want - got, at < 0 ? at : at + (int64_t)got, &before);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return read_error(path, got + before, errno);
    if (n == 0)
      break; /* shrank while reading: decode what is there */
    got += (size_t)n;
  }
  *size = got;
  return FERRY_OK;
}

int fy_read_file(const char *path, uint64_t max_bytes, fy_buf *buf, size_t *size) {
  struct stat st;
  int fd, rc = fy_open_regular(path, &st, &fd); /* a FIFO or device refused at once */
  if (rc)
    return rc;
  if (max_bytes && (uint64_t)st.st_size > max_bytes)
    rc = fy_error(FERRY_ETOO_LARGE, "%s: file is %lld bytes, over the %llu-byte limit", path,
                  (long long)st.st_size, (unsigned long long)max_bytes);
  else if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX / 2)
    rc = fy_error(FERRY_ETOO_LARGE, "%s: file is %lld bytes, too large to read", path,
                  (long long)st.st_size);
  else
    rc = read_regular(fd, path, -1, (size_t)st.st_size, buf, size);
  close(fd);
  return rc;
}

int fy_read_range_check(const char *name, uint64_t off, uint64_t len, uint64_t max_bytes) {
  if (max_bytes && len > max_bytes)
    return fy_error(FERRY_ETOO_LARGE, "%s: member is %llu bytes, over the %llu-byte limit", name,
                    (unsigned long long)len, (unsigned long long)max_bytes);
  if (len > (uint64_t)SIZE_MAX / 2 || off > (uint64_t)INT64_MAX - len)
    return fy_error(FERRY_ECORRUPT, "%s: member size out of range", name);
  return FERRY_OK;
}

int fy_read_range_fd(int fd, const char *name, uint64_t off, uint64_t len, fy_buf *buf,
                     size_t *size) {
  int rc = read_regular(fd, name, (int64_t)off, (size_t)len, buf, size);
  if (rc == FERRY_OK && *size < len)
    rc = fy_error(FERRY_ECORRUPT, "%s: the shard ends after %zu of the member's %llu bytes", name,
                  *size, (unsigned long long)len);
  return rc;
}
