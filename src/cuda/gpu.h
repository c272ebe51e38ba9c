/* gpu.h — ferry's CUDA backend, seen from the C side (the loader, the CLI).
 * Implemented in gpu.cu (with CUDA) or gpu_stub.c (without: every call
 * returns FERRY_EUNSUPPORTED "built without CUDA"). */
#ifndef FY_GPU_H
#define FY_GPU_H

#include "core/internal.h"

/* What the device probe found; `ferry doctor` prints it. */
typedef struct fy_gpu_probe {
  int built_with_cuda;
  int driver_version, runtime_version; /* e.g. 13000 */
  int device_count;
  char error[256]; /* why no GPU can be used, if none */
  struct {
    char name[256];
    int major, minor, sms;
    size_t total_mem, free_mem;
    int hw_jpeg; /* nvJPEG's hardware backend can be created */
    char hw_jpeg_why[1024];
    char pci[32];  /* PCI address, as sysfs names it ("0000:3b:00.0") */
    int numa_node; /* its NUMA node (sysfs), -1 unknown */
  } dev[8];
  int numa_nodes;        /* NUMA nodes with CPUs on this host (sysfs; 0 unknown) */
  int nvjpeg_version;    /* major*1000 + minor*10 + patch, 0 if unavailable */
  char nvjpeg_why[1024]; /* when 0: where libnvjpeg was looked for, or what it lacks */
  int nvdec;             /* libnvcuvid loads */
} fy_gpu_probe;

/* Fills *p. Never fails: what is missing is said in p. */
void fy_gpu_probe_run(fy_gpu_probe *p);

/* One sample for the batch kernel. Samples are either staged (the CPU made
 * the final u8 HWC image: the kernel only converts it) or resampled from a
 * decoded image in device memory with fixed-point tables, horizontal pass
 * then vertical, exactly as the CPU resizer does. */
typedef struct fy_gpu_sample {
  uint64_t src;      /* device pointer to u8 RGB interleaved pixels */
  int32_t pitch;     /* bytes per source row */
  int32_t out_index; /* position in the output batch */
  int32_t flip;
  int32_t staged; /* 1: src is a final out_w x out_h image */
  /* resampling (staged = 0): tables in the slot's table arena */
  int32_t xs, xk, xtaps; /* x window starts at tab[xs..], weights tab[xk..] */
  int32_t ys, yk, ytaps;
  int32_t row0, rows; /* source rows the vertical pass reads */
  int64_t temp;       /* byte offset of this sample's horizontal result */
} fy_gpu_sample;

#define FY_GPU_MAX_ENGINES 8 /* decoder threads feeding the JPEG engine */
#define FY_GPU_MAX_CHUNK 256 /* images per engine call */

typedef struct fy_gpu_params {
  int device;
  int nslots, batch;
  int width, height;
  ferry_layout layout;
  ferry_dtype dtype;
  int normalize;
  float mean[3], std[3];
  size_t arena_bytes; /* per slot: decoded images on the device */
  size_t temp_bytes;  /* per slot: horizontal-pass results */
  int table_entries;  /* per slot: int32 entries of resampling tables */
  int hw_decode;      /* use nvJPEG's hardware engine */
  int decoders;       /* decoder contexts (threads), 1..FY_GPU_MAX_ENGINES */
  int no_staging;     /* 1: producers never stage host images (video) */
  int call_max;       /* the most images one decode call takes (0: unknown): with it, every
                       * call is of one size, padded, so each context sets up one nvJPEG
                       * state (gpu.cu) */
} fy_gpu_params;

typedef struct fy_gpu fy_gpu;

int fy_gpu_open(const fy_gpu_params *p, fy_gpu **out);
void fy_gpu_close(fy_gpu *g);

/* Pinned host memory of slot s: staged u8 HWC images [batch][h][w][3]. */
uint8_t *fy_gpu_staging(fy_gpu *g, int slot);
/* Device memory of slot s: the output batch. */
void *fy_gpu_output(fy_gpu *g, int slot);
/* Pinned host arrays of slot s that producers fill. */
fy_gpu_sample *fy_gpu_samples(fy_gpu *g, int slot);
int32_t *fy_gpu_tables(fy_gpu *g, int slot);

/* Device memory of slot s for decoded images (tests place images here). */
uint8_t *fy_gpu_arena(fy_gpu *g, int slot);
/* Whether the hardware JPEG engine is in use. */
int fy_gpu_hw_decode(const fy_gpu *g);

/* Decodes n JPEGs (each accepted by fy_gpu_jpeg_check) on the hardware
 * engine into device memory dst[i] (w[i] * 3 bytes per row), using decoder
 * context `engine` (one per thread). Returns when the pixels are on the
 * device. FERRY_OK or an error (the caller retries on the CPU). */
int fy_gpu_jpeg_decode(fy_gpu *g, int engine, const uint8_t *const *data, const size_t *len,
                       const int *w, uint8_t *const *dst, int n);
/* Whether the engine can decode these bytes (3-component baseline JPEG);
 * *w, *h get the size. */
int fy_gpu_jpeg_check(fy_gpu *g, int engine, const uint8_t *data, size_t len, int *w, int *h);
/* The same with a choice of output: luma = 1 decodes only the Y plane
 * (pitch[i] bytes per row, one byte a pixel); luma = 0 is RGB interleaved
 * as above (pitch[i] >= 3 w). */
int fy_gpu_jpeg_decode_ex(fy_gpu *g, int engine, const uint8_t *const *data, const size_t *len,
                          const int *pitch, uint8_t *const *dst, int n, int luma);
size_t fy_gpu_arena_bytes(const fy_gpu *g);

/* Device address of staged image k of slot s (what a staged sample's src
 * holds). */
uint64_t fy_gpu_staged_src(fy_gpu *g, int slot, int k);

/* Uploads slot s's samples, `table_used` table entries and the first
 * `staged_images` staged images, runs the batch kernels for `count`
 * samples, and records the slot's ready event. Asynchronous. */
int fy_gpu_finish(fy_gpu *g, int slot, int count, int table_used, int staged_images);
/* Waits until slot s's batch is on the device. */
int fy_gpu_wait(fy_gpu *g, int slot);
/* The same, giving up after timeout_ms (<= 0: never) with FERRY_ETIMEOUT.
 * Polls (no device-wide or blocking wait that could not be bounded). */
int fy_gpu_wait_for(fy_gpu *g, int slot, int timeout_ms);
/* What decoder context `engine` is doing now, for the loader's stall
 * report: "idle", "in nvjpegDecodeBatched", "waiting for the engine to
 * finish (cudaEventSynchronize)", ... A static string. */
const char *fy_gpu_engine_phase(fy_gpu *g, int engine);
/* The consumer is done with slot s once its work on `stream` (a
 * cudaStream_t, NULL = the legacy default stream) has run: later writes into
 * the slot wait for that. */
int fy_gpu_release(fy_gpu *g, int slot, void *stream);

/* Spins the GPU for about `ms` milliseconds on `stream` (NULL: the legacy
 * default stream): benchmarks' stand-in for the consumer's compute. */
int fy_gpu_busy(int device, double ms, void *stream);
/* Waits for the work queued on `stream`. */
int fy_gpu_stream_sync(void *stream);

/* The stream the batch kernels of `g` run on (a cudaStream_t). */
void *fy_gpu_stream(fy_gpu *g);

/* A decoded 4:2:0 video frame in device memory: a luma plane and an
 * interleaved CbCr plane (NVDEC's NV12, or P016 with `wide`). */
enum { FY_YUV_BT601, FY_YUV_BT709, FY_YUV_BT2020 };
typedef struct fy_gpu_yuv {
  uint64_t luma, chroma; /* device addresses */
  int pitch;             /* bytes per row, both planes */
  int width, height;     /* displayed size (stored orientation) */
  int wide;              /* 16-bit samples (high bits used) */
  int matrix;            /* FY_YUV_* */
  int full_range;        /* 0: video range (16-235) */
  int orientation;       /* 1, 3, 6 or 8 (EXIF): written upright */
} fy_gpu_yuv;

/* Queues the conversion of *f to upright u8 RGB at dst (dst_pitch bytes per
 * row) on `stream`. */
int fy_gpu_yuv_to_rgb(const fy_gpu_yuv *f, uint8_t *dst, int dst_pitch, void *stream);

/* Plain synchronous copies and a device-wide wait (tools and tests). */
int fy_gpu_download(int device, const void *src, void *dst, size_t n);
int fy_gpu_upload(int device, const void *src, void *dst, size_t n);
int fy_gpu_sync(int device);
/* Visible CUDA devices (0 when none, or without CUDA), and device's PCI
 * address as CUDA writes it ("0000:3B:00.0"; FERRY_EUNSUPPORTED without
 * CUDA): where the loader's threads go on a host of several NUMA nodes
 * (pipeline/place.c). */
int fy_gpu_count(void);
int fy_gpu_pci_id(int device, char *buf, int cap);
/* Page-locks host memory for CUDA (portable), with device's context. */
int fy_gpu_host_register(int device, void *p, size_t n);
void fy_gpu_host_unregister(void *p);

#endif
