/* device_pool.c — work shared among one host thread per device (see
 * device_pool.h): the shared cursor, the first error, the stop flag. */
#include "cuda/device_pool.h"

#include <stdio.h>

void fy_pool_fail(fy_pool *p, int rc, int device) {
  const char *why = ferry_last_error();
  pthread_mutex_lock(&p->mu);
  if (!p->rc) {
    p->rc = rc;
    if (device >= 0)
      snprintf(p->msg, sizeof p->msg, "cuda:%d: %s", device, why);
    else
      snprintf(p->msg, sizeof p->msg, "%s", why);
  }
  __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&p->mu);
}

int fy_pool_stopped(fy_pool *p) { return __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE); }

static void *pool_thread(void *arg) {
  fy_pool_worker *w = arg;
  fy_pool *p = w->pool;
  int rc = p->open(w);
  while (!rc && !fy_pool_stopped(p)) {
    size_t k = atomic_fetch_add(&p->next, 1);
    if (k >= p->items)
      break;
    w->item = k;
    rc = p->work(w, k);
  }
  if (rc) /* before close: the message is this thread's last; a callback's own came first */
    fy_pool_fail(p, rc, w->device);
  if (w->state)
    p->close(w);
  return NULL;
}

int fy_pool_run(fy_pool *p, const int *devices, int ndevices) {
  fy_pool_worker w[FERRY_MAX_SEARCH_DEVICES];
  if (!devices || ndevices < 1 || ndevices > FERRY_MAX_SEARCH_DEVICES)
    return fy_error(FERRY_EINVAL, "device pool: %d devices (1..%d)", ndevices,
                    FERRY_MAX_SEARCH_DEVICES);
  atomic_init(&p->next, 0);
  pthread_mutex_init(&p->mu, NULL);
  p->stop = p->rc = 0;
  p->msg[0] = 0;
  int started = 0;
  for (; started < ndevices; started++) {
    w[started] = (fy_pool_worker){.pool = p, .index = started, .device = devices[started]};
    if (pthread_create(&w[started].thread, NULL, pool_thread, &w[started])) {
      fy_pool_fail(p,
                   fy_error(FERRY_ENOMEM, "GPU Hamming search: cannot start a thread for cuda:%d",
                            devices[started]),
                   -1);
      break;
    }
  }
  for (int d = 0; d < started; d++)
    pthread_join(w[d].thread, NULL);
  pthread_mutex_destroy(&p->mu);
  return p->rc ? fy_error(p->rc, "%s", p->msg) : FERRY_OK; /* the device's message, here */
}
