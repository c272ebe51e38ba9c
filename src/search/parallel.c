/* parallel.c — the search's thread helper: run a function on N threads
 * (the caller being one of them) and wait for all. */
#include "search/search.h"

#include <stdlib.h>

typedef struct job {
  void (*fn)(void *arg, int index);
  void *arg;
  int index;
} job;

static void *run(void *p) {
  job *j = p;
  j->fn(j->arg, j->index);
  return NULL;
}

int fy_search_threads(int option) {
  int n = option > 0 ? option : fy_num_cores();
  return n < 1 ? 1 : n > 1024 ? 1024 : n;
}

int fy_parallel(int threads, void (*fn)(void *arg, int index), void *arg) {
  if (threads <= 1) {
    fn(arg, 0);
    return FERRY_OK;
  }
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  job *jobs = calloc((size_t)threads, sizeof *jobs);
  int *started = calloc((size_t)threads, sizeof *started);
  if (!tid || !jobs || !started) {
    free(tid);
    free(jobs);
    free(started);
    fn(arg, 0); /* out of memory for threads: still do the work */
    return FERRY_OK;
  }
  for (int i = 1; i < threads; i++) {
    jobs[i] = (job){fn, arg, i};
    started[i] = pthread_create(&tid[i], NULL, run, &jobs[i]) == 0;
  }
  fn(arg, 0);
  for (int i = 1; i < threads; i++)
    if (started[i])
      pthread_join(tid[i], NULL);
  free(tid);
  free(jobs);
  free(started);
  return FERRY_OK;
}
