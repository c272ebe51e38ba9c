/* gpu.cu — the CUDA backend: device probe, per-slot device and pinned
 * memory, nvJPEG hardware decoding, and the batch kernels (resample +
 * flip + normalize + layout + dtype) with events for overlap. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvjpeg.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "cuda/gpu.h"
}
#define FY_CUDA_CONTEXT "CUDA"
#include "cuda/cuda_check.h"
#include "cuda/engine_gate.h"
#include "cuda/jpeg_mem.h"
extern "C" {
#include "core/numa.h"
#include "core/testctl.h"
#include "cuda/nvjpeg_find.h"
}

#define FY_PREC 22
#define FY_GPU_POW2 9  /* batch sizes 1, 2, 4, ..., 256 */
#define FY_PAD_SIDE 64 /* the padding JPEG: 64 x 64 */
#define FY_PAD_MAX 63  /* the most padding images a call may be given (FERRY_GPU_PAD's range) */
#define FY_PAD_DEFAULT 16
/* ~46 us of the engine a padding image (one H200, 64x64, calls of 16 padded
 * to 64); a context's two other states ~0.24 s of set-up while 3 other
 * contexts wait: ~1 s of the engine */
#define FY_PAD_BUY 20000

extern "C" int fy_jpeg_encode(const uint8_t *px, int w, int h, size_t stride, int quality,
                              const char *name, uint8_t **out, size_t *size);

/* nvJPEG is loaded at run time, so that libferry works (on the CPU, or
 * with the GPU but without the JPEG engine) where libnvjpeg is absent. */
#define NVJ_FUNCS(X)                                                                               \
  X(nvjpegGetProperty)                                                                             \
  X(nvjpegCreateEx)                                                                                \
  X(nvjpegDestroy)                                                                                 \
  X(nvjpegJpegStateCreate)                                                                         \
  X(nvjpegJpegStateDestroy)                                                                        \
  X(nvjpegJpegStreamCreate)                                                                        \
  X(nvjpegJpegStreamDestroy)                                                                       \
  X(nvjpegJpegStreamParseHeader)                                                                   \
  X(nvjpegDecodeBatchedSupported)                                                                  \
  X(nvjpegJpegStreamGetFrameDimensions)                                                            \
  X(nvjpegJpegStreamGetComponentsNum)                                                              \
  X(nvjpegDecodeBatchedInitialize)                                                                 \
  X(nvjpegDecodeBatched) X(nvjpegCreateExV2) X(nvjpegJpegStreamGetChromaSubsampling)               \
      X(nvjpegDecodeBatchedPreAllocate)

static struct {
  int tried, ok;
#define NVJ_PTR(f) decltype(&::f) f;
  NVJ_FUNCS(NVJ_PTR)
} nvj;

/* Where libnvjpeg was looked for when it was not found (nvjpeg_find.c);
 * the function it lacks when it was. */
static char nvj_where[2048];
static const char *nvj_missing;

/* A libnvjpeg that loaded but lacks the function f: said by the probe. */
static int nvj_lacks(const char *f, const char *loaded) {
  nvj_missing = f;
  snprintf(nvj_where, sizeof nvj_where, "%.*s", (int)sizeof nvj_where - 1, loaded);
  return 0;
}

/* Loads libnvjpeg once (the probe and the first loader, from one thread at
 * a time: the CLI and loader open are not concurrent with each other):
 * $FERRY_NVJPEG_PATH, the library path, then the nvidia-nvjpeg wheel beside
 * ferry's in site-packages (nvjpeg_find.c). */
static int nvj_load(void) {
  if (nvj.tried)
    return nvj.ok;
  nvj.tried = 1;
  char loaded[FY_NVJPEG_PATH_MAX];
  void *h = fy_nvjpeg_open(loaded, sizeof loaded, nvj_where, sizeof nvj_where);
  fy_log(FERRY_LOG_DEBUG, h ? "nvJPEG: loaded %s" : "nvJPEG: not found; looked for %s",
         h ? loaded : nvj_where);
  if (!h)
    return 0;
#define NVJ_SYM(f)                                                                                 \
  nvj.f = (decltype(nvj.f))dlsym(h, #f);                                                           \
  if (!nvj.f)                                                                                      \
    return nvj_lacks(#f, loaded);
  NVJ_FUNCS(NVJ_SYM)
  nvj.ok = 1;
  return 1;
}

struct fy_gpu {
  fy_gpu_params p;
  cudaStream_t stream;
  size_t out_bytes, stage_bytes;
  struct slot {
    void *out;            /* device: output batch */
    uint8_t *stage_h;     /* pinned: staged u8 images */
    uint8_t *stage_d;     /* device copy of them */
    fy_gpu_sample *smp_h; /* pinned */
    fy_gpu_sample *smp_d;
    int32_t *tab_h; /* pinned */
    int32_t *tab_d;
    uint8_t *arena; /* device: decoded images */
    uint8_t *temp;  /* device: horizontal-pass results */
    cudaEvent_t ready, released;
    int release_pending;
  } * slots;
  nvjpegHandle_t jh;
  /* one per decoder thread: the engine works on several batches at once */
  /* nvJPEG's batched decoder must be re-initialised whenever the batch size
   * changes, and re-initialising frees device memory, which waits for the
   * whole GPU (the consumer's kernels too). So each context keeps one
   * state per power-of-two batch size, initialised once, and decodes n
   * images as a sum of powers of two. */
  struct engine {
    nvjpegJpegState_t js[2][FY_GPU_POW2]; /* [luma only][log2 batch size] */
    int ready[2][FY_GPU_POW2];
    fy_engine_seen seen[2][FY_GPU_POW2]; /* the largest inputs each state has taken */
    nvjpegJpegStream_t jstream;
    cudaStream_t stream;
    cudaEvent_t done; /* blocking: the thread sleeps, not spins, while it waits */
    uint8_t *pad_d;   /* where padding images decode (pad_room of them) */
    long extra_pads;  /* padding decoded beyond the per-call choice's (call_k) */
    int split;        /* 1: the per-call choice of 64, 16 or 4 from now on */
    int phase;        /* ENGINE_* (atomic): what the thread is doing, for stall reports */
  } eng[FY_GPU_MAX_ENGINES];
  /* A small baseline JPEG that pads a call up to a batch size: each
   * state's first use costs 0.1-0.4 s, one at a time under the exclusive
   * gate (measured on an H200: 12 states, 1.6 s, the whole first epoch
   * at the cores' rate), so a context keeps one state, 3 at most. */
  uint8_t *pad_jpeg;
  size_t pad_len;
  /* With the caller's call_max: every call is of 1 << call_k images (64 for
   * call_max >= 48, 16 for >= 12, else 4), the last padded: one state a
   * context. A padding image costs the engine about half a real one, so
   * once a context has decoded pad_buy more of them than the per-call
   * choice would have (about what setting up its other states costs, the
   * other contexts waiting), it makes that choice from then on (split): a
   * short run never pays for those states, a long one pays at most twice.
   * The per-call choice (without call_max: call_k -1; the test control
   * FERRY_GPU_PAD=0..63): a chunk of at least 64 - pad_max images goes as one call
   * of 64, padded, a smaller one as calls of 16 or 4 (each waited for
   * before the thread's next call); pad_max 16. */
  int call_k, pad_max, pad_room;
  long pad_buy; /* FY_PAD_BUY (the test control FERRY_GPU_PAD_BUY) */
  int hw;
  int prio;  /* stream priority of the loader's streams */
  int debug; /* log level debug: say when a state grows (an exclusive engine call) */
  fy_mem_cache *dev_mem, *pin_mem; /* nvJPEG's buffers (jpeg_mem.cu) */
};

enum { ENGINE_IDLE, ENGINE_GATE, ENGINE_STATE, ENGINE_INIT, ENGINE_CALL, ENGINE_WAIT };

static void set_phase(struct fy_gpu::engine *e, int phase) {
  __atomic_store_n(&e->phase, phase, __ATOMIC_RELAXED);
}

extern "C" const char *fy_gpu_engine_phase(fy_gpu *g, int engine) {
  if (engine < 0 || engine >= FY_GPU_MAX_ENGINES)
    return "?";
  switch (__atomic_load_n(&g->eng[engine].phase, __ATOMIC_RELAXED)) {
  case ENGINE_GATE: return "waiting for its turn at the engine (engine_gate.c)";
  case ENGINE_STATE: return "creating an nvJPEG state";
  case ENGINE_INIT: return "in nvjpegDecodeBatchedInitialize";
  case ENGINE_CALL: return "in nvjpegDecodeBatched";
  case ENGINE_WAIT: return "waiting for the engine to finish (cudaEventSynchronize)";
  default: return "between engine calls";
  }
}

/* ---------------------------------------------------------------- probe */

/* Why the JPEG engine cannot be used for want of nvJPEG, into why[n]:
 * "libnvjpeg not found (looked for A, B, ...)", cut with "..." where the
 * list is longer than why (the log level debug logs all of it). */
static void nvj_why(char *why, size_t n) {
  size_t len = nvj_missing
                   ? (size_t)snprintf(why, n, "%s lacks %s", nvj_where, nvj_missing)
                   : (size_t)snprintf(why, n, "libnvjpeg not found (looked for %s)", nvj_where);
  if (len >= n && n > 4)
    memcpy(why + n - 4, "...", 4);
}

extern "C" void fy_gpu_probe_run(fy_gpu_probe *p) {
  memset(p, 0, sizeof *p);
  p->built_with_cuda = 1;
  cudaDriverGetVersion(&p->driver_version);
  cudaRuntimeGetVersion(&p->runtime_version);
  cudaError_t e = cudaGetDeviceCount(&p->device_count);
  if (e != cudaSuccess) {
    snprintf(p->error, sizeof p->error, "%s",
             p->driver_version == 0 ? "no NVIDIA driver found" : cudaGetErrorString(e));
    p->device_count = 0;
  }
  int maj = 0, min = 0, pat = 0;
  if (nvj_load() && nvj.nvjpegGetProperty(MAJOR_VERSION, &maj) == NVJPEG_STATUS_SUCCESS) {
    nvj.nvjpegGetProperty(MINOR_VERSION, &min);
    nvj.nvjpegGetProperty(PATCH_LEVEL, &pat);
    p->nvjpeg_version = maj * 1000 + min * 10 + pat;
  } else {
    nvj_why(p->nvjpeg_why, sizeof p->nvjpeg_why);
  }
  void *cuvid = dlopen("libnvcuvid.so.1", RTLD_LAZY | RTLD_LOCAL);
  p->nvdec = cuvid != NULL;
  if (cuvid)
    dlclose(cuvid);
  p->numa_nodes = fy_numa_node_count();
  for (int d = 0; d < p->device_count && d < 8; d++) {
    cudaDeviceProp prop;
    p->dev[d].numa_node = -1;
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess)
      continue;
    snprintf(p->dev[d].name, sizeof p->dev[d].name, "%s", prop.name);
    p->dev[d].major = prop.major;
    p->dev[d].minor = prop.minor;
    p->dev[d].sms = prop.multiProcessorCount;
    snprintf(p->dev[d].pci, sizeof p->dev[d].pci, "%04x:%02x:%02x.0", prop.pciDomainID,
             prop.pciBusID, prop.pciDeviceID);
    p->dev[d].numa_node = fy_numa_pci_node(p->dev[d].pci);
    cudaSetDevice(d);
    cudaMemGetInfo(&p->dev[d].free_mem, &p->dev[d].total_mem);
    nvjpegHandle_t h;
    if (!nvj.ok) {
      nvj_why(p->dev[d].hw_jpeg_why, sizeof p->dev[d].hw_jpeg_why);
      continue;
    }
    nvjpegStatus_t s = nvj.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &h);
    p->dev[d].hw_jpeg = s == NVJPEG_STATUS_SUCCESS;
    if (s == NVJPEG_STATUS_SUCCESS)
      nvj.nvjpegDestroy(h);
    else
      snprintf(p->dev[d].hw_jpeg_why, sizeof p->dev[d].hw_jpeg_why,
               s == NVJPEG_STATUS_ARCH_MISMATCH ? "no hardware JPEG engine on this GPU"
                                                : "nvJPEG hardware backend failed (status %d)",
               (int)s);
  }
}

/* -------------------------------------------------------------- kernels */

__device__ __forceinline__ int clip8(int v) {
  v >>= FY_PREC; /* arithmetic shift, as the CPU passes */
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* Horizontal pass: rows [row0, row0 + rows) of each resampled sample, out_w
 * outputs per row, 3 channels, into the temp arena. */
__global__ void k_horizontal(const fy_gpu_sample *smp, const int32_t *tab, uint8_t *temp,
                             int out_w) {
  fy_gpu_sample s = smp[blockIdx.z];
  if (s.staged)
    return;
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= out_w)
    return;
  int start = tab[s.xs + x];
  const int32_t *k = tab + s.xk + (size_t)x * s.xtaps;
  const uint8_t *src = (const uint8_t *)s.src;
  uint8_t *dst = temp + s.temp;
  for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < s.rows; r += gridDim.y * blockDim.y) {
    const uint8_t *row = src + (size_t)(s.row0 + r) * s.pitch + (size_t)start * 3;
    int a0 = 1 << (FY_PREC - 1), a1 = a0, a2 = a0;
    for (int i = 0; i < s.xtaps; i++) {
      int w = k[i];
      a0 += row[3 * i] * w;
      a1 += row[3 * i + 1] * w;
      a2 += row[3 * i + 2] * w;
    }
    uint8_t *o = dst + ((size_t)r * out_w + x) * 3;
    o[0] = (uint8_t)clip8(a0);
    o[1] = (uint8_t)clip8(a1);
    o[2] = (uint8_t)clip8(a2);
  }
}

struct store_params {
  int w, h, layout, dtype, normalize;
  float mean[3], std[3];
};

/* Writes one u8 value as the output element, with the CPU store's float
 * arithmetic (no fused multiply-add, so results match it bit for bit). */
__device__ __forceinline__ void put(void *out, size_t i, int v, int c, const store_params &p) {
  if (p.dtype == FERRY_U8 && !p.normalize) {
    ((uint8_t *)out)[i] = (uint8_t)v;
    return;
  }
  float f = __fdiv_rn((float)v, 255.0f);
  if (p.normalize)
    f = __fdiv_rn(__fsub_rn(f, p.mean[c]), p.std[c]);
  if (p.dtype == FERRY_F32)
    ((float *)out)[i] = f;
  else if (p.dtype == FERRY_F16)
    ((__half *)out)[i] = __float2half_rn(f);
  else {
    float r = rintf(f); /* u8 with normalize: round half to even, clamp */
    ((uint8_t *)out)[i] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
  }
}

/* Vertical pass (or the staged image as it is) + flip + normalize + layout
 * + dtype, into the output batch. */
__global__ void k_vertical_store(const fy_gpu_sample *smp, const int32_t *tab, const uint8_t *temp,
                                 void *out, store_params p) {
  fy_gpu_sample s = smp[blockIdx.z];
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= p.w || y >= p.h)
    return;
  int sx = s.flip ? p.w - 1 - x : x;
  int v[3];
  if (s.staged) {
    const uint8_t *q = (const uint8_t *)s.src + ((size_t)y * p.w + sx) * 3;
    v[0] = q[0], v[1] = q[1], v[2] = q[2];
  } else {
    int start = tab[s.ys + y] - s.row0;
    const int32_t *k = tab + s.yk + (size_t)y * s.ytaps;
    const uint8_t *col = temp + s.temp + ((size_t)start * p.w + sx) * 3;
    int a0 = 1 << (FY_PREC - 1), a1 = a0, a2 = a0;
    size_t step = (size_t)p.w * 3;
    for (int j = 0; j < s.ytaps; j++) {
      const uint8_t *q = col + j * step;
      a0 += q[0] * k[j];
      a1 += q[1] * k[j];
      a2 += q[2] * k[j];
    }
    v[0] = clip8(a0), v[1] = clip8(a1), v[2] = clip8(a2);
  }
  size_t plane = (size_t)p.w * p.h, base = (size_t)s.out_index * plane * 3;
  for (int c = 0; c < 3; c++) {
    size_t i = p.layout == FERRY_LAYOUT_CHW ? base + c * plane + (size_t)y * p.w + x
                                            : base + ((size_t)y * p.w + x) * 3 + c;
    put(out, i, v[c], c, p);
  }
}

/* ------------------------------------------------------------ lifecycle */

static size_t dtype_size(ferry_dtype d) { return d == FERRY_U8 ? 1 : d == FERRY_F16 ? 2 : 4; }

static int jpeg_fail(nvjpegStatus_t s, const char *what) {
  return fy_error(FERRY_EIO, "nvJPEG: %s failed (status %d)", what, (int)s);
}

/* The per-call choice: a call of 64 (1 << 6) for n >= 64 - pad_max images,
 * padded; of 16 for 12 or more; else of 4. */
static int per_call_k(int n, int pad_max) { return n >= 64 - pad_max ? 6 : n >= 12 ? 4 : 2; }

static int open_nvjpeg(fy_gpu *g) {
  if (!g->p.hw_decode || !nvj_load())
    return FERRY_OK; /* no engine (or no libnvjpeg): the CPU decodes */
  /* Keep what the stream-ordered pool has grown to: returning it to the
   * driver at each synchronisation and taking it back is slow. */
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, g->p.device) == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
  g->dev_mem = fy_mem_cache_new(g->p.device, 0);
  g->pin_mem = fy_mem_cache_new(g->p.device, 1);
  if (!g->dev_mem || !g->pin_mem)
    return fy_error(FERRY_ENOMEM, "out of memory");
  nvjpegDevAllocatorV2_t da = {fy_mem_cache_alloc, fy_mem_cache_free, g->dev_mem};
  nvjpegPinnedAllocatorV2_t pa = {fy_mem_cache_alloc, fy_mem_cache_free, g->pin_mem};
  nvjpegStatus_t s = nvj.nvjpegCreateExV2(NVJPEG_BACKEND_HARDWARE, &da, &pa, 0, &g->jh);
  if (s != NVJPEG_STATUS_SUCCESS) {
    g->hw = 0; /* no engine: the CPU decodes everything */
    return FERRY_OK;
  }
  for (int i = 0; i < g->p.decoders; i++) {
    struct fy_gpu::engine *e = &g->eng[i];
    /* decoding states are made at first use (decode_ex): each costs
     * pinned memory and time, and most runs use a few batch sizes */
    if ((s = nvj.nvjpegJpegStreamCreate(g->jh, &e->jstream)) != NVJPEG_STATUS_SUCCESS)
      return jpeg_fail(s, "stream creation");
    CU(cudaStreamCreateWithPriority(&e->stream, cudaStreamNonBlocking, g->prio),
       "creating a stream");
    CU(cudaEventCreateWithFlags(&e->done, cudaEventBlockingSync | cudaEventDisableTiming),
       "creating an event");
  }
  g->hw = 1;
  g->debug = fy_log_on(FERRY_LOG_DEBUG);
  g->pad_max = FY_PAD_DEFAULT;
  g->call_k = g->p.call_max <= 0 ? -1 : per_call_k(g->p.call_max, FY_PAD_DEFAULT);
  long pad = -1;
  if (fy_tc_long(FY_TC_GPU_PAD, &pad)) { /* tests: the per-call choice from the start */
    g->pad_max = pad < FY_PAD_MAX ? (int)pad : FY_PAD_MAX;
    g->call_k = -1;
  }
  g->pad_buy = FY_PAD_BUY;
  fy_tc_long(FY_TC_GPU_PAD_BUY, &g->pad_buy); /* tests: a split mid-run */
  g->pad_room = g->call_k >= 0 ? (1 << g->call_k) - 1 : 0;
  if (g->pad_room < g->pad_max) /* the per-call choice, after a split */
    g->pad_room = g->pad_max;
  if (g->pad_room < 4) /* a call of 16 takes up to 4 */
    g->pad_room = 4;
  /* The padding JPEG, if the engine takes it (else: powers of two). */
  uint8_t gray[FY_PAD_SIDE * FY_PAD_SIDE * 3];
  memset(gray, 128, sizeof gray);
  int pw = 0, ph = 0;
  if (fy_jpeg_encode(gray, FY_PAD_SIDE, FY_PAD_SIDE, FY_PAD_SIDE * 3, 75, "padding", &g->pad_jpeg,
                     &g->pad_len) == FERRY_OK &&
      fy_gpu_jpeg_check(g, 0, g->pad_jpeg, g->pad_len, &pw, &ph) && pw == FY_PAD_SIDE) {
    for (int i = 0; i < g->p.decoders && g->pad_jpeg; i++)
      if (cudaMallocAsync((void **)&g->eng[i].pad_d,
                          (size_t)g->pad_room * FY_PAD_SIDE * FY_PAD_SIDE * 3,
                          g->eng[i].stream) != cudaSuccess) {
        free(g->pad_jpeg);
        g->pad_jpeg = NULL;
      }
  } else {
    free(g->pad_jpeg);
    g->pad_jpeg = NULL;
  }
  if (!g->pad_jpeg)
    g->pad_len = 0;
  return FERRY_OK;
}

/* Device buffers come from the device's stream-ordered pool, which keeps
 * freed memory for the next loader or video reader: opening and closing one
 * then costs no cudaMalloc/cudaFree (a cudaFree waits for the whole GPU). */
static int pool_alloc(fy_gpu *g, void **p, size_t n, const char *what) {
  *p = NULL;
  if (n == 0)
    return FERRY_OK;
  CU(cudaMallocAsync(p, n, g->stream), what);
  return FERRY_OK;
}

static void keep_pool_memory(int device) {
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
}

static int alloc_slot(fy_gpu *g, struct fy_gpu::slot *s) {
  const fy_gpu_params *p = &g->p;
  int rc;
  if ((rc = pool_alloc(g, &s->out, g->out_bytes, "allocating an output batch")))
    return rc;
  if (g->stage_bytes) {
    CU(cudaHostAlloc((void **)&s->stage_h, g->stage_bytes, cudaHostAllocDefault),
       "allocating pinned staging memory");
    if ((rc = pool_alloc(g, (void **)&s->stage_d, g->stage_bytes,
                         "allocating device staging memory")))
      return rc;
  }
  CU(cudaHostAlloc((void **)&s->smp_h, sizeof(fy_gpu_sample) * p->batch, cudaHostAllocDefault),
     "allocating pinned sample table");
  CU(cudaHostAlloc((void **)&s->tab_h, sizeof(int32_t) * p->table_entries, cudaHostAllocDefault),
     "allocating pinned tables");
  if ((rc = pool_alloc(g, (void **)&s->smp_d, sizeof(fy_gpu_sample) * p->batch,
                       "allocating samples")) ||
      (rc = pool_alloc(g, (void **)&s->tab_d, sizeof(int32_t) * p->table_entries,
                       "allocating tables")) ||
      (rc = pool_alloc(g, (void **)&s->arena, p->arena_bytes, "allocating the decode arena")) ||
      (rc = pool_alloc(g, (void **)&s->temp, p->temp_bytes, "allocating the resample arena")))
    return rc;
  CU(cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming), "creating an event");
  CU(cudaEventCreateWithFlags(&s->released, cudaEventDisableTiming), "creating an event");
  return FERRY_OK;
}

extern "C" int fy_gpu_open(const fy_gpu_params *p, fy_gpu **out) {
  *out = NULL;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  int driver = 0;
  cudaDriverGetVersion(&driver);
  if (e != cudaSuccess || n == 0)
    return fy_error(FERRY_EUNSUPPORTED, "no CUDA device available (%s); `ferry doctor` says more",
                    driver == 0        ? "no NVIDIA driver found"
                    : e != cudaSuccess ? cudaGetErrorString(e)
                                       : "0 devices");
  if (p->device < 0 || p->device >= n)
    return fy_error(FERRY_EINVAL, "cuda:%d does not exist (%d device%s)", p->device, n,
                    n == 1 ? "" : "s");
  CU(cudaSetDevice(p->device), "selecting the device");
  fy_gpu *g = (fy_gpu *)calloc(1, sizeof *g);
  if (!g)
    return fy_error(FERRY_ENOMEM, "out of memory");
  g->p = *p;
  g->out_bytes = (size_t)p->batch * 3 * p->width * p->height * dtype_size(p->dtype);
  g->stage_bytes = p->no_staging ? 0 : (size_t)p->batch * 3 * p->width * p->height;
  keep_pool_memory(p->device);
  g->slots = (struct fy_gpu::slot *)calloc((size_t)p->nslots, sizeof *g->slots);
  int rc = g->slots ? FERRY_OK : fy_error(FERRY_ENOMEM, "out of memory");
  if (rc == FERRY_OK) {
    /* The loader's kernels and copies are small and latency-bound: at the
     * highest priority they run as soon as SMs free up, instead of queuing
     * behind the training step's kernels. */
    int hi = 0;
    cudaDeviceGetStreamPriorityRange(NULL, &hi);
    g->prio = hi;
    cudaError_t se = cudaStreamCreateWithPriority(&g->stream, cudaStreamNonBlocking, g->prio);
    rc = se == cudaSuccess ? open_nvjpeg(g) : fy_cuda_fail(se, "creating a stream");
  }
  for (int i = 0; rc == FERRY_OK && i < p->nslots; i++)
    rc = alloc_slot(g, &g->slots[i]);
  if (rc == FERRY_OK) /* the engine's streams write into the arenas */
    rc = cudaStreamSynchronize(g->stream) == cudaSuccess
             ? FERRY_OK
             : fy_error(FERRY_EIO, "CUDA: allocating the loader's device memory failed");
  if (rc) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
    fy_gpu_close(g);
    return fy_error(rc, "%s", msg);
  }
  *out = g;
  return FERRY_OK;
}

extern "C" void fy_gpu_close(fy_gpu *g) {
  if (!g)
    return;
  cudaSetDevice(g->p.device);
  /* everything that may still touch the buffers has finished first */
  for (int i = 0; i < FY_GPU_MAX_ENGINES; i++)
    if (g->eng[i].stream)
      cudaStreamSynchronize(g->eng[i].stream);
  if (g->stream)
    cudaStreamSynchronize(g->stream);
  cudaStream_t fs = g->stream; /* frees go back to the pool in its order */
  for (int i = 0; g->slots && i < g->p.nslots; i++) {
    struct fy_gpu::slot *s = &g->slots[i];
    void *dev[] = {s->out, s->stage_d, s->smp_d, s->tab_d, s->arena, s->temp};
    for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++)
      if (dev[k])
        cudaFreeAsync(dev[k], fs);
    cudaFreeHost(s->stage_h);
    cudaFreeHost(s->smp_h);
    cudaFreeHost(s->tab_h);
    if (s->ready)
      cudaEventDestroy(s->ready);
    if (s->released)
      cudaEventDestroy(s->released);
  }
  /* destroying states frees the engine's buffers: alone at the engine */
  if (g->jh)
    fy_engine_gate_enter(1);
  for (int i = 0; i < FY_GPU_MAX_ENGINES; i++) {
    struct fy_gpu::engine *e = &g->eng[i];
    if (e->jstream)
      nvj.nvjpegJpegStreamDestroy(e->jstream);
    for (int f = 0; f < 2; f++)
      for (int k = 0; k < FY_GPU_POW2; k++)
        if (e->js[f][k])
          nvj.nvjpegJpegStateDestroy(e->js[f][k]);
    if (e->pad_d)
      cudaFreeAsync(e->pad_d, e->stream);
    if (e->stream)
      cudaStreamDestroy(e->stream);
    if (e->done)
      cudaEventDestroy(e->done);
  }
  free(g->pad_jpeg);
  if (g->jh) {
    nvj.nvjpegDestroy(g->jh);
    fy_engine_gate_leave(1);
  }
  /* every engine stream was synchronised above: nothing uses the blocks */
  fy_mem_cache_destroy(g->dev_mem, g->stream);
  fy_mem_cache_destroy(g->pin_mem, g->stream);
  if (g->stream) {
    cudaStreamSynchronize(g->stream);
    cudaStreamDestroy(g->stream);
  }
  free(g->slots);
  free(g);
}

extern "C" uint8_t *fy_gpu_staging(fy_gpu *g, int s) { return g->slots[s].stage_h; }
extern "C" void *fy_gpu_output(fy_gpu *g, int s) { return g->slots[s].out; }
extern "C" fy_gpu_sample *fy_gpu_samples(fy_gpu *g, int s) { return g->slots[s].smp_h; }
extern "C" int32_t *fy_gpu_tables(fy_gpu *g, int s) { return g->slots[s].tab_h; }
extern "C" int fy_gpu_hw_decode(const fy_gpu *g) { return g->hw; }
extern "C" uint8_t *fy_gpu_arena(fy_gpu *g, int s) { return g->slots[s].arena; }
extern "C" size_t fy_gpu_arena_bytes(const fy_gpu *g) { return g->hw ? g->p.arena_bytes : 0; }

/* Device address of a staged image: what producers put in sample.src. */
extern "C" uint64_t fy_gpu_staged_src(fy_gpu *g, int s, int k) {
  return (uint64_t)(uintptr_t)(g->slots[s].stage_d + (size_t)k * 3 * g->p.width * g->p.height);
}

/* --------------------------------------------------------------- nvJPEG */

extern "C" int fy_gpu_jpeg_check(fy_gpu *g, int engine, const uint8_t *data, size_t len, int *w,
                                 int *h) {
  if (!g->hw)
    return 0;
  struct fy_gpu::engine *e = &g->eng[engine];
  if (nvj.nvjpegJpegStreamParseHeader(g->jh, data, len, e->jstream) != NVJPEG_STATUS_SUCCESS)
    return 0;
  int supported = 1;
  if (nvj.nvjpegDecodeBatchedSupported(g->jh, e->jstream, &supported) != NVJPEG_STATUS_SUCCESS ||
      supported != 0)
    return 0;
  unsigned int fw = 0, fh = 0, nc = 0;
  /* gray: RGBI output would not replicate it, and the luma output of the
   * H100's engine for grayscale files was measured wrong: the CPU decodes */
  if (nvj.nvjpegJpegStreamGetFrameDimensions(e->jstream, &fw, &fh) != NVJPEG_STATUS_SUCCESS ||
      nvj.nvjpegJpegStreamGetComponentsNum(e->jstream, &nc) != NVJPEG_STATUS_SUCCESS || nc != 3)
    return 0;
  *w = (int)fw;
  *h = (int)fh;
  return 1;
}

/* Whether decoding these `take` images on state [f][k] may make nvJPEG
 * grow its buffers; records them as seen. */
static int grows(fy_gpu *g, struct fy_gpu::engine *e, int f, int k, const uint8_t *const *data,
                 const size_t *len, int take) {
  fy_engine_seen *seen = &e->seen[f][k];
  int any = !e->ready[f][k];
  for (int i = 0; i < take; i++) {
    unsigned int w = 0, h = 0;
    nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
    if (nvj.nvjpegJpegStreamParseHeader(g->jh, data[i], len[i], e->jstream) !=
            NVJPEG_STATUS_SUCCESS ||
        nvj.nvjpegJpegStreamGetFrameDimensions(e->jstream, &w, &h) != NVJPEG_STATUS_SUCCESS ||
        nvj.nvjpegJpegStreamGetChromaSubsampling(e->jstream, &css) != NVJPEG_STATUS_SUCCESS) {
      any = 1; /* cannot tell: take the engine alone */
      continue;
    }
    if (fy_engine_seen_grows(seen, (int)w, (int)h, len[i], (int)css)) {
      any = 1;
      fy_engine_seen_add(seen, (int)w, (int)h, len[i], (int)css);
    }
  }
  return any;
}

/* One nvjpegDecodeBatched call of m images on state [f][k] (`take` of them
 * real, the rest padding), and the wait for it, inside the engine gate:
 * exclusive when the state may grow. */
static int decode_sub(fy_gpu *g, struct fy_gpu::engine *e, int f, int k, int m,
                      const uint8_t *const *cd, const size_t *cl, nvjpegImage_t *ci, int take) {
  fy_engine_seen was = e->seen[f][k];
  int excl = grows(g, e, f, k, cd, cl, take);
  fy_engine_seen wants = e->seen[f][k];
  double t_gate = excl && g->debug ? fy_now() : 0, t_in = 0, t_set = 0;
  set_phase(e, ENGINE_GATE);
  fy_engine_gate_enter(excl);
  if (t_gate > 0)
    t_in = fy_now();
  int rc = FERRY_OK;
  nvjpegStatus_t st = NVJPEG_STATUS_SUCCESS;
  set_phase(e, ENGINE_STATE);
  if (!e->js[f][k] &&
      (st = nvj.nvjpegJpegStateCreate(g->jh, &e->js[f][k])) != NVJPEG_STATUS_SUCCESS) {
    e->js[f][k] = NULL;
    rc = jpeg_fail(st, "state creation");
  }
  nvjpegOutputFormat_t fmt = f ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
  if (rc == FERRY_OK && !e->ready[f][k]) {
    set_phase(e, ENGINE_INIT);
    st = nvj.nvjpegDecodeBatchedInitialize(g->jh, e->js[f][k], m, 1, fmt);
    if (st != NVJPEG_STATUS_SUCCESS)
      rc = jpeg_fail(st, "batched decode initialisation");
    else
      e->ready[f][k] = 1;
  }
  /* Without a size to plan for, nvJPEG frees and reallocates the engine's
   * buffers as image sizes vary (its documentation says so), and each free
   * waits for the whole device, the training step's kernels included. So
   * when a state grows, its buffers are allocated once for a box (rounded
   * up to 256 pixels, 4:4:4) that later images of up to that size reuse. */
  fy_engine_seen box = e->seen[f][k];
  int boxed = fy_engine_seen_box(&box, 256);
  /* (not for boxes past 1 GiB a state, e.g. 64 twelve-megapixel photos: then
   * nvJPEG sizes its buffers itself, and growth stays exclusive) */
  if (rc == FERRY_OK && excl && boxed && (uint64_t)m * (uint64_t)box.area * 3 <= (1ull << 30)) {
    e->seen[f][k] = box;
    set_phase(e, ENGINE_INIT);
    st = nvj.nvjpegDecodeBatchedPreAllocate(g->jh, e->js[f][k], m, e->seen[f][k].w, e->seen[f][k].h,
                                            NVJPEG_CSS_444, fmt);
    if (st != NVJPEG_STATUS_SUCCESS) /* a hint: decoding still works without it */
      memset(&e->seen[f][k], 0, sizeof e->seen[f][k]);
  }
  if (t_gate > 0)
    t_set = fy_now();
  if (rc == FERRY_OK) {
    set_phase(e, ENGINE_CALL);
    st = nvj.nvjpegDecodeBatched(g->jh, e->js[f][k], cd, cl, ci, e->stream);
    if (st != NVJPEG_STATUS_SUCCESS) {
      e->ready[f][k] = 0; /* re-initialise after a failed batch, as nvJPEG asks */
      memset(&e->seen[f][k], 0, sizeof e->seen[f][k]);
      rc = jpeg_fail(st, "batched decode");
    }
    /* The pixels are on the device before this returns (the batch kernels,
     * queued later on the loader's stream, read them) and the engine's
     * stream is idle before the next call (the engine does not wait for
     * earlier work on its stream: jpeg_mem.cu); other decoder threads keep
     * the engine busy meanwhile. */
    set_phase(e, ENGINE_WAIT);
    cudaError_t ce = cudaEventRecord(e->done, e->stream);
    if (ce == cudaSuccess)
      ce = cudaEventSynchronize(e->done);
    if (ce != cudaSuccess && rc == FERRY_OK)
      rc = fy_cuda_fail(ce, "waiting for the JPEG engine");
  }
  fy_engine_gate_leave(excl);
  set_phase(e, ENGINE_IDLE);
  if (t_gate > 0) { /* what a growth costs: the other contexts wait all of it */
    double t_end = fy_now();
    fy_log(FERRY_LOG_DEBUG,
           "JPEG engine context %d state %d grows (an exclusive call): %dx%d %zu bytes -> "
           "%dx%d %zu bytes (box %dx%d); %.1f ms for the gate, %.1f ms to set up, %.1f ms "
           "to decode %d",
           (int)(e - g->eng), k, was.w, was.h, was.bytes, wants.w, wants.h, wants.bytes,
           e->seen[f][k].w, e->seen[f][k].h, 1e3 * (t_in - t_gate), 1e3 * (t_set - t_in),
           1e3 * (t_end - t_set), take);
  }
  return rc;
}

extern "C" int fy_gpu_jpeg_decode_ex(fy_gpu *g, int engine, const uint8_t *const *data,
                                     const size_t *len, const int *pitch, uint8_t *const *dst,
                                     int n, int luma) {
  struct fy_gpu::engine *e = &g->eng[engine];
  nvjpegImage_t img[FY_GPU_MAX_CHUNK];
  if (n > FY_GPU_MAX_CHUNK)
    return fy_error(FERRY_EINVAL, "nvJPEG: chunk of %d images over %d", n, FY_GPU_MAX_CHUNK);
  CU(cudaSetDevice(g->p.device), "selecting the device");
  for (int i = 0; i < n; i++) {
    memset(&img[i], 0, sizeof img[i]);
    img[i].channel[0] = dst[i];
    img[i].pitch[0] = (unsigned int)pitch[i];
  }
  int f = luma ? 1 : 0;
  const uint8_t *pdata[64];
  size_t plen[64];
  nvjpegImage_t pimg[64];
  for (int done = 0; done < n;) {
    int rem = n - done, k, m, take;
    if (g->pad_jpeg) { /* batches of 64, 16 or 4, the rest padded */
      int k_call = per_call_k(rem, g->pad_max);
      k = g->call_k >= 0 && !e->split ? g->call_k : k_call;
      m = 1 << k;
      take = rem < m ? rem : m;
      if (k > k_call && (e->extra_pads += m - take) >= g->pad_buy) {
        e->split = 1;
        if (g->debug)
          fy_log(FERRY_LOG_DEBUG,
                 "JPEG engine context %d: %ld padding images beyond calls of 16 and 4: it sets "
                 "those states up and uses them from now on",
                 engine, e->extra_pads);
      }
    } else { /* a sum of powers of two */
      k = FY_GPU_POW2 - 1;
      while ((1 << k) > rem)
        k--;
      m = take = 1 << k;
    }
    const uint8_t *const *cd = data + done;
    const size_t *cl = len + done;
    nvjpegImage_t *ci = img + done;
    if (take < m) {
      for (int i = 0; i < m; i++) {
        int pad = i >= take;
        pdata[i] = pad ? g->pad_jpeg : data[done + i];
        plen[i] = pad ? g->pad_len : len[done + i];
        if (pad) {
          memset(&pimg[i], 0, sizeof pimg[i]);
          pimg[i].channel[0] = e->pad_d + (size_t)(i - take) * FY_PAD_SIDE * FY_PAD_SIDE * 3;
          pimg[i].pitch[0] = FY_PAD_SIDE * 3;
        } else {
          pimg[i] = img[done + i];
        }
      }
      cd = pdata, cl = plen, ci = pimg;
    }
    int rc = decode_sub(g, e, f, k, m, cd, cl, ci, take);
    if (rc)
      return rc;
    done += take;
  }
  return FERRY_OK;
}

extern "C" int fy_gpu_jpeg_decode(fy_gpu *g, int engine, const uint8_t *const *data,
                                  const size_t *len, const int *w, uint8_t *const *dst, int n) {
  int pitch[FY_GPU_MAX_CHUNK];
  for (int i = 0; i < n && i < FY_GPU_MAX_CHUNK; i++)
    pitch[i] = w[i] * 3;
  return fy_gpu_jpeg_decode_ex(g, engine, data, len, pitch, dst, n, 0);
}

/* --------------------------------------------------------------- batches */

extern "C" int fy_gpu_finish(fy_gpu *g, int slot, int count, int table_used, int staged_images) {
  struct fy_gpu::slot *s = &g->slots[slot];
  const fy_gpu_params *p = &g->p;
  CU(cudaSetDevice(p->device), "selecting the device");
  if (s->release_pending) { /* the consumer's kernels may still read the slot */
    CU(cudaStreamWaitEvent(g->stream, s->released, 0), "waiting for the consumer");
    s->release_pending = 0;
  }
  if (count > 0) {
    CU(cudaMemcpyAsync(s->smp_d, s->smp_h, sizeof(fy_gpu_sample) * count, cudaMemcpyHostToDevice,
                       g->stream),
       "uploading samples");
    if (table_used > 0)
      CU(cudaMemcpyAsync(s->tab_d, s->tab_h, sizeof(int32_t) * table_used, cudaMemcpyHostToDevice,
                         g->stream),
         "uploading tables");
    if (staged_images > 0)
      CU(cudaMemcpyAsync(s->stage_d, s->stage_h, g->stage_bytes / p->batch * staged_images,
                         cudaMemcpyHostToDevice, g->stream),
         "uploading staged images");
    if (table_used > 0) {
      dim3 hb(32, 8), hg((p->width + 31) / 32, 32, count);
      k_horizontal<<<hg, hb, 0, g->stream>>>(s->smp_d, s->tab_d, s->temp, p->width);
    }
    store_params sp = {p->width,
                       p->height,
                       (int)p->layout,
                       (int)p->dtype,
                       p->normalize,
                       {p->mean[0], p->mean[1], p->mean[2]},
                       {p->std[0], p->std[1], p->std[2]}};
    dim3 vb(32, 8), vg((p->width + 31) / 32, (p->height + 7) / 8, count);
    k_vertical_store<<<vg, vb, 0, g->stream>>>(s->smp_d, s->tab_d, s->temp, s->out, sp);
    CU(cudaGetLastError(), "launching the batch kernels");
  }
  CU(cudaEventRecord(s->ready, g->stream), "recording an event");
  return FERRY_OK;
}

extern "C" int fy_gpu_wait(fy_gpu *g, int slot) {
  CU(cudaEventSynchronize(g->slots[slot].ready), "waiting for a batch");
  return FERRY_OK;
}

extern "C" int fy_gpu_wait_for(fy_gpu *g, int slot, int timeout_ms) {
  if (timeout_ms <= 0)
    return fy_gpu_wait(g, slot);
  double deadline = fy_now() + timeout_ms * 1e-3;
  for (int polls = 0;; polls++) {
    cudaError_t e = cudaEventQuery(g->slots[slot].ready);
    if (e == cudaSuccess)
      return FERRY_OK;
    if (e != cudaErrorNotReady)
      return fy_cuda_fail(e, "waiting for a batch");
    if (fy_now() >= deadline)
      return fy_error(FERRY_ETIMEOUT, "CUDA: a batch's kernels did not finish in %d ms",
                      timeout_ms);
    /* the kernels take about a millisecond: yield first, then sleep briefly */
    if (polls < 32) {
      sched_yield();
    } else {
      struct timespec nap = {0, 50000};
      nanosleep(&nap, NULL);
    }
  }
}

extern "C" int fy_gpu_release(fy_gpu *g, int slot, void *stream) {
  struct fy_gpu::slot *s = &g->slots[slot];
  CU(cudaEventRecord(s->released, (cudaStream_t)stream), "recording the release");
  s->release_pending = 1;
  return FERRY_OK;
}

extern "C" void *fy_gpu_stream(fy_gpu *g) { return g->stream; }
