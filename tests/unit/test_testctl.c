/* test_testctl.c — the test controls (src/core/testctl.c), the one table of
 * FERRY_* environment variables the library reads besides its deployment
 * paths: read once, at the first use of any, by whichever thread comes
 * first; a malformed or out-of-range value warned about once, in the same
 * words for every kind (naming the variable, the value and what it takes)
 * and ignored; later changes of the environment not seen; fy_tc_set as
 * the environment would be; every name documented in docs/SECURITY.md. */
#include "check.h"
#include "core/internal.h"
#include "core/testctl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t logged_mu = PTHREAD_MUTEX_INITIALIZER;
static char logged[8192];
static int warnings;

static void keep_log(void *user, ferry_log_level level, const char *message) {
  (void)user;
  pthread_mutex_lock(&logged_mu);
  size_t n = strlen(logged);
  snprintf(logged + n, sizeof logged - n, "%s\n", message);
  warnings += level == FERRY_LOG_WARNING;
  pthread_mutex_unlock(&logged_mu);
}

static void forget_log(void) {
  logged[0] = '\0';
  warnings = 0;
}

/* Threads that make the first use at once: each sees the same values. */
static void *first_use(void *arg) {
  long *out = arg, v = -1, a = -1, b = -1;
  out[0] = fy_tc_long(FY_TC_GPU_PAD, &v) ? v : -1;
  out[1] = fy_tc_pair(FY_TC_STALL_AT, &a, &b) ? a * 100000 + b : -1;
  out[2] = fy_tc_long(FY_TC_ISA, &v) ? v : -1;
  return NULL;
}

static void test_read_once(void) {
  /* before any use: good values of each kind, and bad ones */
  setenv("FERRY_GPU_PAD", "48", 1);             /* whole number, in range */
  setenv("FERRY_STALL_AT", "5:300", 1);         /* N:MS */
  setenv("FERRY_ISA", "POPCNT", 1);             /* a choice, any case */
  setenv("FERRY_DENY_DIR", "locked", 1);        /* text */
  setenv("FERRY_GPU_PAD_BUY", "0", 1);          /* below its range */
  setenv("FERRY_GPU_HAMMING_FILTER", "yes", 1); /* not a number */
  setenv("FERRY_FAIL_READ", "12x", 1);          /* trailing junk */
  setenv("FERRY_STREAM_MIN_MB", "", 1);         /* empty: unset, no warning */
  unsetenv("FERRY_SYSFS_ROOT");
  forget_log();
  ferry_set_log(keep_log, NULL);
  pthread_t t[8];
  long seen[8][3];
  for (int i = 0; i < 8; i++)
    CHECK(pthread_create(&t[i], NULL, first_use, seen[i]) == 0);
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 8; i++)
    CHECK_MSG(seen[i][0] == 48 && seen[i][1] == 500300 && seen[i][2] == 2,
              "thread %d: pad %ld, stall %ld, isa %ld", i, seen[i][0], seen[i][1], seen[i][2]);
  /* the three bad values, each warned about once, in the one wording */
  CHECK_MSG(warnings == 3, "%d warnings:\n%s", warnings, logged);
  CHECK_MSG(strstr(logged, "FERRY_GPU_PAD_BUY=0 is not a whole number 1..100000000 (a test "
                           "control: ") != NULL,
            "%s", logged);
  CHECK_MSG(strstr(logged, "FERRY_GPU_HAMMING_FILTER=yes is not a whole number 0..1 (a test "
                           "control: ") != NULL,
            "%s", logged);
  CHECK_MSG(strstr(logged, "FERRY_FAIL_READ=12x is not a whole number 0..") != NULL, "%s", logged);
  CHECK(strstr(logged, "): ignored") != NULL);
  long v = -1, a, b;
  CHECK(!fy_tc_long(FY_TC_GPU_PAD_BUY, &v) && v == -1); /* refused: unset */
  CHECK(!fy_tc_long(FY_TC_GPU_HAMMING_FILTER, &v));
  CHECK(!fy_tc_long(FY_TC_STREAM_MIN_MB, &v));
  CHECK(fy_tc_text(FY_TC_DENY_DIR) && !strcmp(fy_tc_text(FY_TC_DENY_DIR), "locked"));
  CHECK(fy_tc_text(FY_TC_SYSFS_ROOT) == NULL);
  /* read once: the environment changed later is not seen */
  setenv("FERRY_GPU_PAD", "7", 1);
  unsetenv("FERRY_DENY_DIR");
  CHECK(fy_tc_long(FY_TC_GPU_PAD, &v) && v == 48);
  CHECK(fy_tc_text(FY_TC_DENY_DIR) != NULL);
  /* the wrong accessor for a control's kind answers "not set" */
  CHECK(!fy_tc_pair(FY_TC_GPU_PAD, &a, &b) && fy_tc_text(FY_TC_GPU_PAD) == NULL);
  CHECK(!fy_tc_long(FY_TC_DENY_DIR, &v) && !fy_tc_long(FY_TC_COUNT, &v));
  /* the values as doctor shows them */
  char text[64];
  CHECK(fy_tc_value_text(FY_TC_ISA, text, sizeof text) && !strcmp(text, "popcnt"));
  CHECK(fy_tc_value_text(FY_TC_STALL_AT, text, sizeof text) && !strcmp(text, "5:300"));
  CHECK(!fy_tc_value_text(FY_TC_GPU_PAD_BUY, text, sizeof text));
  ferry_set_log(NULL, NULL);
}

static void test_set(void) {
  ferry_set_log(keep_log, NULL);
  forget_log();
  long v = -1, a = 0, b = 0;
  CHECK(fy_tc_set(FY_TC_GPU_PAD, "63") == FERRY_OK && fy_tc_long(FY_TC_GPU_PAD, &v) && v == 63);
  /* a refused value: FERRY_EINVAL with the warning's words, the control unset */
  CHECK(fy_tc_set(FY_TC_GPU_PAD, "64") == FERRY_EINVAL && !fy_tc_long(FY_TC_GPU_PAD, &v));
  CHECK_MSG(strstr(ferry_last_error(), "FERRY_GPU_PAD=64 is not a whole number 0..63") != NULL,
            "%s", ferry_last_error());
  CHECK_MSG(warnings == 1 && strstr(logged, "FERRY_GPU_PAD=64 is not a whole number 0..63"), "%s",
            logged);
  static const char *bad_pairs[] = {"5", "5:", ":300", "0:300", "5:0", "5:3600001", "x:1"};
  for (size_t i = 0; i < sizeof bad_pairs / sizeof bad_pairs[0]; i++) {
    CHECK_MSG(fy_tc_set(FY_TC_STALL_AT, bad_pairs[i]) == FERRY_EINVAL, "%s", bad_pairs[i]);
    CHECK(strstr(ferry_last_error(), "is not N:MS, N a whole number 1..") != NULL);
  }
  CHECK(fy_tc_set(FY_TC_STALL_AT, "2:1") == FERRY_OK && fy_tc_pair(FY_TC_STALL_AT, &a, &b) &&
        a == 2 && b == 1);
  CHECK(fy_tc_set(FY_TC_ISA, "avx3") == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "FERRY_ISA=avx3 is not one of avx512, avx2, popcnt, scalar"),
            "%s", ferry_last_error());
  CHECK(fy_tc_set(FY_TC_ISA, "scalar") == FERRY_OK && fy_tc_long(FY_TC_ISA, &v) && v == 3);
  CHECK(fy_tc_set(FY_TC_SYSFS_ROOT, "/tmp/made-up") == FERRY_OK &&
        !strcmp(fy_tc_text(FY_TC_SYSFS_ROOT), "/tmp/made-up"));
  CHECK(fy_tc_set(FY_TC_SYSFS_ROOT, "") == FERRY_OK && fy_tc_text(FY_TC_SYSFS_ROOT) == NULL);
  for (int i = 0; i < FY_TC_COUNT; i++)
    CHECK(fy_tc_set((fy_tc)i, NULL) == FERRY_OK);
  CHECK(fy_tc_set(FY_TC_COUNT, "1") == FERRY_EINVAL);
  ferry_set_log(NULL, NULL);
}

/* Every row: a FERRY_ name of its own, what it takes, a purpose, and its
 * name in docs/SECURITY.md (where fault injection is documented). */
static void test_rows_documented(void) {
  const char *fixtures = getenv("FERRY_FIXTURES");
  char path[4096];
  snprintf(path, sizeof path, "%s/../../docs/SECURITY.md", fixtures ? fixtures : "tests/fixtures");
  size_t n = 0;
  char *doc = check_slurp(path, &n);
  if (!doc)
    SKIP("docs/SECURITY.md not found at %s: names not checked against it", path);
  for (int i = 0; i < FY_TC_COUNT; i++) {
    const char *name = fy_tc_name((fy_tc)i);
    char takes[160];
    CHECK_MSG(name && !strncmp(name, "FERRY_", 6), "row %d", i);
    CHECK(fy_tc_takes((fy_tc)i, takes, sizeof takes) && takes[0]);
    CHECK(fy_tc_purpose((fy_tc)i) && strlen(fy_tc_purpose((fy_tc)i)) > 10);
    for (int j = 0; j < i; j++)
      CHECK_MSG(strcmp(name, fy_tc_name((fy_tc)j)), "%s twice", name);
    char quoted[80];
    snprintf(quoted, sizeof quoted, "`%s", name);
    CHECK_MSG(!doc || strstr(doc, quoted), "%s is not in docs/SECURITY.md", name);
  }
  CHECK(fy_tc_name(FY_TC_COUNT) == NULL && fy_tc_purpose((fy_tc)-1) == NULL);
  free(doc);
}

int main(void) {
  test_read_once(); /* first: the environment is read at the first use */
  test_set();
  test_rows_documented();
  return check_done();
}
