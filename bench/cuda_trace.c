/* cuda_trace.c — an LD_PRELOAD library for benchmarks on the GPU machine:
 * counts the CUDA driver's device-memory frees and allocations made through
 * the dynamic linker (libnvcuvid, inside nvJPEG's hardware decoder, calls
 * cuMemFree_v2 directly; a cuMemFree waits for the whole device) and the
 * time spent in them, and prints the totals to stderr at exit.
 *   cc -O2 -shared -fPIC -o cuda_trace.so bench/cuda_trace.c -ldl
 *   LD_PRELOAD=$PWD/cuda_trace.so ferry load ... */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static atomic_ulong calls[4];
static atomic_ullong nanos[4];
static const char *names[4] = {"cuMemFree_v2", "cuMemAlloc_v2", "cuMemFreeHost", "cuMemHostAlloc"};

static unsigned long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void *real(int i) {
  static void *fn[4];
  void *f = __atomic_load_n(&fn[i], __ATOMIC_ACQUIRE);
  if (!f) {
    f = dlsym(RTLD_NEXT, names[i]);
    __atomic_store_n(&fn[i], f, __ATOMIC_RELEASE);
  }
  return f;
}

static void count(int i, unsigned long long t0) {
  atomic_fetch_add(&calls[i], 1);
  atomic_fetch_add(&nanos[i], now_ns() - t0);
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  unsigned long long t0 = now_ns();
  CUresult r = ((CUresult(*)(CUdeviceptr))real(0))(p);
  count(0, t0);
  return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  unsigned long long t0 = now_ns();
  CUresult r = ((CUresult(*)(CUdeviceptr *, size_t))real(1))(p, n);
  count(1, t0);
  return r;
}

CUresult cuMemFreeHost(void *p) {
  unsigned long long t0 = now_ns();
  CUresult r = ((CUresult(*)(void *))real(2))(p);
  count(2, t0);
  return r;
}

CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags) {
  unsigned long long t0 = now_ns();
  CUresult r = ((CUresult(*)(void **, size_t, unsigned int))real(3))(p, n, flags);
  count(3, t0);
  return r;
}

__attribute__((destructor)) static void report(void) {
  fprintf(stderr, "cuda_trace:");
  for (int i = 0; i < 4; i++)
    fprintf(stderr, " %s %lu calls %.3f s;", names[i], atomic_load(&calls[i]),
            atomic_load(&nanos[i]) * 1e-9);
  fprintf(stderr, "\n");
}
