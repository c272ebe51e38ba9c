/* park_check.h — worker parking (the loader option park_workers, engine_ctl.h) on a
 * loader over `dir`'s class folders, on `device` (-1: the CPU): a consumer
 * that naps nap_ms after each batch of 8 leaves workers parked within
 * slow_s, one that takes batches at once brings them all back within
 * fast_s; every epoch keeps all its samples, and close() does not wait on
 * the parked workers. The source: the folders' whole JPEGs listed 24 times,
 * so that an epoch outlasts the ring. For test_loader.c (the CPU, and
 * TSan) and test_gpu.c (beside the JPEG engine). */
#ifndef FERRY_TEST_PARK_CHECK_H
#define FERRY_TEST_PARK_CHECK_H

#include "check.h"
#include "ferry.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double park_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One batch for the parking check: 0 or FERRY_END (the next epoch begun,
 * the last one's count checked), else the error. */
static int park_take(ferry_loader *L, int *epoch, int *images, int count) {
  ferry_batch *b;
  int rc = ferry_loader_next(L, &b);
  if (rc == FERRY_END) {
    CHECK_MSG(*images == count, "epoch %d: %d of %d images", *epoch, *images, count);
    *images = 0;
    return ferry_loader_start_epoch(L, ++*epoch);
  }
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  if (rc == FERRY_OK) {
    *images += b->count;
    ferry_loader_release(L, b);
  }
  return rc;
}

static void check_parking(const char *dir, int device, long nap_ms, double slow_s, double fast_s) {
  enum { REPEAT = 24, MAXN = 128, WORKERS = 4 };
  static char names[MAXN][4200];
  static const char *paths[MAXN * REPEAT];
  static int32_t labels[MAXN * REPEAT];
  int n = 0;
  for (int c = 0; c < 4; c++) {
    char sub[4160];
    snprintf(sub, sizeof sub, "%.4096s/class%d", dir, c);
    DIR *d = opendir(sub);
    struct dirent *e;
    while (d && (e = readdir(d)) && n < MAXN)
      if (strstr(e->d_name, ".jpg") && !strstr(e->d_name, "truncated")) /* all decode */
        snprintf(names[n++], sizeof names[0], "%s/%.30s", sub, e->d_name);
    if (d)
      closedir(d);
  }
  CHECK_MSG(n >= 20, "%d JPEGs under %s", n, dir);
  int count = 0;
  for (int r = 0; r < REPEAT; r++)
    for (int i = 0; i < n; i++, count++)
      paths[count] = names[i], labels[count] = i % 4;
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.batch_size = 8;
  o.width = o.height = 64;
  o.device = device;
  o.workers = WORKERS;
  o.shuffle = 1;
  o.park_workers = 1;
  ferry_loader *L;
  int rc = ferry_loader_open_paths(&o, paths, labels, count, &L);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  if (rc)
    return;
  CHECK(ferry_loader_num_workers(L) == WORKERS && ferry_loader_num_workers_active(L) == WORKERS);
  int active = WORKERS, epoch = 0, images = 0;
  double t0 = park_now();
  while (park_now() - t0 < slow_s && (active = ferry_loader_num_workers_active(L)) == WORKERS) {
    if (park_take(L, &epoch, &images, count))
      break;
    struct timespec nap = {nap_ms / 1000, (nap_ms % 1000) * 1000000};
    nanosleep(&nap, NULL);
  }
  double slow = park_now() - t0;
  CHECK_MSG(active < WORKERS,
            "a consumer napping %ld ms a batch: %d of %d workers active after "
            "%.1f s",
            nap_ms, active, WORKERS, slow);
  t0 = park_now();
  while (park_now() - t0 < fast_s && (active = ferry_loader_num_workers_active(L)) < WORKERS)
    if (park_take(L, &epoch, &images, count))
      break;
  CHECK_MSG(active == WORKERS, "a fast consumer: %d of %d workers active after %.1f s", active,
            WORKERS, park_now() - t0);
  printf("parking (device %d): workers parked after %.1f s of a consumer napping %ld ms, all %d "
         "back after %.1f s of a fast one; %d whole epochs of %d images\n",
         device, slow, nap_ms, WORKERS, park_now() - t0, epoch, count);
  t0 = park_now();
  ferry_loader_close(L);
  CHECK_MSG(park_now() - t0 < 2, "close took %.1f s", park_now() - t0);
}

#endif
