/* jpeg_mem.cu — the device and pinned memory nvJPEG works in (its
 * allocator callbacks, nvjpegCreateExV2).
 *
 * The hardware engine writes into its buffers when nvjpegDecodeBatched is
 * called, not in the order of the stream it is given (torchcodec measured
 * it on H100s with nvJPEG 12.3 to 13.2: a device-side wait before the call
 * does not hold the write back; a host wait does). A stream-ordered pool
 * hands out a block still in use by another stream's pending work and
 * lets a device-side dependency order the two: with the engine, that order
 * is not kept. So a block is handed out again only once the host has seen
 * the GPU pass the point where it was freed (cudaEventQuery), and no
 * callback ever waits (nvJPEG may hold its own locks while it calls us): a
 * block not yet free is simply not taken, a new one is allocated. New
 * device blocks come from a pool of their own (stream-ordered, no implicit
 * synchronisation); blocks go back only at close, since cudaFree and
 * cudaFreeHost wait for the whole device. nvJPEG's working set is small
 * and stable (its states' buffers), so the cache stops growing after the
 * first batches. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/jpeg_mem.h"

#define MAX_BLOCKS 4096 /* past it (never seen): plain stream-ordered calls */

struct fy_mem_cache {
  pthread_mutex_t mu;
  int pinned;
  cudaMemPool_t pool; /* device blocks */
  int have_pool;
  struct block {
    void *p;
    size_t size;
    cudaEvent_t freed; /* recorded on the freeing stream */
    int used, pending;
  } * b;
  int n, cap;
};

extern "C" fy_mem_cache *fy_mem_cache_new(int device, int pinned) {
  fy_mem_cache *c = (fy_mem_cache *)calloc(1, sizeof *c);
  if (!c)
    return NULL;
  pthread_mutex_init(&c->mu, NULL);
  c->pinned = pinned;
  if (!pinned) {
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    if (cudaMemPoolCreate(&c->pool, &props) == cudaSuccess) {
      c->have_pool = 1;
      int no = 0;
      uint64_t keep = UINT64_MAX;
      cudaMemPoolSetAttribute(c->pool, cudaMemPoolReuseFollowEventDependencies, &no);
      cudaMemPoolSetAttribute(c->pool, cudaMemPoolReuseAllowOpportunistic, &no);
      cudaMemPoolSetAttribute(c->pool, cudaMemPoolReuseAllowInternalDependencies, &no);
      cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
  }
  return c;
}

/* Whether block i's last free has been passed by the GPU (mu held). */
static int block_free(fy_mem_cache *c, int i) {
  struct fy_mem_cache::block *b = &c->b[i];
  if (b->used)
    return 0;
  if (b->pending && cudaEventQuery(b->freed) == cudaSuccess)
    b->pending = 0;
  return !b->pending;
}

static int fresh(fy_mem_cache *c, void **p, size_t n, cudaStream_t st) {
  if (c->pinned)
    return cudaHostAlloc(p, n, cudaHostAllocDefault) == cudaSuccess ? 0 : 1;
  if (c->have_pool)
    return cudaMallocFromPoolAsync(p, n, c->pool, st) == cudaSuccess ? 0 : 1;
  return cudaMallocAsync(p, n, st) == cudaSuccess ? 0 : 1;
}

extern "C" int fy_mem_cache_alloc(void *ctx, void **p, size_t n, cudaStream_t st) {
  fy_mem_cache *c = (fy_mem_cache *)ctx;
  *p = NULL;
  pthread_mutex_lock(&c->mu);
  int best = -1;
  for (int i = 0; i < c->n; i++)
    if (c->b[i].size >= n && (best < 0 || c->b[i].size < c->b[best].size) && block_free(c, i))
      best = i;
  if (best >= 0) {
    c->b[best].used = 1;
    *p = c->b[best].p;
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  if (c->n == c->cap && c->cap < MAX_BLOCKS) {
    int cap = c->cap ? c->cap * 2 : 64;
    void *nb = realloc(c->b, (size_t)cap * sizeof *c->b);
    if (nb) {
      c->b = (struct fy_mem_cache::block *)nb;
      c->cap = cap;
    }
  }
  int slot = -1;
  if (c->n < c->cap &&
      cudaEventCreateWithFlags(&c->b[c->n].freed, cudaEventDisableTiming) == cudaSuccess)
    slot = c->n++;
  if (slot >= 0) {
    c->b[slot].p = NULL;
    c->b[slot].size = n;
    c->b[slot].used = 1;
    c->b[slot].pending = 0;
  }
  pthread_mutex_unlock(&c->mu);
  int rc = fresh(c, p, n, st);
  pthread_mutex_lock(&c->mu);
  if (slot >= 0) {
    if (rc == 0) {
      c->b[slot].p = *p;
    } else { /* no memory: the entry stays, empty and never handed out */
      c->b[slot].size = 0;
      c->b[slot].used = 1;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

extern "C" int fy_mem_cache_free(void *ctx, void *p, size_t n, cudaStream_t st) {
  (void)n;
  fy_mem_cache *c = (fy_mem_cache *)ctx;
  if (!p)
    return 0;
  pthread_mutex_lock(&c->mu);
  for (int i = 0; i < c->n; i++)
    if (c->b[i].p == p && c->b[i].used) {
      c->b[i].pending = cudaEventRecord(c->b[i].freed, st) == cudaSuccess;
      if (!c->b[i].pending) { /* cannot tell when the GPU is past it: never reuse */
        pthread_mutex_unlock(&c->mu);
        return 0;
      }
      c->b[i].used = 0;
      pthread_mutex_unlock(&c->mu);
      return 0;
    }
  pthread_mutex_unlock(&c->mu);
  /* not one of ours (the cache was full when it was made) */
  if (c->pinned)
    return cudaFreeHost(p) == cudaSuccess ? 0 : 1;
  return cudaFreeAsync(p, st) == cudaSuccess ? 0 : 1;
}

extern "C" int fy_mem_cache_blocks(fy_mem_cache *c, size_t *bytes) {
  pthread_mutex_lock(&c->mu);
  int n = 0;
  size_t total = 0;
  for (int i = 0; i < c->n; i++)
    if (c->b[i].p) {
      n++;
      total += c->b[i].size;
    }
  pthread_mutex_unlock(&c->mu);
  if (bytes)
    *bytes = total;
  return n;
}

extern "C" void fy_mem_cache_destroy(fy_mem_cache *c, cudaStream_t st) {
  if (!c)
    return;
  for (int i = 0; i < c->n; i++) {
    if (c->b[i].pending)
      cudaEventSynchronize(c->b[i].freed);
    if (c->b[i].p) {
      if (c->pinned)
        cudaFreeHost(c->b[i].p);
      else
        cudaFreeAsync(c->b[i].p, st);
    }
    cudaEventDestroy(c->b[i].freed);
  }
  if (c->have_pool) {
    cudaStreamSynchronize(st);
    cudaMemPoolDestroy(c->pool);
  }
  free(c->b);
  pthread_mutex_destroy(&c->mu);
  free(c);
}
