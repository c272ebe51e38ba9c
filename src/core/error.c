/* error.c — status names and the per-thread last-error message. */
#include "core/internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[4096];

const char *ferry_strerror(int status) {
  switch (status) {
  case FERRY_OK: return "success";
  case FERRY_END: return "end of epoch";
  case FERRY_EINVAL: return "invalid argument";
  case FERRY_EIO: return "input/output error";
  case FERRY_EUNSUPPORTED: return "unsupported format or feature";
  case FERRY_ECORRUPT: return "corrupt or truncated data";
  case FERRY_ETOO_LARGE: return "over a configured limit";
  case FERRY_ENOMEM: return "out of memory";
  case FERRY_EEMPTY: return "no images found";
  case FERRY_ESTATE: return "call not valid in this state";
  case FERRY_EINTERNAL: return "internal error";
  case FERRY_ETIMEOUT: return "stalled past a time-out";
  default: return "unknown status";
  }
}

int fy_error(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

void fy_error_clear(void) { last_error[0] = '\0'; }

const char *ferry_last_error(void) { return last_error; }

const char *ferry_version(void) { return FERRY_VERSION_STRING; }

int fy_pixel_limit_error(const char *name, const char *format, uint64_t width, uint64_t height,
                         uint64_t max_pixels) {
  return fy_error(FERRY_ETOO_LARGE, "%s: %s is %llux%llu (%llu pixels), over the %llu-pixel limit",
                  name, format, (unsigned long long)width, (unsigned long long)height,
                  (unsigned long long)(width * height), (unsigned long long)max_pixels);
}
