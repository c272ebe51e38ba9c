/* device_pool.h — work shared among host threads, one per listed device:
 * the one hand-out of the searches over several GPUs (hamming_multi.c: the
 * all-pairs chunks and the top-k query blocks). Plain C, pthreads.
 *
 *  - Items 0 .. items - 1 go out in order from one shared cursor: a thread
 *    takes the next when it has finished its last, so a faster or less
 *    loaded device takes more.
 *  - Each thread opens its device's share before its first item (open) and
 *    closes it after its last (close), whatever happened in between.
 *  - The first error is kept with the device named ("cuda:N: ..."); it
 *    raises the stop flag, which every other thread reads before taking its
 *    next item; every thread is joined before fy_pool_run returns. */
#ifndef FY_CUDA_DEVICE_POOL_H
#define FY_CUDA_DEVICE_POOL_H

#include "core/internal.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct fy_pool fy_pool;

/* One device's thread. */
typedef struct fy_pool_worker {
  fy_pool *pool;
  int index;   /* its place in the device list */
  int device;  /* the CUDA device number */
  void *state; /* what open made on the device; close is called when not NULL */
  size_t item; /* the item under way */
  pthread_t thread;
} fy_pool_worker;

struct fy_pool {
  /* the caller's */
  void *job;                                   /* what the callbacks work on */
  size_t items;                                /* how many items to hand out */
  int (*open)(fy_pool_worker *w);              /* before the first item; sets w->state */
  int (*work)(fy_pool_worker *w, size_t item); /* one item: FERRY_OK or a ferry error */
  void (*close)(fy_pool_worker *w);            /* after the last, w->state not NULL */
  /* the pool's (fy_pool_run sets them up) */
  atomic_size_t next;
  pthread_mutex_t mu; /* while the threads run, also the callbacks' for state they share */
  int stop, rc;
  char msg[1024];
};

/* Runs one thread per device (1 .. FERRY_MAX_SEARCH_DEVICES, a device may
 * come twice) until the items are done or one failed; returns FERRY_OK or
 * the first error, its message set on this thread. */
int fy_pool_run(fy_pool *p, const int *devices, int ndevices);

/* Keeps rc and the calling thread's message (ferry_last_error()),
 * prefixed "cuda:N: " when device >= 0, unless an error came first; stops
 * the other threads. From the callbacks (device -1 where the failure is not
 * the device's, as the job's own limits). */
void fy_pool_fail(fy_pool *p, int rc, int device);

/* Whether an error has stopped the pool. */
int fy_pool_stopped(fy_pool *p);

#endif
