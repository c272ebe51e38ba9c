/* test_nvjpeg_find.c — where libnvjpeg is looked for (src/cuda/nvjpeg_find.c),
 * without a GPU: the candidate list for a folder (FERRY_NVJPEG_PATH first,
 * the sonames on the library path, then the nvidia-nvjpeg wheels' folders
 * beside ferry's in site-packages); and, in a build with CUDA, the loading
 * itself from a made-up site-packages whose "libnvjpeg" is another shared
 * library (dlopen() takes any; nothing here calls into it). */
#include "check.h"
#include "cuda/nvjpeg_find.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char cand[FY_NVJPEG_CANDIDATES][FY_NVJPEG_PATH_MAX];

static int list_is(int n, const char *const *want, int nwant) {
  if (n != nwant) {
    fprintf(stderr, "%d candidates, %d expected:\n", n, nwant);
    for (int i = 0; i < n; i++)
      fprintf(stderr, "  %s\n", cand[i]);
    return 0;
  }
  for (int i = 0; i < n; i++)
    if (strcmp(cand[i], want[i])) {
      fprintf(stderr, "candidate %d: %s, expected %s\n", i, cand[i], want[i]);
      return 0;
    }
  return 1;
}

static void candidates(void) {
  /* the Python extension in site-packages/ferry/ */
  const char *site[] = {"libnvjpeg.so.13",
                        "libnvjpeg.so.12",
                        "libnvjpeg.so",
                        "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnvjpeg.so.13",
                        "/venv/lib/python3.11/site-packages/nvidia/nvjpeg/lib/libnvjpeg.so.12",
                        "/venv/lib/python3.11/site-packages/nvidia/cu12/lib/libnvjpeg.so.12"};
  int n = fy_nvjpeg_candidates(NULL, "/venv/lib/python3.11/site-packages/ferry", cand,
                               FY_NVJPEG_CANDIDATES);
  CHECK(list_is(n, site, 6));
  /* a trailing slash changes nothing; an empty FERRY_NVJPEG_PATH is unset */
  n = fy_nvjpeg_candidates("", "/venv/lib/python3.11/site-packages/ferry/", cand,
                           FY_NVJPEG_CANDIDATES);
  CHECK(list_is(n, site, 6));
  /* FERRY_NVJPEG_PATH first of all */
  const char *env[] = {"/opt/nv/libnvjpeg.so.13",
                       "libnvjpeg.so.13",
                       "libnvjpeg.so.12",
                       "libnvjpeg.so",
                       "/usr/lib/nvidia/cu13/lib/libnvjpeg.so.13",
                       "/usr/lib/nvidia/nvjpeg/lib/libnvjpeg.so.12",
                       "/usr/lib/nvidia/cu12/lib/libnvjpeg.so.12"};
  n = fy_nvjpeg_candidates("/opt/nv/libnvjpeg.so.13", "/usr/lib/x86_64-linux-gnu", cand,
                           FY_NVJPEG_CANDIDATES);
  CHECK(list_is(n, env, 7));
  /* ferry's folder unknown: FERRY_NVJPEG_PATH and the library path only */
  n = fy_nvjpeg_candidates("/x/libnvjpeg.so", NULL, cand, FY_NVJPEG_CANDIDATES);
  const char *alone[] = {"/x/libnvjpeg.so", "libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"};
  CHECK(list_is(n, alone, 4));
  /* a folder at the root, and a relative one */
  const char *root[] = {"libnvjpeg.so.13",
                        "libnvjpeg.so.12",
                        "libnvjpeg.so",
                        "/nvidia/cu13/lib/libnvjpeg.so.13",
                        "/nvidia/nvjpeg/lib/libnvjpeg.so.12",
                        "/nvidia/cu12/lib/libnvjpeg.so.12"};
  CHECK(list_is(fy_nvjpeg_candidates(NULL, "/ferry", cand, FY_NVJPEG_CANDIDATES), root, 6));
  CHECK(list_is(fy_nvjpeg_candidates(NULL, "/", cand, FY_NVJPEG_CANDIDATES), root, 6));
  const char *rel[] = {"libnvjpeg.so.13",
                       "libnvjpeg.so.12",
                       "libnvjpeg.so",
                       "ferry/../nvidia/cu13/lib/libnvjpeg.so.13",
                       "ferry/../nvidia/nvjpeg/lib/libnvjpeg.so.12",
                       "ferry/../nvidia/cu12/lib/libnvjpeg.so.12"};
  CHECK(list_is(fy_nvjpeg_candidates(NULL, "ferry", cand, FY_NVJPEG_CANDIDATES), rel, 6));
  /* max is kept; a path too long is left out, the rest stay */
  CHECK(fy_nvjpeg_candidates("/e.so", "/a/b", cand, 2) == 2 && !strcmp(cand[1], "libnvjpeg.so.13"));
  char longdir[FY_NVJPEG_PATH_MAX];
  memset(longdir, 'd', sizeof longdir - 30);
  longdir[0] = '/';
  strcpy(longdir + sizeof longdir - 30, "/ferry");
  CHECK(fy_nvjpeg_candidates(NULL, longdir, cand, FY_NVJPEG_CANDIDATES) == 3);
}

/* a made-up site-packages: site/ferry (ferry's folder) and
 * site/nvidia/<dir>/lib/<name>, a link to a real shared library */
static int make_lib(const char *site, const char *dir, const char *name, const char *target) {
  char p[4096];
  snprintf(p, sizeof p, "%s/nvidia", site);
  mkdir(p, 0700);
  snprintf(p, sizeof p, "%s/nvidia/%s", site, dir);
  mkdir(p, 0700);
  snprintf(p, sizeof p, "%s/nvidia/%s/lib", site, dir);
  mkdir(p, 0700);
  snprintf(p, sizeof p, "%s/nvidia/%s/lib/%s", site, dir, name);
  return symlink(target, p);
}

static void loading(void) {
  char where[4096], loaded[FY_NVJPEG_PATH_MAX];
  void *h =
      fy_nvjpeg_open_from(NULL, "/nonexistent/ferry", loaded, sizeof loaded, where, sizeof where);
  if (!h && strstr(where, "built without CUDA")) {
    SKIP("loading libnvjpeg: %s", where);
    return;
  }
  if (h) { /* a real libnvjpeg on the library path: the fallbacks are not reached */
    CHECK(strncmp(loaded, "libnvjpeg.so", 12) == 0);
    SKIP("loading from site-packages: %s is on the library path", loaded);
    return;
  }
  /* nothing found: the message lists every place, in order */
  CHECK_MSG(strstr(where, "libnvjpeg.so.13, libnvjpeg.so.12, libnvjpeg.so, "
                          "/nonexistent/nvidia/cu13/lib/libnvjpeg.so.13, "
                          "/nonexistent/nvidia/nvjpeg/lib/libnvjpeg.so.12, "
                          "/nonexistent/nvidia/cu12/lib/libnvjpeg.so.12") == where,
            "%s", where);
  /* a real shared library to stand in for libnvjpeg: zlib's, which the
   * tests link */
  Dl_info info;
  if (!dladdr((void *)crc32, &info) || !info.dli_fname || info.dli_fname[0] != '/') {
    SKIP("loading from site-packages: zlib's file not found by dladdr");
    return;
  }
  char site[] = "/tmp/ferry-nvjpeg-find-XXXXXX", self[4096], p[4096];
  if (!mkdtemp(site)) {
    SKIP("mkdtemp: %s", strerror(errno));
    return;
  }
  snprintf(self, sizeof self, "%s/ferry", site);
  mkdir(self, 0700);
  /* the older cu12 layout alone: found there */
  CHECK(make_lib(site, "nvjpeg", "libnvjpeg.so.12", info.dli_fname) == 0);
  h = fy_nvjpeg_open_from(NULL, self, loaded, sizeof loaded, where, sizeof where);
  snprintf(p, sizeof p, "%s/nvidia/nvjpeg/lib/libnvjpeg.so.12", site);
  CHECK_MSG(h && !strcmp(loaded, p), "%s", h ? loaded : where);
  if (h)
    dlclose(h);
  /* with the CUDA 13 wheel too: that one comes first */
  CHECK(make_lib(site, "cu13", "libnvjpeg.so.13", info.dli_fname) == 0);
  h = fy_nvjpeg_open_from(NULL, self, loaded, sizeof loaded, where, sizeof where);
  snprintf(p, sizeof p, "%s/nvidia/cu13/lib/libnvjpeg.so.13", site);
  CHECK_MSG(h && !strcmp(loaded, p), "%s", h ? loaded : where);
  if (h)
    dlclose(h);
  /* FERRY_NVJPEG_PATH before everything; one that does not load is named
   * with the reason and the search goes on */
  char env[4096];
  snprintf(env, sizeof env, "%s/nvidia/nvjpeg/lib/libnvjpeg.so.12", site);
  h = fy_nvjpeg_open_from(env, self, loaded, sizeof loaded, where, sizeof where);
  CHECK_MSG(h && !strcmp(loaded, env), "%s", h ? loaded : where);
  if (h)
    dlclose(h);
  snprintf(env, sizeof env, "%s/missing.so", site);
  h = fy_nvjpeg_open_from(env, "/nonexistent/ferry", loaded, sizeof loaded, where, sizeof where);
  CHECK(!h);
  CHECK_MSG(!strncmp(where, "FERRY_NVJPEG_PATH=", 18) && strstr(where, "missing.so (") &&
                strstr(where, ", libnvjpeg.so.13, "),
            "%s", where);
  if (h)
    dlclose(h);
  /* the loader's own entry: the library path, then beside this program */
  h = fy_nvjpeg_open(loaded, sizeof loaded, where, sizeof where);
  CHECK(h || strstr(where, "libnvjpeg.so.13") == where || !strncmp(where, "FERRY_NVJPEG_PATH", 17));
  if (h)
    dlclose(h);
  snprintf(p, sizeof p, "rm -rf '%s'", site);
  CHECK(system(p) == 0);
}

int main(void) {
  candidates();
  loading();
  return check_done();
}
