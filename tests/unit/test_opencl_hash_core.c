/* test_opencl_hash_core.c — the hash arithmetic the CPU and CUDA share
 * (src/hash/fp_core.h, dct_core.h, haar_core.h), compiled as OpenCL C
 * from the very same headers (src/opencl/hash_core.cl follows them in one
 * program), gives the CPU's doubles bit for bit: scipy's DCT-II of 8, 32
 * and 64 points (pHash's sizes) over pixel-like and awkward values, and
 * the Haar and median steps of wHash. The first step of the OpenCL hash
 * kernels (issue 22). SKIPPED, with the reason, without an OpenCL device
 * or without cl_khr_fp64 there. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "hash/haar_core.h"
#include "hash/hash.h"
#include "opencl/opencl.h"

#include <ferry.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0xD1B54A32D192ED03ull;
static uint64_t next64(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* pixel-like values (0..255, what pHash transforms), then arbitrary
 * doubles of mixed magnitude (rounding differences show there first) */
static double value(size_t i) {
  if (i % 3 == 0)
    return (double)(next64() % 256);
  double m = (double)(next64() >> 11) / 9007199254740992.0; /* [0, 1) */
  int e = (int)(next64() % 40) - 20;
  return (next64() & 1 ? -1 : 1) * ldexp(m, e);
}

static size_t differ(const double *a, const double *b, size_t n) {
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof a[i]))
      d++;
  return d;
}

static void dct(fy_cl_ctx *c, cl_program prog, int n) {
  const fy_cl_api *cl = c->cl;
  enum { ROWS = 300 };
  fy_dct_plan plan;
  CHECK(fy_dct_plan_init(&plan, n) == FERRY_OK);
  double *cpu = malloc(ROWS * (size_t)n * sizeof *cpu),
         *gpu = malloc(ROWS * (size_t)n * sizeof *gpu);
  for (size_t i = 0; i < ROWS * (size_t)n; i++)
    cpu[i] = gpu[i] = value(i);
  for (int r = 0; r < ROWS; r++)
    fy_dct2(&plan, cpu + (size_t)r * n);
  cl_int st = CL_SUCCESS;
  cl_mem mp =
      cl->CreateBuffer(c->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof plan, &plan, &st);
  cl_mem mr = cl->CreateBuffer(c->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                               ROWS * (size_t)n * sizeof *gpu, gpu, &st);
  cl_kernel k = cl->CreateKernel(prog, "fy_dct_rows", &st);
  CHECK(mp && mr && k);
  cl_uint count = ROWS;
  st = cl->SetKernelArg(k, 0, sizeof mp, &mp);
  st |= cl->SetKernelArg(k, 1, sizeof mr, &mr);
  st |= cl->SetKernelArg(k, 2, sizeof count, &count);
  size_t global = ROWS;
  st |= cl->EnqueueNDRangeKernel(c->q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
  st |= cl->EnqueueReadBuffer(c->q, mr, CL_TRUE, 0, ROWS * (size_t)n * sizeof *gpu, gpu, 0, NULL,
                              NULL);
  CHECK_MSG(st == CL_SUCCESS, "DCT %d: %s", n, fy_cl_status(st));
  size_t d = differ(cpu, gpu, ROWS * (size_t)n);
  CHECK_MSG(d == 0, "DCT-II of %d points: %zu of %zu doubles differ from the CPU's", n, d,
            ROWS * (size_t)n);
  if (k)
    cl->ReleaseKernel(k);
  if (mp)
    cl->ReleaseMemObject(mp);
  if (mr)
    cl->ReleaseMemObject(mr);
  free(cpu);
  free(gpu);
}

static void haar(fy_cl_ctx *c, cl_program prog) {
  const fy_cl_api *cl = c->cl;
  enum { N = 5000 };
  double *x = malloc(2 * N * sizeof *x), *cpu = malloc(5 * N * sizeof *cpu),
         *gpu = malloc(5 * N * sizeof *gpu);
  for (size_t i = 0; i < 2 * N; i++)
    x[i] = value(i);
  for (size_t i = 0; i < N; i++) {
    double a = x[2 * i], b = x[2 * i + 1];
    cpu[5 * i] = fy_haar_lo(a, b);
    cpu[5 * i + 1] = fy_haar_hi(a, b);
    cpu[5 * i + 2] = fy_haar_even(a, b);
    cpu[5 * i + 3] = fy_haar_odd(a, b);
    cpu[5 * i + 4] = fy_median_mid(a, b);
  }
  cl_int st = CL_SUCCESS;
  cl_mem mx =
      cl->CreateBuffer(c->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 2 * N * sizeof *x, x, &st);
  cl_mem mo = cl->CreateBuffer(c->ctx, CL_MEM_WRITE_ONLY, 5 * N * sizeof *gpu, NULL, &st);
  cl_kernel k = cl->CreateKernel(prog, "fy_haar_steps", &st);
  CHECK(mx && mo && k);
  cl_uint count = N;
  st = cl->SetKernelArg(k, 0, sizeof mx, &mx);
  st |= cl->SetKernelArg(k, 1, sizeof mo, &mo);
  st |= cl->SetKernelArg(k, 2, sizeof count, &count);
  size_t global = N;
  st |= cl->EnqueueNDRangeKernel(c->q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
  st |= cl->EnqueueReadBuffer(c->q, mo, CL_TRUE, 0, 5 * N * sizeof *gpu, gpu, 0, NULL, NULL);
  CHECK_MSG(st == CL_SUCCESS, "Haar: %s", fy_cl_status(st));
  size_t d = differ(cpu, gpu, 5 * N);
  CHECK_MSG(d == 0, "Haar steps: %zu of %d doubles differ from the CPU's", d, 5 * N);
  if (k)
    cl->ReleaseKernel(k);
  if (mx)
    cl->ReleaseMemObject(mx);
  if (mo)
    cl->ReleaseMemObject(mo);
  free(x);
  free(cpu);
  free(gpu);
}

int main(void) {
  fy_cl_device_info *devs = NULL;
  int count = 0, platforms = 0;
  int rc = fy_cl_devices(&devs, &count, &platforms);
  free(devs);
  if (rc || count == 0) {
    SKIP("no OpenCL platform (%s)", rc ? ferry_last_error() : "no device on any platform");
    return check_done();
  }
  int dev = 0;
  const char *env = getenv("FERRY_TEST_OPENCL_DEVICE");
  if (env)
    dev = atoi(env);
  fy_cl_ctx c;
  rc = fy_cl_open(dev, &c);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  if (rc)
    return check_done();
  printf("opencl:%d: %s (%s)\n", dev, c.info.name, c.info.version);
  char *src = fy_cl_hash_source();
  CHECK(src != NULL);
  /* the program holds the shared headers themselves, not a copy */
  CHECK(src && strstr(src, "static inline FY_HD void fy_radb4(") != NULL);
  cl_program prog = NULL;
  rc = src ? fy_cl_build(&c, src, NULL, &prog) : FERRY_ENOMEM;
  free(src);
  if (rc && strstr(ferry_last_error(), "fp64")) {
    SKIP("opencl:%d has no doubles (cl_khr_fp64): %s", dev, ferry_last_error());
  } else {
    CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
    if (!rc) {
      dct(&c, prog, 8);
      dct(&c, prog, 32);
      dct(&c, prog, 64);
      haar(&c, prog);
      c.cl->ReleaseProgram(prog);
    }
  }
  /* a program that does not compile: the device's build log in the message */
  cl_program bad = NULL;
  rc = fy_cl_build(&c, "__kernel void k(__global int *x) { x[0] = undeclared_name; }", NULL, &bad);
  CHECK(rc == FERRY_EIO && bad == NULL);
  CHECK_MSG(strstr(ferry_last_error(), "build log") &&
                strstr(ferry_last_error(), "undeclared_name"),
            "%s", ferry_last_error());
  fy_cl_close(&c);
  return check_done();
}
