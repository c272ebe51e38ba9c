/* sys.c — clock, core count and whole-file reads. */
#include "core/internal.h"

#include <errno.h>
#include <fcntl.h>
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

int fy_read_file(const char *path, uint64_t max_bytes, fy_buf *buf, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fy_error(FERRY_EIO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return fy_error(FERRY_EIO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return fy_error(FERRY_EIO, "%s: not a regular file", path);
  }
  if (max_bytes && (uint64_t)st.st_size > max_bytes) {
    close(fd);
    return fy_error(FERRY_ETOO_LARGE, "%s: file is %lld bytes, over the %llu-byte limit", path,
                    (long long)st.st_size, (unsigned long long)max_bytes);
  }
  size_t want = (size_t)st.st_size;
  /* One spare byte so an empty file still gets a valid pointer. */
  int rc = fy_buf_reserve(buf, want + 1);
  if (rc) {
    close(fd);
    return fy_error(rc, "%s: out of memory for %zu bytes", path, want);
  }
  size_t got = 0;
  while (got < want) {
    ssize_t n = read(fd, (char *)buf->p + got, want - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      return fy_error(FERRY_EIO, "%s: read failed: %s", path, strerror(e));
    }
    if (n == 0)
      break; /* shrank while reading: decode what is there */
    got += (size_t)n;
  }
  close(fd);
  *size = got;
  return FERRY_OK;
}
