/* log.c — the C library's messages in Python (ferry_set_log): the
 * warning-level ones (a notice: pin_memory unavailable, a shard's samples
 * without an image, ...) are queued here, from whichever thread says them,
 * without the GIL, and turned into ferry.FerryWarning by the Python layer
 * (ferry/_log.py: emit_notices) when a ferry call returns; info and debug
 * lines go to stderr as the library writes them. A full queue sends the
 * newer notices to stderr: none is lost. */
#include "ferry_py.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOTICES_MAX 256

static pthread_mutex_t notices_mu = PTHREAD_MUTEX_INITIALIZER;
static char *notices[NOTICES_MAX];
static int notices_n;

static void py_log(void *user, ferry_log_level level, const char *message) {
  (void)user;
  if (level == FERRY_LOG_WARNING) {
    char *copy = strdup(message);
    pthread_mutex_lock(&notices_mu);
    int queued = copy && notices_n < NOTICES_MAX;
    if (queued)
      notices[notices_n++] = copy;
    pthread_mutex_unlock(&notices_mu);
    if (queued)
      return;
    free(copy);
  }
  fprintf(stderr, "ferry: %s%s\n", level == FERRY_LOG_DEBUG ? "debug: " : "", message);
}

void fyp_log_install(void) { ferry_set_log(py_log, NULL); }

PyObject *py_take_notices(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  char *taken[NOTICES_MAX];
  pthread_mutex_lock(&notices_mu);
  int n = notices_n;
  memcpy(taken, notices, (size_t)n * sizeof *taken);
  notices_n = 0;
  pthread_mutex_unlock(&notices_mu);
  PyObject *out = PyList_New(0);
  for (int i = 0; i < n; i++) {
    PyObject *s = out ? PyUnicode_DecodeFSDefault(taken[i]) : NULL;
    if (s && PyList_Append(out, s) < 0)
      Py_CLEAR(out);
    Py_XDECREF(s);
    if (!s)
      Py_CLEAR(out);
    free(taken[i]);
  }
  return out;
}
