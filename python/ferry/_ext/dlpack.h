/* dlpack.h — the DLPack structs ferry exports, written from the public
 * DLPack specification (https://dmlc.github.io/dlpack/latest/): version 0.8's
 * DLManagedTensor ("legacy") layout that every consumer accepts
 * (torch.from_dlpack, numpy.from_dlpack, cupy, jax), and version 1.0's
 * DLManagedTensorVersioned, given to consumers that ask for it with
 * __dlpack__(max_version=(1, x)) (NumPy 2 then makes writable arrays).
 *
 * Only what ferry needs is here; the numbering of the enums is the spec's and
 * must not change. Python protocol: __dlpack__() returns a PyCapsule named
 * "dltensor" holding a DLManagedTensor*; a consumer renames it
 * "used_dltensor" and calls the deleter when it no longer needs the memory;
 * a capsule that was never consumed calls the deleter from its destructor. */
#ifndef FERRY_DLPACK_H
#define FERRY_DLPACK_H

#include <stdint.h>

#define DLPACK_VERSION 80
#define DLPACK_ABI_VERSION 1

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3, /* pinned host memory (cudaMallocHost) */
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6
} DLDataTypeCode;

typedef struct {
  uint8_t code;   /* a DLDataTypeCode */
  uint8_t bits;   /* 8, 16, 32, 64 */
  uint16_t lanes; /* 1 for plain tensors */
} DLDataType;

typedef struct {
  void *data; /* 256-byte aligned where possible; offset below */
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL = compact row-major */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* DLPack 1.0: capsule "dltensor_versioned", renamed
 * "used_dltensor_versioned" by the consumer. */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif
