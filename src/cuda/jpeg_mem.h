/* jpeg_mem.h — nvJPEG's device and pinned memory (jpeg_mem.cu): blocks
 * handed out only once the GPU is seen past their last use, no waiting in
 * a callback, everything freed at close. For the .cu files. */
#ifndef FY_JPEG_MEM_H
#define FY_JPEG_MEM_H

#include <cuda_runtime.h>
#include <stddef.h>

typedef struct fy_mem_cache fy_mem_cache;

/* A cache of device memory of `device` (pinned = 0) or pinned host memory
 * (pinned = 1); NULL when out of memory. */
extern "C" fy_mem_cache *fy_mem_cache_new(int device, int pinned);
/* nvJPEG's V2 allocator callbacks (ctx = the cache): 0 on success. */
extern "C" int fy_mem_cache_alloc(void *ctx, void **p, size_t n, cudaStream_t st);
extern "C" int fy_mem_cache_free(void *ctx, void *p, size_t n, cudaStream_t st);
/* Blocks held, and their bytes (tests, reports). */
extern "C" int fy_mem_cache_blocks(fy_mem_cache *c, size_t *bytes);
/* Frees every block (device ones on stream st): call once nothing uses
 * them. */
extern "C" void fy_mem_cache_destroy(fy_mem_cache *c, cudaStream_t st);

#endif
