/* hash_queue.c — the GPU hashes' batching queue (fy_gpu_hash_queue, see
 * hash_gpu.h): many decoding threads, one GPU. Producers copy decoded
 * images into one of two staging buffers; the queue's thread takes the
 * full buffer (producers go on in the other), uploads it in one transfer
 * and hashes it, and answers every image through `done`.
 *
 * Plain C with pthreads, for either backend: a CUDA device (pinned
 * staging, fy_gpu_hasher_run_pinned; without CUDA hash_gpu_stub.c says
 * "built without CUDA") or an OpenCL one, device FERRY_DEVICE_OPENCL + N
 * (staging in ordinary memory, fy_cl_hasher_run_packed). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/hash_gpu.h"
#include "cuda/hash_plan.h"
#include "opencl/opencl.h"

#define STAGE_BYTES ((size_t)256 << 20)

typedef struct staged {
  size_t id, off;
  int w, h, ch;
} staged;

typedef struct stage_buf {
  void *mem; /* pinned */
  size_t cap, used;
  staged *items; /* up to the queue's batch */
  int n;
  int copying; /* producers still copying into it */
} stage_buf;

struct fy_gpu_hash_queue {
  fy_gpu_hasher *g; /* CUDA, or */
  fy_cl_hasher *cl; /* OpenCL */
  int device;       /* the CUDA device (cl: unused) */
  unsigned kinds;
  int s, batch, producers, done_producers, blocked;
  fy_gpu_hash_done done;
  void *user;
  pthread_mutex_t mu;
  pthread_cond_t space, work;
  pthread_t thread;
  stage_buf buf[2];
  int cur; /* the buffer producers fill */
  int err;
  fy_gpu_hash_image *im; /* the thread's: one batch */
  ferry_hash_result *res;
  fy_gpu_hash_stats stats;
};

/* ------------------------------------------------- the two backends */

static int stage_grow(fy_gpu_hash_queue *q, void **p, size_t *cap, size_t n) {
  if (!q->cl)
    return fy_gpu_hash_pinned_grow(q->device, p, cap, n);
  if (n <= *cap)
    return FERRY_OK;
  free(*p);
  *cap = 0;
  if (!(*p = malloc(n)))
    return fy_error(FERRY_ENOMEM, "OpenCL hash: out of memory for %zu bytes of staging", n);
  *cap = n;
  return FERRY_OK;
}

static void stage_free(fy_gpu_hash_queue *q, void *p) {
  if (q->cl)
    free(p);
  else
    fy_gpu_hash_pinned_free(p);
}

static int run_batch(fy_gpu_hash_queue *q, const stage_buf *b, int n) {
  if (q->cl)
    return fy_cl_hasher_run_packed(q->cl, b->mem, b->used, q->im, n, q->kinds, q->s, q->res);
  return fy_gpu_hasher_run_pinned(q->g, b->mem, b->used, q->im, n, q->kinds, q->s, q->res);
}

/* --------------------------------------------------------------- queue */

static int ready(const fy_gpu_hash_queue *q) {
  const stage_buf *b = &q->buf[q->cur];
  if (!b->n || b->copying)
    return 0;
  return b->n >= q->batch || q->blocked > 0 || q->done_producers >= q->producers;
}

static void *queue_thread(void *arg) {
  fy_gpu_hash_queue *q = arg;
  for (;;) {
    pthread_mutex_lock(&q->mu);
    while (!ready(q) &&
           !(q->done_producers >= q->producers && !q->buf[q->cur].n && !q->buf[q->cur].copying))
      pthread_cond_wait(&q->work, &q->mu);
    if (!q->buf[q->cur].n) {
      pthread_mutex_unlock(&q->mu);
      break;
    }
    stage_buf *b = &q->buf[q->cur];
    q->cur ^= 1; /* producers go on in the other buffer (idle: this thread is synchronous) */
    pthread_cond_broadcast(&q->space);
    pthread_mutex_unlock(&q->mu);

    double t0 = fy_now();
    const int n = b->n;
    memset(q->res, 0, (size_t)n * sizeof *q->res);
    for (int i = 0; i < n; i++) {
      const staged *it = &b->items[i];
      q->im[i] = (fy_gpu_hash_image){(const uint8_t *)b->mem + it->off, it->w, it->h, it->ch,
                                     (size_t)it->w * it->ch};
    }
    int rc = run_batch(q, b, n);
    const char *msg = rc ? ferry_last_error() : NULL;
    for (int i = 0; i < n; i++)
      q->done(q->user, b->items[i].id, rc, &q->res[i], msg);
    q->stats.batches++;
    q->stats.images += (size_t)n;
    q->stats.gpu_s += fy_now() - t0;
    pthread_mutex_lock(&q->mu);
    if (rc && !q->err)
      q->err = rc;
    b->n = 0;
    b->used = 0;
    pthread_cond_broadcast(&q->space);
    pthread_mutex_unlock(&q->mu);
  }
  return NULL;
}

static void queue_free(fy_gpu_hash_queue *q) {
  for (int k = 0; k < 2; k++) {
    stage_free(q, q->buf[k].mem);
    free(q->buf[k].items);
  }
  free(q->im);
  free(q->res);
  fy_gpu_hasher_free(q->g);
  fy_cl_hasher_free(q->cl);
  free(q);
}

int fy_gpu_hash_queue_new(int device, unsigned kinds, int hash_size, int batch, int producers,
                          fy_gpu_hash_done done, void *user, fy_gpu_hash_queue **out) {
  if (!out || !done || producers < 1)
    return fy_error(FERRY_EINVAL, "fy_gpu_hash_queue_new: bad arguments");
  *out = NULL;
  if (hash_size != 8 && hash_size != 16)
    return fy_error(FERRY_EINVAL, "GPU hash: hash size must be 8 or 16, not %d", hash_size);
  fy_gpu_hash_queue *q = calloc(1, sizeof *q);
  if (!q)
    return fy_error(FERRY_ENOMEM, "GPU hash: out of memory");
  q->device = device;
  q->batch = batch > 0 ? batch : 32;
  int rc = FERRY_DEVICE_IS_OPENCL(device) ? fy_cl_hasher_new(device - FERRY_DEVICE_OPENCL, &q->cl)
                                          : fy_gpu_hasher_new(device, &q->g);
  for (int k = 0; k < 2 && !rc; k++) /* OpenCL: a block and its scratch are one buffer */
    rc = stage_grow(q, &q->buf[k].mem, &q->buf[k].cap, q->cl ? STAGE_BYTES / 4 : STAGE_BYTES);
  if (!rc) {
    q->buf[0].items = malloc((size_t)q->batch * sizeof(staged));
    q->buf[1].items = malloc((size_t)q->batch * sizeof(staged));
    q->im = malloc((size_t)q->batch * sizeof *q->im);
    q->res = malloc((size_t)q->batch * sizeof *q->res);
    if (!q->buf[0].items || !q->buf[1].items || !q->im || !q->res)
      rc = fy_error(FERRY_ENOMEM, "GPU hash: out of memory");
  }
  if (rc) {
    queue_free(q);
    return rc;
  }
  q->kinds = kinds;
  q->s = hash_size;
  q->producers = producers;
  q->done = done;
  q->user = user;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->space, NULL);
  pthread_cond_init(&q->work, NULL);
  if (pthread_create(&q->thread, NULL, queue_thread, q)) {
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->space);
    pthread_cond_destroy(&q->work);
    queue_free(q);
    return fy_error(FERRY_ENOMEM, "GPU hash: cannot start the queue thread");
  }
  *out = q;
  return FERRY_OK;
}

int fy_gpu_hash_queue_submit(fy_gpu_hash_queue *q, size_t id, const fy_gpu_hash_image *im) {
  if (!q || fy_hash_plan_check_images(im, 1, q->s))
    return q ? FERRY_EINVAL : fy_error(FERRY_EINVAL, "GPU hash queue: NULL");
  const size_t row = (size_t)im->width * im->channels, len = fy_hp_align256(row * im->height);
  pthread_mutex_lock(&q->mu);
  stage_buf *b;
  for (;;) {
    b = &q->buf[q->cur];
    if (b->n < q->batch && b->used + len <= b->cap)
      break;
    if (!b->n && !b->copying) { /* larger than a whole buffer: grow it */
      int rc = stage_grow(q, &b->mem, &b->cap, len);
      if (rc) {
        pthread_mutex_unlock(&q->mu);
        return rc;
      }
      break;
    }
    q->blocked++;
    pthread_cond_signal(&q->work);
    pthread_cond_wait(&q->space, &q->mu);
    q->blocked--;
  }
  const size_t off = b->used;
  b->used += len;
  b->items[b->n++] = (staged){id, off, im->width, im->height, im->channels};
  b->copying++;
  pthread_mutex_unlock(&q->mu);
  uint8_t *dst = (uint8_t *)b->mem + off; /* packed rows */
  for (int y = 0; y < im->height; y++)
    memcpy(dst + (size_t)y * row, im->data + (size_t)y * im->pitch, row);
  pthread_mutex_lock(&q->mu);
  b->copying--;
  pthread_cond_signal(&q->work);
  pthread_mutex_unlock(&q->mu);
  return FERRY_OK;
}

void fy_gpu_hash_queue_producer_done(fy_gpu_hash_queue *q) {
  pthread_mutex_lock(&q->mu);
  q->done_producers++;
  pthread_cond_signal(&q->work);
  pthread_mutex_unlock(&q->mu);
}

int fy_gpu_hash_queue_finish(fy_gpu_hash_queue *q, fy_gpu_hash_stats *st) {
  if (!q)
    return FERRY_OK;
  pthread_mutex_lock(&q->mu);
  q->done_producers = q->producers; /* whoever did not say so is done too */
  pthread_cond_signal(&q->work);
  pthread_mutex_unlock(&q->mu);
  pthread_join(q->thread, NULL);
  int rc = q->err;
  if (st)
    *st = q->stats;
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->space);
  pthread_cond_destroy(&q->work);
  queue_free(q);
  return rc;
}
