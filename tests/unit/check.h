/* check.h — the unit tests' minimal harness: CHECK() records a failure with
 * its line and goes on; check_done() prints "N passed, N failed" and gives
 * the exit code. SKIP() says why a part did not run. */
#ifndef FY_CHECK_H
#define FY_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* atomic updates: callbacks run CHECK from worker threads */
static int check_passed, check_failed, check_skipped;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (cond) {                                                                                    \
      __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);                                      \
    } else {                                                                                       \
      __atomic_fetch_add(&check_failed, 1, __ATOMIC_RELAXED);                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
  do {                                                                                             \
    if (cond) {                                                                                    \
      __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);                                      \
    } else {                                                                                       \
      __atomic_fetch_add(&check_failed, 1, __ATOMIC_RELAXED);                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                     \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

#define SKIP(...)                                                                                  \
  do {                                                                                             \
    __atomic_fetch_add(&check_skipped, 1, __ATOMIC_RELAXED);                                       \
    printf("SKIPPED: ");                                                                           \
    printf(__VA_ARGS__);                                                                           \
    printf("\n");                                                                                  \
  } while (0)

static inline int check_done(void) {
  printf("%d passed, %d failed, %d skipped\n", check_passed, check_failed, check_skipped);
  return check_failed ? 1 : 0;
}

/* Directory of the shared corpus when it holds `probe` (a path inside it),
 * or NULL with a SKIP line naming what was looked for. */
static inline const char *check_corpus_with(const char *what, const char *probe) {
  const char *c = getenv("FERRY_CORPUS");
  FILE *f = NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", c ? c : "../shared/corpus", probe);
  if (c)
    f = fopen(path, "r");
  if (!f) {
    if (c)
      SKIP("%s: the shared corpus is not there (%s not found; FERRY_CORPUS=%s)", what, path, c);
    else
      SKIP("%s: FERRY_CORPUS is unset (ctest sets it to ../shared/corpus)", what);
    return NULL;
  }
  fclose(f);
  return c;
}

/* The corpus with its photos (the usual probe). */
static inline const char *check_corpus(const char *what) {
  return check_corpus_with(what, "photos/MANIFEST.csv");
}

/* A whole file in malloc()ed memory (NULL when it cannot be read). */
static inline void *check_slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  *n = 0;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *d = malloc(len > 0 ? (size_t)len + 1 : 1);
  *n = d && len > 0 ? fread(d, 1, (size_t)len, f) : 0;
  if (d)
    d[*n] = 0;
  fclose(f);
  return d;
}

/* The suite's tiers (tests/tiers.cmake): ctest sets FERRY_TEST_TIER=full for
 * the `slow` entries of `make test-full` (test_x.full: the whole corpus, the
 * largest searches); unset or any other value is the quick tier of `make
 * check` and `make test` (fixtures and tests/corpus_sample.txt). */
static inline int check_full(void) {
  const char *t = getenv("FERRY_TEST_TIER");
  return t && !strcmp(t, "full");
}

/* 1 in the full tier; else 0 with a SKIP line naming what runs only there. */
static inline int check_full_only(const char *what) {
  if (check_full())
    return 1;
  SKIP("%s: runs in make test-full (FERRY_TEST_TIER=full)", what);
  return 0;
}

/* A line as each part of a long test starts, with the seconds since its
 * first part: a test stopped by its timeout shows where it was. */
static inline void check_part(const char *name) {
  static double t0 = -1;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  if (t0 < 0)
    t0 = now;
  printf("-- %s (at %.1f s)\n", name, now - t0);
  fflush(stdout);
}

static inline const char *check_fixtures(void) {
  const char *f = getenv("FERRY_FIXTURES");
  return f ? f : "tests/fixtures";
}

#endif
