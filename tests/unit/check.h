/* check.h — the unit tests' minimal harness: CHECK() records a failure with
 * its line and goes on; check_done() prints "N passed, N failed" and gives
 * the exit code. SKIP() says why a part did not run. */
#ifndef FY_CHECK_H
#define FY_CHECK_H

#include <stdio.h>
#include <stdlib.h>

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

static inline const char *check_fixtures(void) {
  const char *f = getenv("FERRY_FIXTURES");
  return f ? f : "tests/fixtures";
}

#endif
