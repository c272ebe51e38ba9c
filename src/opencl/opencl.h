/* opencl.h — ferry's OpenCL backend, seen from the rest of the library
 * (src/search/, tools/cmd_doctor.c, tests).
 *
 * The OpenCL ICD loader is opened at run time (dlopen of libOpenCL.so.1,
 * then libOpenCL.so) and the entry points looked up by name: ferry links
 * nothing of OpenCL and needs no OpenCL headers to build (cl_api.h declares
 * what it uses). A machine without the loader or without a driver (an ICD)
 * gets FERRY_EUNSUPPORTED with the reason.
 *
 * Devices are numbered globally: every platform in the order the loader
 * lists them, every device of each platform in its order; `--device
 * opencl:N` and FERRY_DEVICE_OPENCL + N (include/ferry.h) name device N. */
#ifndef FY_OPENCL_H
#define FY_OPENCL_H

#include "core/internal.h"
#include "opencl/cl_api.h"

/* The loaded API, or NULL with the reason (FERRY_EUNSUPPORTED) in ferry's
 * error. Loaded once per process; thread-safe. */
const fy_cl_api *fy_cl_load(void);

typedef struct fy_cl_device_info {
  int index;    /* the global index (opencl:N) */
  int platform; /* the platform's index */
  char platform_name[128];
  char platform_version[96];
  char name[128];
  char vendor[96];
  char version[96]; /* "OpenCL 3.0 PoCL ..." */
  char driver[64];
  int gpu, cpu;  /* CL_DEVICE_TYPE bits */
  int fp64;      /* double precision (cl_khr_fp64): the hash kernels need it */
  int units;     /* compute units */
  size_t max_wg; /* largest work-group */
  uint64_t memory, max_alloc, local_mem;
} fy_cl_device_info;

/* Every OpenCL device into *out (free()), *count of them; *platforms the
 * number of platforms. FERRY_EUNSUPPORTED with the reason when there is no
 * loader or no platform (*out NULL, counts 0). */
int fy_cl_devices(fy_cl_device_info **out, int *count, int *platforms);
/* FERRY_DEVICE_OPENCL_ANY's device: the first GPU of any platform, else
 * device 0 (a CPU driver such as PoCL is often listed first). */
#define FY_CL_DEVICE_ANY 0xFFFF
int fy_cl_default_device(void);

/* 1 when NVIDIA's OpenCL driver (libnvidia-opencl.so.1) is installed but
 * the ICD loader lists no NVIDIA platform: no /etc/OpenCL/vendors/nvidia.icd
 * (container images often lack it). *path gets the library's path, for
 * OCL_ICD_FILENAMES. `ferry doctor` says so. */
int fy_cl_nvidia_unlisted(char *path, size_t n);
/* FERRY_OPENCL_LIBRARY, a deployment path (the one place it is read): the
 * OpenCL ICD loader to dlopen() instead of libOpenCL.so.1; NULL when unset
 * or empty. */
const char *fy_cl_env_library(void);

/* A context and an in-order queue on one device. */
typedef struct fy_cl_ctx {
  const fy_cl_api *cl;
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  fy_cl_device_info info;
} fy_cl_ctx;

/* Opens device `device` (global index). FERRY_EUNSUPPORTED when there is no
 * OpenCL or no such device ("OpenCL device 3 does not exist (2 found: ...)"),
 * FERRY_EIO when the driver fails. */
int fy_cl_open(int device, fy_cl_ctx *c);
void fy_cl_close(fy_cl_ctx *c);

/* Builds `source` with `options` for c's device; on a compile failure
 * FERRY_EIO with the device's build log in the message. */
int fy_cl_build(fy_cl_ctx *c, const char *source, const char *options, cl_program *out);

/* Text of an OpenCL status code ("CL_OUT_OF_RESOURCES", "error -9999"). */
const char *fy_cl_status(cl_int status);

/* FERRY_EIO (FERRY_ENOMEM for the allocation failures) with
 * "<what> on OpenCL device N (name): CL_..." as the message. */
int fy_cl_fail(const fy_cl_ctx *c, const char *what, cl_int status);

/* Kernel sources embedded at build time (opencl_src.c, from the .cl files
 * in src/opencl/). */
extern const char fy_cl_hamming_src[];
/* The source of the hash programs: src/hash/fp_core.h, dct_core.h,
 * haar_core.h, hash_jobs.h (the arithmetic and the job layout the CPU and
 * CUDA share, as they are), hash_core.cl and hash.cl, in that order
 * (free(); NULL when out of memory). */
char *fy_cl_hash_source(void);

/* ------------------------------------------------------------- hashing */

/* Compatible-mode aHash, dHash, vertical dHash, pHash and wHash of decoded
 * images on one OpenCL device (hash_cl.c, kernels hash.cl): what
 * fy_gpu_hasher (cuda/hash_gpu.h) does on CUDA, bit for bit the CPU's. Not
 * thread-safe: one thread drives a hasher. */
typedef struct fy_cl_hasher fy_cl_hasher;
struct fy_gpu_hash_image;

/* device: a global index, or FY_CL_DEVICE_ANY. FERRY_EUNSUPPORTED when
 * there is no OpenCL, no such device, or the device lacks what the kernels
 * need (work-groups of 64, about 40 KB of local memory). */
int fy_cl_hasher_new(int device, fy_cl_hasher **out);
void fy_cl_hasher_free(fy_cl_hasher *h);
/* Hashes n images in host memory (kinds & FY_GPU_HASH_KINDS, hash size 8
 * or 16): out[i] as fy_gpu_hasher_run_host gives it. */
int fy_cl_hasher_run(fy_cl_hasher *h, const struct fy_gpu_hash_image *images, int n, unsigned kinds,
                     int hash_size, ferry_hash_result *out);
/* The same for images inside one host block [base, base + bytes),
 * uploaded as it is (the batching queue's way, cuda/hash_queue.c). */
int fy_cl_hasher_run_packed(fy_cl_hasher *h, const void *base, size_t bytes,
                            const struct fy_gpu_hash_image *images, int n, unsigned kinds,
                            int hash_size, ferry_hash_result *out);

/* ---------------------------------------------------- Hamming search */

/* Every pair (i < j) of the n codes (words = 1 or 4) within distance t on
 * OpenCL device `device`, sorted by (i, j) exactly as ferry_hamming_pairs
 * returns them. buffer_pairs bounds the device output buffer (0: default,
 * 4M pairs); a chunk that finds more is re-run in halves, so no pair is
 * lost. max_pairs != 0 fails with FERRY_ETOO_LARGE past that many pairs.
 * reruns (may be NULL) counts the chunks re-run. */
int fy_cl_hamming_pairs(int device, const uint64_t *codes, size_t n, int words, int t,
                        size_t max_pairs, size_t buffer_pairs, ferry_pair **pairs, size_t *count,
                        size_t *reruns);
/* The same, each chunk's pairs handed to sink as found (in no order). */
int fy_cl_hamming_pairs_each(int device, const uint64_t *codes, size_t n, int words, int t,
                             size_t buffer_pairs,
                             void (*sink)(const ferry_pair *pairs, size_t n, void *user),
                             void *user);
/* The k nearest other codes of every code (k = 1..32, else
 * FERRY_EUNSUPPORTED), as ferry_hamming_topk returns them. */
int fy_cl_hamming_topk(int device, const uint64_t *codes, size_t n, int words, int k,
                       ferry_neighbor *out);

#endif
