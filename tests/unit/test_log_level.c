/* test_log_level.c — the library's log level (ferry_set_log_level, where
 * the FERRY_DEBUG and *_STATS environment switches were): INFO by default,
 * debug lines only at DEBUG, WARNING keeping warnings alone, a level that is
 * none of the three refused and named; a real debug line of the library
 * (the Hamming search's choice of method) only at DEBUG. */
#include "check.h"
#include "core/internal.h"

#include <stdint.h>
#include <string.h>

static char logged[8192];
static int seen[3];

static void keep_log(void *user, ferry_log_level level, const char *message) {
  (void)user;
  size_t n = strlen(logged);
  snprintf(logged + n, sizeof logged - n, "%d %s\n", (int)level, message);
  if ((unsigned)level < 3)
    seen[level]++;
}

static void forget(void) {
  logged[0] = '\0';
  memset(seen, 0, sizeof seen);
}

static void say_each(void) {
  fy_log(FERRY_LOG_DEBUG, "a debug line");
  fy_log(FERRY_LOG_INFO, "an info line");
  fy_log(FERRY_LOG_WARNING, "a warning");
}

static void test_levels(void) {
  ferry_set_log(keep_log, NULL);
  CHECK(ferry_get_log_level() == FERRY_LOG_INFO);
  CHECK(!fy_log_on(FERRY_LOG_DEBUG) && fy_log_on(FERRY_LOG_INFO) && fy_log_on(FERRY_LOG_WARNING));
  forget();
  say_each();
  CHECK_MSG(seen[0] == 0 && seen[1] == 1 && seen[2] == 1, "at info:\n%s", logged);
  CHECK(ferry_set_log_level(FERRY_LOG_DEBUG) == FERRY_OK && fy_log_on(FERRY_LOG_DEBUG));
  forget();
  say_each();
  CHECK_MSG(seen[0] == 1 && seen[1] == 1 && seen[2] == 1, "at debug:\n%s", logged);
  CHECK(strstr(logged, "0 a debug line") != NULL);
  CHECK(ferry_set_log_level(FERRY_LOG_WARNING) == FERRY_OK);
  forget();
  say_each();
  CHECK_MSG(seen[0] == 0 && seen[1] == 0 && seen[2] == 1, "at warning:\n%s", logged);
  /* a level that is none of the three: refused, named, the level kept */
  CHECK(ferry_set_log_level((ferry_log_level)7) == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "log level 7 is none of FERRY_LOG_DEBUG (0)") != NULL, "%s",
            ferry_last_error());
  CHECK(ferry_set_log_level((ferry_log_level)-1) == FERRY_EINVAL);
  CHECK(ferry_get_log_level() == FERRY_LOG_WARNING);
  CHECK(ferry_set_log_level(FERRY_LOG_INFO) == FERRY_OK);
  ferry_set_log(NULL, NULL);
}

/* 40,000 random 64-bit codes, threshold 4, the method left to ferry: it
 * times both ways and says so at DEBUG ("search: n ..."), never below. */
static int search_said(void) {
  enum { N = 40000 };
  static uint64_t codes[N];
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    codes[i] = x;
  }
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = 4;
  o.method = FERRY_SEARCH_AUTO;
  o.threads = 2;
  ferry_pair *pairs = NULL;
  size_t n = 0;
  forget();
  CHECK(ferry_hamming_pairs(codes, N, 1, &o, &pairs, &n) == FERRY_OK);
  ferry_pairs_free(pairs);
  return strstr(logged, "search: n 40000, t 4") != NULL;
}

static void test_library_debug_line(void) {
  ferry_set_log(keep_log, NULL);
  CHECK_MSG(!search_said(), "a debug line at info: %s", logged);
  ferry_set_log_level(FERRY_LOG_DEBUG);
  CHECK_MSG(search_said(), "no search line at debug: %s", logged);
  ferry_set_log_level(FERRY_LOG_INFO);
  ferry_set_log(NULL, NULL);
}

int main(void) {
  test_levels();
  test_library_debug_line();
  return check_done();
}
