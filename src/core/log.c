/* log.c — the library's messages (ferry_set_log): to the host's function,
 * or to stderr. The one place in src/ that writes to stderr. */
#include "core/internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static ferry_log_fn log_fn;
static void *log_user;
static atomic_int log_least = FERRY_LOG_INFO;

void ferry_set_log(ferry_log_fn fn, void *user) {
  pthread_mutex_lock(&log_mu);
  log_fn = fn;
  log_user = fn ? user : NULL;
  pthread_mutex_unlock(&log_mu);
}

int ferry_set_log_level(ferry_log_level level) {
  if (level != FERRY_LOG_DEBUG && level != FERRY_LOG_INFO && level != FERRY_LOG_WARNING)
    return fy_error(FERRY_EINVAL,
                    "log level %d is none of FERRY_LOG_DEBUG (0), FERRY_LOG_INFO (1) and "
                    "FERRY_LOG_WARNING (2)",
                    (int)level);
  atomic_store(&log_least, (int)level);
  return FERRY_OK;
}

ferry_log_level ferry_get_log_level(void) { return (ferry_log_level)atomic_load(&log_least); }

int fy_log_on(ferry_log_level level) {
  return (int)level >= atomic_load_explicit(&log_least, memory_order_relaxed);
}

void fy_log(ferry_log_level level, const char *fmt, ...) {
  if (!fy_log_on(level))
    return;
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&log_mu);
  ferry_log_fn fn = log_fn;
  void *user = log_user;
  pthread_mutex_unlock(&log_mu);
  if (fn)
    fn(user, level, msg);
  else /* one call: lines of concurrent threads do not interleave */
    fprintf(stderr, "ferry: %s%s\n", level == FERRY_LOG_DEBUG ? "debug: " : "", msg);
}
