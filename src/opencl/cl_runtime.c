/* cl_runtime.c — the OpenCL ICD loader opened at run time, device
 * enumeration, contexts and program builds (see opencl.h). */
#include "opencl/opencl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static fy_cl_api api;
static int api_ok;
static char api_why[512];

#define FY_CL_SYM(field, sym)                                                                      \
  { offsetof(fy_cl_api, field), sym }
static const struct {
  size_t off;
  const char *name;
} syms[] = {
    FY_CL_SYM(GetPlatformIDs, "clGetPlatformIDs"),
    FY_CL_SYM(GetPlatformInfo, "clGetPlatformInfo"),
    FY_CL_SYM(GetDeviceIDs, "clGetDeviceIDs"),
    FY_CL_SYM(GetDeviceInfo, "clGetDeviceInfo"),
    FY_CL_SYM(CreateContext, "clCreateContext"),
    FY_CL_SYM(RetainContext, "clRetainContext"),
    FY_CL_SYM(ReleaseContext, "clReleaseContext"),
    FY_CL_SYM(CreateCommandQueue, "clCreateCommandQueue"),
    FY_CL_SYM(ReleaseCommandQueue, "clReleaseCommandQueue"),
    FY_CL_SYM(CreateProgramWithSource, "clCreateProgramWithSource"),
    FY_CL_SYM(BuildProgram, "clBuildProgram"),
    FY_CL_SYM(GetProgramBuildInfo, "clGetProgramBuildInfo"),
    FY_CL_SYM(RetainProgram, "clRetainProgram"),
    FY_CL_SYM(ReleaseProgram, "clReleaseProgram"),
    FY_CL_SYM(CreateKernel, "clCreateKernel"),
    FY_CL_SYM(ReleaseKernel, "clReleaseKernel"),
    FY_CL_SYM(SetKernelArg, "clSetKernelArg"),
    FY_CL_SYM(CreateBuffer, "clCreateBuffer"),
    FY_CL_SYM(ReleaseMemObject, "clReleaseMemObject"),
    FY_CL_SYM(EnqueueWriteBuffer, "clEnqueueWriteBuffer"),
    FY_CL_SYM(EnqueueReadBuffer, "clEnqueueReadBuffer"),
    FY_CL_SYM(EnqueueNDRangeKernel, "clEnqueueNDRangeKernel"),
    FY_CL_SYM(Finish, "clFinish"),
};

const char *fy_cl_env_library(void) {
  const char *e = getenv("FERRY_OPENCL_LIBRARY");
  return e && *e ? e : NULL;
}

static void load(void) {
  /* FERRY_OPENCL_LIBRARY names another loader (tests: a missing one) */
  const char *forced = fy_cl_env_library();
  const char *names[] = {"libOpenCL.so.1", "libOpenCL.so"};
  void *h = NULL;
  const char *err = NULL;
  if (forced) {
    h = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      err = dlerror();
  } else {
    for (size_t i = 0; i < sizeof names / sizeof *names && !h; i++) {
      h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
      if (!h && !err)
        err = dlerror();
    }
  }
  if (!h) {
    snprintf(api_why, sizeof api_why,
             "no OpenCL library (%s): install an OpenCL driver, e.g. pocl-opencl-icd (%s)",
             forced ? forced : "libOpenCL.so.1", err ? err : "not found");
    return;
  }
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
    void *f = dlsym(h, syms[i].name);
    if (!f) {
      snprintf(api_why, sizeof api_why, "the OpenCL library has no %s (OpenCL 1.2 is needed)",
               syms[i].name);
      dlclose(h);
      return;
    }
    memcpy((char *)&api + syms[i].off, &f, sizeof f);
  }
  api_ok = 1; /* the library stays loaded for the process's life */
}

const fy_cl_api *fy_cl_load(void) {
  pthread_once(&load_once, load);
  if (!api_ok) {
    fy_error(FERRY_EUNSUPPORTED, "%s", api_why);
    return NULL;
  }
  return &api;
}

const char *fy_cl_status(cl_int s) {
  static _Thread_local char other[32];
  switch (s) {
  case CL_SUCCESS: return "CL_SUCCESS";
  case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
  case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
  case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
  case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
  case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
  case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
  case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
  case CL_PLATFORM_NOT_FOUND_KHR: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver installed)";
  default: snprintf(other, sizeof other, "OpenCL error %d", (int)s); return other;
  }
}

int fy_cl_fail(const fy_cl_ctx *c, const char *what, cl_int s) {
  int code = s == CL_MEM_OBJECT_ALLOCATION_FAILURE || s == CL_OUT_OF_HOST_MEMORY ? FERRY_ENOMEM
                                                                                 : FERRY_EIO;
  return fy_error(code, "%s on OpenCL device %d (%s): %s", what, c->info.index, c->info.name,
                  fy_cl_status(s));
}

static void info_str(const fy_cl_api *cl, cl_device_id d, cl_device_info what, char *out,
                     size_t size) {
  out[0] = 0;
  if (cl->GetDeviceInfo(d, what, size - 1, out, NULL) != CL_SUCCESS)
    snprintf(out, size, "?");
  out[size - 1] = 0;
}

static void describe(const fy_cl_api *cl, cl_platform_id p, cl_device_id d, fy_cl_device_info *o) {
  info_str(cl, d, CL_DEVICE_NAME, o->name, sizeof o->name);
  info_str(cl, d, CL_DEVICE_VENDOR, o->vendor, sizeof o->vendor);
  info_str(cl, d, CL_DEVICE_VERSION, o->version, sizeof o->version);
  info_str(cl, d, CL_DRIVER_VERSION, o->driver, sizeof o->driver);
  if (cl->GetPlatformInfo(p, CL_PLATFORM_NAME, sizeof o->platform_name - 1, o->platform_name,
                          NULL) != CL_SUCCESS)
    snprintf(o->platform_name, sizeof o->platform_name, "?");
  if (cl->GetPlatformInfo(p, CL_PLATFORM_VERSION, sizeof o->platform_version - 1,
                          o->platform_version, NULL) != CL_SUCCESS)
    snprintf(o->platform_version, sizeof o->platform_version, "?");
  o->platform_name[sizeof o->platform_name - 1] = 0;
  o->platform_version[sizeof o->platform_version - 1] = 0;
  cl_device_type type = 0;
  cl_uint units = 0;
  size_t wg = 0;
  cl_ulong mem = 0, alloc = 0, local = 0;
  cl->GetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  cl->GetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
  cl->GetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  cl->GetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
  cl->GetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof alloc, &alloc, NULL);
  cl->GetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
  cl_ulong fp64 = 0; /* a cl_device_fp_config: 0 without double precision */
  if (cl->GetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL) != CL_SUCCESS)
    fp64 = 0;
  o->fp64 = fp64 != 0;
  o->gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  o->cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  o->units = (int)units;
  o->max_wg = wg;
  o->memory = mem;
  o->max_alloc = alloc;
  o->local_mem = local;
}

/* Walks every device; stops at global index `want` (>= 0) with its ids. */
static int walk(const fy_cl_api *cl, int want, fy_cl_device_info **list, int *count, int *nplat,
                cl_platform_id *pid, cl_device_id *did) {
  cl_uint np = 0;
  cl_int s = cl->GetPlatformIDs(0, NULL, &np);
  *count = 0;
  *nplat = 0;
  if (s == CL_PLATFORM_NOT_FOUND_KHR || (s == CL_SUCCESS && np == 0))
    return fy_error(FERRY_EUNSUPPORTED,
                    "no OpenCL platform: the OpenCL library is there but no driver (ICD) is "
                    "installed, e.g. pocl-opencl-icd, or NVIDIA's driver");
  if (s != CL_SUCCESS)
    return fy_error(FERRY_EIO, "OpenCL: listing the platforms failed: %s", fy_cl_status(s));
  cl_platform_id *plats = calloc(np, sizeof *plats);
  if (!plats)
    return fy_error(FERRY_ENOMEM, "OpenCL: out of memory");
  s = cl->GetPlatformIDs(np, plats, NULL);
  if (s != CL_SUCCESS) {
    free(plats);
    return fy_error(FERRY_EIO, "OpenCL: listing the platforms failed: %s", fy_cl_status(s));
  }
  *nplat = (int)np;
  int rc = FERRY_OK;
  size_t cap = 0;
  for (cl_uint p = 0; p < np && rc == FERRY_OK; p++) {
    cl_uint nd = 0;
    if (cl->GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd)
      continue;
    cl_device_id *devs = calloc(nd, sizeof *devs);
    if (!devs || cl->GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL) != CL_SUCCESS) {
      free(devs);
      continue;
    }
    for (cl_uint d = 0; d < nd; d++) {
      if (want >= 0 && *count == want) {
        *pid = plats[p];
        *did = devs[d];
        free(devs);
        free(plats);
        return FERRY_OK;
      }
      if (list) {
        fy_cl_device_info *l = fy_grow(*list, &cap, (size_t)*count + 1, sizeof *l, 4);
        if (!l) {
          rc = fy_error(FERRY_ENOMEM, "OpenCL: out of memory");
          break;
        }
        *list = l;
        memset(&l[*count], 0, sizeof l[*count]);
        describe(cl, plats[p], devs[d], &l[*count]);
        l[*count].index = *count;
        l[*count].platform = (int)p;
      }
      ++*count;
    }
    free(devs);
  }
  free(plats);
  return rc;
}

int fy_cl_default_device(void) {
  fy_cl_device_info *all = NULL;
  int n = 0, np = 0, pick = 0;
  if (fy_cl_devices(&all, &n, &np) == FERRY_OK)
    for (int i = 0; i < n; i++)
      if (all[i].gpu) {
        pick = i;
        break;
      }
  free(all);
  fy_error_clear();
  return pick;
}

int fy_cl_devices(fy_cl_device_info **out, int *count, int *platforms) {
  *out = NULL;
  *count = 0;
  *platforms = 0;
  const fy_cl_api *cl = fy_cl_load();
  if (!cl)
    return FERRY_EUNSUPPORTED;
  int rc = walk(cl, -1, out, count, platforms, NULL, NULL);
  if (rc) {
    free(*out);
    *out = NULL;
    *count = 0;
  }
  return rc;
}

int fy_cl_open(int device, fy_cl_ctx *c) {
  memset(c, 0, sizeof c[0]);
  c->info.index = device;
  const fy_cl_api *cl = fy_cl_load();
  if (!cl)
    return FERRY_EUNSUPPORTED;
  c->cl = cl;
  if (device < 0)
    return fy_error(FERRY_EINVAL, "OpenCL device %d: the index must be >= 0", device);
  cl_platform_id pid = NULL;
  cl_device_id did = NULL;
  int count = 0, nplat = 0;
  int rc = walk(cl, device, NULL, &count, &nplat, &pid, &did);
  if (rc)
    return rc;
  if (!did) {
    /* name the devices there are */
    fy_cl_device_info *all = NULL;
    int n = 0, np = 0;
    char names[384] = "";
    if (walk(cl, -1, &all, &n, &np, NULL, NULL) == FERRY_OK)
      for (int i = 0; i < n; i++) {
        size_t at = strlen(names);
        snprintf(names + at, sizeof names - at, "%sopencl:%d %s", i ? ", " : "", i, all[i].name);
      }
    free(all);
    return fy_error(FERRY_EUNSUPPORTED, "OpenCL device %d does not exist (%d found%s%s%s)", device,
                    count, count ? ": " : "", names, count ? "" : " on any platform");
  }
  c->dev = did;
  describe(cl, pid, did, &c->info);
  c->info.index = device;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)pid, 0};
  cl_int s = CL_SUCCESS;
  c->ctx = cl->CreateContext(props, 1, &did, NULL, NULL, &s);
  if (!c->ctx)
    return fy_cl_fail(c, "creating a context", s);
  c->q = cl->CreateCommandQueue(c->ctx, did, 0, &s);
  if (!c->q) {
    rc = fy_cl_fail(c, "creating a command queue", s);
    fy_cl_close(c);
    return rc;
  }
  return FERRY_OK;
}

void fy_cl_close(fy_cl_ctx *c) {
  if (c->q)
    c->cl->ReleaseCommandQueue(c->q);
  if (c->ctx)
    c->cl->ReleaseContext(c->ctx);
  c->q = NULL;
  c->ctx = NULL;
}

int fy_cl_build(fy_cl_ctx *c, const char *source, const char *options, cl_program *out) {
  const fy_cl_api *cl = c->cl;
  cl_int s = CL_SUCCESS;
  *out = NULL;
  cl_program p = cl->CreateProgramWithSource(c->ctx, 1, &source, NULL, &s);
  if (!p)
    return fy_cl_fail(c, "creating a program", s);
  s = cl->BuildProgram(p, 1, &c->dev, options, NULL, NULL);
  if (s != CL_SUCCESS) {
    size_t len = 0;
    char *log = NULL;
    if (cl->GetProgramBuildInfo(p, c->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) == CL_SUCCESS &&
        len && (log = malloc(len + 1)) &&
        cl->GetProgramBuildInfo(p, c->dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS)
      log[len] = 0;
    else if (log)
      log[0] = 0;
    int rc =
        fy_error(FERRY_EIO, "building the OpenCL kernels (%s) on OpenCL device %d (%s): %s%s%s",
                 options ? options : "", c->info.index, c->info.name, fy_cl_status(s),
                 log && log[0] ? "; build log:\n" : "", log ? log : "");
    free(log);
    cl->ReleaseProgram(p);
    return rc;
  }
  *out = p;
  return FERRY_OK;
}

int fy_cl_nvidia_unlisted(char *path, size_t n) {
  if (n)
    path[0] = 0;
  fy_cl_device_info *d = NULL;
  int count = 0, platforms = 0;
  int rc = fy_cl_devices(&d, &count, &platforms);
  for (int i = 0; rc == FERRY_OK && i < count; i++)
    if (!strncmp(d[i].platform_name, "NVIDIA", 6)) {
      free(d);
      return 0; /* listed */
    }
  free(d);
  /* the driver's ICD library, as nvidia.icd names it: on the library path,
   * else where drivers put it (containers mount it under /usr/local/nvidia) */
  static const char *const where[] = {
      "libnvidia-opencl.so.1", "/usr/local/nvidia/lib64/libnvidia-opencl.so.1",
      "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1", "/usr/lib64/libnvidia-opencl.so.1",
      "/usr/lib/aarch64-linux-gnu/libnvidia-opencl.so.1"};
  void *h = NULL;
  for (size_t i = 0; !h && i < sizeof where / sizeof *where; i++)
    h = dlopen(where[i], RTLD_LAZY | RTLD_LOCAL);
  if (!h)
    return 0;
  void *sym = dlsym(h, "clIcdGetPlatformIDsKHR");
  Dl_info info;
  int found = sym != NULL;
  if (found && n)
    snprintf(path, n, "%s",
             dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "libnvidia-opencl.so.1");
  dlclose(h);
  return found;
}
