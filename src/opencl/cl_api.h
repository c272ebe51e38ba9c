/* cl_api.h — the part of the OpenCL 1.2 host API that ferry uses, declared
 * here from the Khronos specification (type sizes, enumerant values,
 * function signatures) so that ferry builds without OpenCL headers: the
 * functions are looked up at run time in the ICD loader (cl_runtime.c),
 * never linked. Only what src/opencl/ calls is declared. */
#ifndef FY_CL_API_H
#define FY_CL_API_H

#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_mem_flags;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_program_build_info;
typedef intptr_t cl_context_properties;

typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

enum {
  CL_SUCCESS = 0,
  CL_DEVICE_NOT_FOUND = -1,
  CL_MEM_OBJECT_ALLOCATION_FAILURE = -4,
  CL_OUT_OF_RESOURCES = -5,
  CL_OUT_OF_HOST_MEMORY = -6,
  CL_BUILD_PROGRAM_FAILURE = -11,
  CL_INVALID_VALUE = -30,
  CL_INVALID_WORK_GROUP_SIZE = -54,
  CL_PLATFORM_NOT_FOUND_KHR = -1001,
};

#define CL_FALSE 0u
#define CL_TRUE 1u

#define CL_PLATFORM_VERSION 0x0901u
#define CL_PLATFORM_NAME 0x0902u
#define CL_PLATFORM_VENDOR 0x0903u

#define CL_DEVICE_TYPE_CPU (1ull << 1)
#define CL_DEVICE_TYPE_GPU (1ull << 2)
#define CL_DEVICE_TYPE_ACCELERATOR (1ull << 3)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFull

#define CL_DEVICE_TYPE 0x1000u
#define CL_DEVICE_MAX_COMPUTE_UNITS 0x1002u
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004u
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010u
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101Fu
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023u
#define CL_DEVICE_DOUBLE_FP_CONFIG 0x1032u
#define CL_DEVICE_NAME 0x102Bu
#define CL_DEVICE_VENDOR 0x102Cu
#define CL_DRIVER_VERSION 0x102Du
#define CL_DEVICE_VERSION 0x102Fu

#define CL_CONTEXT_PLATFORM 0x1084
#define CL_PROGRAM_BUILD_LOG 0x1183u

#define CL_MEM_READ_WRITE (1ull << 0)
#define CL_MEM_WRITE_ONLY (1ull << 1)
#define CL_MEM_READ_ONLY (1ull << 2)
#define CL_MEM_COPY_HOST_PTR (1ull << 5)

/* The entry points, as function pointers filled by fy_cl_load(). */
typedef struct fy_cl_api {
  cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
  cl_int (*GetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
  cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
  cl_int (*GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
  cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                              void (*)(const char *, const void *, size_t, void *), void *,
                              cl_int *);
  cl_int (*RetainContext)(cl_context);
  cl_int (*ReleaseContext)(cl_context);
  cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties,
                                         cl_int *);
  cl_int (*ReleaseCommandQueue)(cl_command_queue);
  cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *,
                                        cl_int *);
  cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                         void (*)(cl_program, void *), void *);
  cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t, void *,
                                size_t *);
  cl_int (*RetainProgram)(cl_program);
  cl_int (*ReleaseProgram)(cl_program);
  cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
  cl_int (*ReleaseKernel)(cl_kernel);
  cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
  cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
  cl_int (*ReleaseMemObject)(cl_mem);
  cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *,
                               cl_uint, const cl_event *, cl_event *);
  cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint,
                              const cl_event *, cl_event *);
  cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                 const size_t *, const size_t *, cl_uint, const cl_event *,
                                 cl_event *);
  cl_int (*Finish)(cl_command_queue);
} fy_cl_api;

#endif
