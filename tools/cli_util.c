/* cli_util.c — option value parsing shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ferry %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see `ferry %s --help`)\n", cmd);
  return CLI_USAGE;
}

int cli_refuse_overwrite(const char *cmd, const char *out, const char *in) {
  if (fy_out_guard(out, in) != FERRY_OK) /* the one rule: core/user_file.c */
    return cli_usage_error(cmd, "%s", ferry_last_error());
  return CLI_OK;
}

int cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi) {
    cli_usage_error(cmd, "%s needs an integer in %ld..%ld, got '%s'", opt, lo, hi, s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

int cli_device(const char *cmd, const char *s, int *device) {
  if (!strcmp(s, "cpu")) {
    *device = -1;
    return 0;
  }
  if (!strncmp(s, "cuda", 4) && (s[4] == '\0' || s[4] == ':')) {
    *device = 0;
    return s[4] ? cli_int(cmd, "--device cuda:N", s + 5, 0, 255, device) : 0;
  }
  if (!strncmp(s, "opencl", 6) && (s[6] == '\0' || s[6] == ':')) {
    int n = 0;
    if (s[6] && cli_int(cmd, "--device opencl:N", s + 7, 0, 65534, &n))
      return -1;
    *device = s[6] ? FERRY_DEVICE_OPENCL + n : FERRY_DEVICE_OPENCL_ANY;
    return 0;
  }
  cli_usage_error(cmd, "--device must be cpu, cuda[:N] or opencl[:N], not '%s'", s);
  return -1;
}

int cli_float(const char *cmd, const char *opt, const char *s, double lo, double hi, float *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !(v >= lo && v <= hi)) {
    cli_usage_error(cmd, "%s needs a number in %g..%g, got '%s'", opt, lo, hi, s);
    return -1;
  }
  *out = (float)v;
  return 0;
}

int cli_size(const char *cmd, const char *s, int *w, int *h) {
  char *end;
  long a = strtol(s, &end, 10), b = a;
  if (*end == 'x' || *end == 'X')
    b = strtol(end + 1, &end, 10);
  if (!*s || *end || a < 1 || b < 1 || a > 16384 || b > 16384) {
    cli_usage_error(cmd, "--size needs N or WxH (1..16384), got '%s'", s);
    return -1;
  }
  *w = (int)a;
  *h = (int)b;
  return 0;
}

#define PICK(name, val)                                                                            \
  if (!strcasecmp(s, name)) {                                                                      \
    *out = val;                                                                                    \
    return 0;                                                                                      \
  }

int cli_dtype(const char *cmd, const char *s, ferry_dtype *out) {
  PICK("u8", FERRY_U8)
  PICK("uint8", FERRY_U8)
  PICK("f16", FERRY_F16)
  PICK("float16", FERRY_F16)
  PICK("f32", FERRY_F32)
  PICK("float32", FERRY_F32) cli_usage_error(cmd, "--dtype must be u8, f16 or f32, not '%s'", s);
  return -1;
}

int cli_layout(const char *cmd, const char *s, ferry_layout *out) {
  PICK("chw", FERRY_LAYOUT_CHW)
  PICK("nchw", FERRY_LAYOUT_CHW)
  PICK("hwc", FERRY_LAYOUT_HWC)
  PICK("nhwc", FERRY_LAYOUT_HWC) cli_usage_error(cmd, "--layout must be chw or hwc, not '%s'", s);
  return -1;
}

int cli_crop(const char *cmd, const char *s, ferry_crop *out) {
  PICK("center", FERRY_CROP_CENTER)
  PICK("centre", FERRY_CROP_CENTER)
  PICK("random", FERRY_CROP_RANDOM)
  PICK("none", FERRY_CROP_NONE)
  cli_usage_error(cmd, "--crop must be center, random or none, not '%s'", s);
  return -1;
}

int cli_filter(const char *cmd, const char *s, ferry_filter *out) {
  PICK("bilinear", FERRY_FILTER_BILINEAR)
  PICK("triangle", FERRY_FILTER_TRIANGLE)
  PICK("area", FERRY_FILTER_AREA)
  PICK("box", FERRY_FILTER_AREA)
  PICK("bicubic", FERRY_FILTER_BICUBIC)
  PICK("lanczos", FERRY_FILTER_LANCZOS)
  PICK("nearest", FERRY_FILTER_NEAREST)
  cli_usage_error(cmd,
                  "--filter must be bilinear, triangle, area, bicubic, lanczos or "
                  "nearest, not '%s'",
                  s);
  return -1;
}

int cli_floats3(const char *cmd, const char *opt, const char *s, float out[3]) {
  char *end;
  const char *p = s;
  for (int i = 0; i < 3; i++) {
    errno = 0;
    out[i] = strtof(p, &end);
    if (end == p || errno || (i < 2 && *end != ',') || (i == 2 && *end)) {
      cli_usage_error(cmd, "%s needs three comma-separated numbers, got '%s'", opt, s);
      return -1;
    }
    p = end + 1;
  }
  return 0;
}

double cli_peak_rss_mib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}
