/* nvjpeg_find.c — finds libnvjpeg for gpu.cu (see nvjpeg_find.h). Plain C:
 * the candidate list is built and tested without CUDA or a GPU
 * (test_nvjpeg_find); the dlopen() part is compiled with CUDA only. */
#include "cuda/nvjpeg_find.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fy_nvjpeg_env_path(void) {
  const char *e = getenv("FERRY_NVJPEG_PATH");
  return e && *e ? e : NULL;
}

/* The sonames on the library path, then the wheels' folders and files
 * under site-packages (the parent of ferry's own folder). */
static const char *const sonames[] = {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"};
static const char *const wheel_files[] = {
    "nvidia/cu13/lib/libnvjpeg.so.13",   /* nvidia-nvjpeg (CUDA 13) */
    "nvidia/nvjpeg/lib/libnvjpeg.so.12", /* nvidia-nvjpeg-cu12 */
    "nvidia/cu12/lib/libnvjpeg.so.12",   /* CUDA 12 wheels in the cu12/ layout */
};

static int add(char out[][FY_NVJPEG_PATH_MAX], int n, int max, const char *a, const char *b) {
  if (n >= max)
    return n;
  int len = snprintf(out[n], FY_NVJPEG_PATH_MAX, "%s%s", a, b ? b : "");
  return len > 0 && len < FY_NVJPEG_PATH_MAX ? n + 1 : n;
}

int fy_nvjpeg_candidates(const char *env, const char *self_dir, char out[][FY_NVJPEG_PATH_MAX],
                         int max) {
  int n = 0;
  if (env && *env)
    n = add(out, n, max, env, NULL);
  for (size_t i = 0; i < sizeof sonames / sizeof *sonames; i++)
    n = add(out, n, max, sonames[i], NULL);
  if (!self_dir || !*self_dir)
    return n;
  /* the parent of self_dir: its last component dropped (trailing slashes
   * first); a name without a slash gets "/.." */
  char parent[FY_NVJPEG_PATH_MAX];
  size_t len = strlen(self_dir);
  if (len >= sizeof parent)
    return n;
  memcpy(parent, self_dir, len + 1);
  while (len > 1 && parent[len - 1] == '/')
    parent[--len] = '\0';
  char *slash = strrchr(parent, '/');
  if (!slash) {
    if (len + 4 >= sizeof parent)
      return n;
    memcpy(parent + len, "/..", 4);
  } else {
    slash[slash == parent ? 1 : 0] = '\0'; /* "/x" -> "/" */
  }
  size_t plen = strlen(parent);
  const char *sep = plen && parent[plen - 1] == '/' ? "" : "/";
  for (size_t i = 0; i < sizeof wheel_files / sizeof *wheel_files; i++) {
    char file[FY_NVJPEG_PATH_MAX];
    if (snprintf(file, sizeof file, "%s%s", sep, wheel_files[i]) < (int)sizeof file)
      n = add(out, n, max, parent, file);
  }
  return n;
}

#ifdef FERRY_HAVE_CUDA
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>

/* Appends ", " (unless where is empty) and the formatted text to where,
 * cut at where_len. */
static void append(char *where, size_t where_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *where, size_t where_len, const char *fmt, ...) {
  size_t used = where && where_len ? strlen(where) : 0;
  if (!where || used + 3 >= where_len)
    return;
  if (used)
    memcpy(where + used, ", ", 3), used += 2;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(where + used, where_len - used, fmt, ap);
  va_end(ap);
}

void *fy_nvjpeg_open_from(const char *env, const char *self_dir, char *loaded, size_t loaded_len,
                          char *where, size_t where_len) {
  char cand[FY_NVJPEG_CANDIDATES][FY_NVJPEG_PATH_MAX];
  int n = fy_nvjpeg_candidates(env, self_dir, cand, FY_NVJPEG_CANDIDATES);
  if (where && where_len)
    where[0] = '\0';
  if (loaded && loaded_len)
    loaded[0] = '\0';
  for (int i = 0; i < n; i++) {
    void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      if (loaded && loaded_len)
        snprintf(loaded, loaded_len, "%s", cand[i]);
      return h;
    }
    if (i == 0 && env && *env) { /* the one the user named: say why it did not load */
      const char *why = dlerror();
      append(where, where_len, "FERRY_NVJPEG_PATH=%s (%s)", cand[i], why ? why : "?");
    } else {
      append(where, where_len, "%s", cand[i]);
    }
  }
  return NULL;
}

void *fy_nvjpeg_open(char *loaded, size_t loaded_len, char *where, size_t where_len) {
  /* the file this code was loaded from: libferry.so, the Python extension
   * (which holds libferry statically), or the program itself */
  Dl_info info;
  char real[PATH_MAX], *self_dir = NULL;
  if (dladdr((void *)fy_nvjpeg_open, &info) && info.dli_fname && strchr(info.dli_fname, '/') &&
      realpath(info.dli_fname, real)) {
    char *slash = strrchr(real, '/');
    if (slash) {
      slash[slash == real ? 1 : 0] = '\0';
      self_dir = real;
    }
  }
  return fy_nvjpeg_open_from(fy_nvjpeg_env_path(), self_dir, loaded, loaded_len, where, where_len);
}
#else
void *fy_nvjpeg_open_from(const char *env, const char *self_dir, char *loaded, size_t loaded_len,
                          char *where, size_t where_len) {
  (void)env, (void)self_dir;
  if (loaded && loaded_len)
    loaded[0] = '\0';
  if (where && where_len)
    snprintf(where, where_len, "nowhere: this ferry was built without CUDA");
  return NULL;
}

void *fy_nvjpeg_open(char *loaded, size_t loaded_len, char *where, size_t where_len) {
  return fy_nvjpeg_open_from(NULL, NULL, loaded, loaded_len, where, where_len);
}
#endif
