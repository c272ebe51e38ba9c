/* cl_sources.c — the OpenCL C sources (src/opencl/NAME.cl), embedded at build
 * time, and the hash headers the CPU and CUDA share (src/hash/fp_core.h,
 * dct_core.h, haar_core.h) and the GPU hash jobs' layout (hash_jobs.h): CMakeLists.txt (and
 * setup.py for the Python extension) write each file's bytes as FY_CL_<NAME>_BYTES into the
 * generated header opencl_src.h, so that the .cl files stay real OpenCL C files. */
#include "opencl/opencl.h"
#include "opencl_src.h"

#include <stdlib.h>
#include <string.h>

const char fy_cl_hamming_src[] = {FY_CL_HAMMING_BYTES, 0};

/* the arithmetic the CPU and CUDA share (src/hash), as it is */
static const char fp_core[] = {FY_CL_FP_CORE_BYTES, 0};
static const char dct_core[] = {FY_CL_DCT_CORE_BYTES, 0};
static const char haar_core[] = {FY_CL_HAAR_CORE_BYTES, 0};
static const char hash_jobs[] = {FY_CL_HASH_JOBS_BYTES, 0};
static const char hash_core[] = {FY_CL_HASH_CORE_BYTES, 0};
static const char hash_kernels[] = {FY_CL_HASH_BYTES, 0};

char *fy_cl_hash_source(void) {
  const char *parts[] = {fp_core, dct_core, haar_core, hash_jobs, hash_core, hash_kernels};
  size_t len = 1;
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    len += strlen(parts[i]) + 1;
  char *src = malloc(len), *at = src;
  if (!src)
    return NULL;
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
    size_t n = strlen(parts[i]);
    memcpy(at, parts[i], n);
    at += n;
    *at++ = '\n';
  }
  *at = 0;
  return src;
}
