/* nvjpeg_find.h — where libnvjpeg is looked for (nvjpeg_find.c), for
 * gpu.cu, which loads it at run time: $FERRY_NVJPEG_PATH first, then the
 * library path, then NVIDIA's pip wheels installed beside ferry's own
 * (site-packages/nvidia/...), which no library path names. */
#ifndef FY_NVJPEG_FIND_H
#define FY_NVJPEG_FIND_H

#include <stddef.h>

#define FY_NVJPEG_CANDIDATES 8  /* at most this many files are tried */
#define FY_NVJPEG_PATH_MAX 4096 /* one candidate's length, with its NUL */

/* The files tried for libnvjpeg, in order, into out[0..max): `env`
 * (FERRY_NVJPEG_PATH: a full path; NULL or "" when unset); the sonames
 * libnvjpeg.so.13, .so.12 and .so, which dlopen() looks for on the library
 * path; then, when `self_dir` is known (the folder of the file ferry's code
 * was loaded from: libferry.so, or the Python extension in
 * site-packages/ferry/; NULL when unknown), its parent's
 * nvidia/cu13/lib/libnvjpeg.so.13, nvidia/nvjpeg/lib/libnvjpeg.so.12 and
 * nvidia/cu12/lib/libnvjpeg.so.12: the layouts of the nvidia-nvjpeg wheels
 * (CUDA 13, and the older CUDA 12 ones) in the same site-packages. Paths
 * too long are left out. Returns how many were written. Pure: no file is
 * looked at (tests/unit/test_nvjpeg_find.c). */
int fy_nvjpeg_candidates(const char *env, const char *self_dir, char out[][FY_NVJPEG_PATH_MAX],
                         int max);

/* dlopen()s the first candidate that loads (RTLD_NOW | RTLD_LOCAL) and
 * returns its handle; `loaded` gets that candidate. NULL when none does:
 * `where` gets the candidates tried, ", " between them (a failed
 * FERRY_NVJPEG_PATH with dlerror()'s reason), for messages. `loaded` and
 * `where` may be NULL. Without CUDA in the build: NULL, `where` says so. */
void *fy_nvjpeg_open_from(const char *env, const char *self_dir, char *loaded, size_t loaded_len,
                          char *where, size_t where_len);

/* FERRY_NVJPEG_PATH, a deployment path (the one place it is read): NULL
 * when unset or empty. */
const char *fy_nvjpeg_env_path(void);

/* fy_nvjpeg_open_from with fy_nvjpeg_env_path() and the folder of the
 * file this code is in (dladdr()). */
void *fy_nvjpeg_open(char *loaded, size_t loaded_len, char *where, size_t where_len);

#endif
