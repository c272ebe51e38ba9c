/* bus.c — reading memory-mapped files that may shrink under the mapping.
 * A pack shard truncated while a loader reads it makes the next access to
 * its lost pages raise SIGBUS, which kills the process. fy_bus_guard runs
 * a function with that signal turned into a return value in this thread:
 * a handler, installed once, jumps back to the guard when the thread is
 * inside one, and otherwise hands the signal to whatever handled it before
 * (by default: the process ends, as it would have). */
#include "core/internal.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

static _Thread_local sigjmp_buf *guard;
static struct sigaction previous;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void on_bus(int sig, siginfo_t *info, void *ctx) {
  sigjmp_buf *g = guard;
  if (g) {
    guard = NULL;
    siglongjmp(*g, 1);
  }
  /* not ours: as before this handler existed */
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) {
      previous.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);
  raise(SIGBUS);
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_bus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &previous);
}

int fy_bus_guard(void (*fn)(void *), void *arg) {
  pthread_once(&once, install);
  sigjmp_buf here;
  if (sigsetjmp(here, 1)) /* SIGBUS inside fn */
    return -1;
  guard = &here;
  fn(arg);
  guard = NULL;
  return 0;
}
