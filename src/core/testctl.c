/* testctl.c — the test controls' table and its one reading of the
 * environment (testctl.h). */
#include "core/testctl.h"

#include "core/internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { TC_INT, TC_PAIR, TC_CHOICE, TC_TEXT } tc_kind;

typedef struct tc_row {
  const char *name;
  tc_kind kind;
  long lo, hi;                /* TC_INT, and TC_PAIR's first number */
  long lo2, hi2;              /* TC_PAIR's second number */
  const char *const *choices; /* TC_CHOICE, NULL-ended */
  const char *purpose;
} tc_row;

static const char *const isas[] = {"avx512", "avx2", "popcnt", "scalar", NULL};

static const tc_row rows[FY_TC_COUNT] = {
    [FY_TC_FAIL_ALLOC] = {"FERRY_FAIL_ALLOC", TC_INT, 0, LONG_MAX, 0, 0, NULL,
                          "the Nth allocation fails as if memory ran out; 0: none"},
    [FY_TC_FAIL_READ] = {"FERRY_FAIL_READ", TC_INT, 0, LONG_MAX, 0, 0, NULL,
                         "the file read that would carry byte N fails with EIO, once; 0: none"},
    [FY_TC_FAIL_WRITE] = {"FERRY_FAIL_WRITE", TC_INT, 0, LONG_MAX, 0, 0, NULL,
                          "the catalog journal or move write that would carry byte N fails with "
                          "ENOSPC, once; 0: none"},
    [FY_TC_STALL_AT] = {"FERRY_STALL_AT", TC_PAIR, 1, LONG_MAX, 1, 3600000, NULL,
                        "the Nth decode, JPEG engine call or block of a move's copy sleeps MS "
                        "milliseconds first, once: a stalled read for the loader's watchdog, a "
                        "copy caught half-way"},
    [FY_TC_DENY_DIR] = {"FERRY_DENY_DIR", TC_TEXT, 0, 0, 0, 0, NULL,
                        "listing a folder of this name fails as if permission were denied"},
    [FY_TC_SYSFS_ROOT] = {"FERRY_SYSFS_ROOT", TC_TEXT, 0, 0, 0, 0, NULL,
                          "sysfs (NUMA nodes, PCI devices) is read under this folder: a made-up "
                          "host"},
    [FY_TC_ISA] = {"FERRY_ISA", TC_CHOICE, 0, 0, 0, 0, isas,
                   "the Hamming search's CPU kernels capped at this instruction set"},
    [FY_TC_GPU_HAMMING_FILTER] = {"FERRY_GPU_HAMMING_FILTER", TC_INT, 0, 1, 0, 0, NULL,
                                  "the CUDA Hamming search's lower-bound filter forced off, 0, or "
                                  "on, 1"},
    [FY_TC_GPU_PAD] = {"FERRY_GPU_PAD", TC_INT, 0, 63, 0, 0, NULL,
                       "the GPU loader's JPEG engine chooses each call's size from the start: a "
                       "chunk of 64 - N images or more goes as one call of 64, padded"},
    [FY_TC_GPU_PAD_BUY] = {"FERRY_GPU_PAD_BUY", TC_INT, 1, 100000000, 0, 0, NULL,
                           "padding images a JPEG engine context decodes beyond the per-call "
                           "choice before it sets up its other states; default 20000"},
    [FY_TC_STREAM_MIN_MB] = {"FERRY_STREAM_MIN_MB", TC_INT, 0, 1 << 20, 0, 0, NULL,
                             "batch rings of this many MiB or more are filled with streaming "
                             "stores; 0: every ring; default: the last-level cache's size"},
    [FY_TC_HASH_ENGINE_FIRST] = {"FERRY_HASH_ENGINE_FIRST", TC_INT, 0, 1, 0, 0, NULL,
                                 "fast-mode hashing on a GPU: the CPU threads start only once "
                                 "every JPEG engine thread holds its first chunk, 1"},
};

typedef struct tc_value {
  atomic_int set;
  atomic_long a, b;
  _Atomic(char *) text;
} tc_value;

static tc_value values[FY_TC_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* A whole number lo..hi filling s[0, n) (n < 0: to the end); 0 when not. */
static int whole(const char *s, long n, long lo, long hi, long *out) {
  char buf[32];
  if (n >= 0) {
    if (n == 0 || (size_t)n >= sizeof buf)
      return 0;
    memcpy(buf, s, (size_t)n);
    buf[n] = '\0';
    s = buf;
  }
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi)
    return 0;
  *out = v;
  return 1;
}

const char *fy_tc_takes(fy_tc id, char *buf, size_t cap) {
  if ((unsigned)id >= FY_TC_COUNT || cap == 0)
    return NULL;
  const tc_row *r = &rows[id];
  size_t used = 0;
  switch (r->kind) {
  case TC_INT: snprintf(buf, cap, "a whole number %ld..%ld", r->lo, r->hi); break;
  case TC_PAIR:
    snprintf(buf, cap, "N:MS, N a whole number %ld..%ld and MS %ld..%ld", r->lo, r->hi, r->lo2,
             r->hi2);
    break;
  case TC_CHOICE:
    used = (size_t)snprintf(buf, cap, "one of");
    for (int i = 0; r->choices[i] && used < cap; i++)
      used += (size_t)snprintf(buf + used, cap - used, "%s %s", i ? "," : "", r->choices[i]);
    break;
  case TC_TEXT: snprintf(buf, cap, "a name"); break;
  }
  return buf;
}

/* The one wording of a refused value: "NAME=VALUE is not WHAT IT TAKES
 * (a test control: PURPOSE)". */
static void refused(fy_tc id, const char *text, char *msg, size_t cap) {
  char takes[160];
  snprintf(msg, cap, "%s=%s is not %s (a test control: %s)", rows[id].name, text,
           fy_tc_takes(id, takes, sizeof takes), rows[id].purpose);
}

/* Parses `text` for control id into *a, *b; 0 when it is not what the
 * control takes. */
static int parse(fy_tc id, const char *text, long *a, long *b) {
  const tc_row *r = &rows[id];
  int ok = 0;
  *a = *b = 0;
  switch (r->kind) {
  case TC_INT: ok = whole(text, -1, r->lo, r->hi, a); break;
  case TC_PAIR: {
    const char *colon = strchr(text, ':');
    ok = colon && whole(text, colon - text, r->lo, r->hi, a) &&
         whole(colon + 1, -1, r->lo2, r->hi2, b);
    break;
  }
  case TC_CHOICE:
    for (long i = 0; r->choices[i] && !ok; i++)
      if (!strcasecmp(text, r->choices[i])) {
        *a = i;
        ok = 1;
      }
    break;
  case TC_TEXT: ok = 1; break;
  }
  return ok;
}

/* Sets (text non-empty) or clears one control; 0 when text was refused. */
static int store(fy_tc id, const char *text) {
  tc_value *v = &values[id];
  long a = 0, b = 0;
  int ok = !text || !*text || parse(id, text, &a, &b);
  int set = ok && text && *text;
  char *copy = set && rows[id].kind == TC_TEXT ? strdup(text) : NULL;
  if (set && rows[id].kind == TC_TEXT && !copy)
    set = 0; /* out of memory: as if unset */
  atomic_store(&v->set, 0);
  atomic_store(&v->a, a);
  atomic_store(&v->b, b);
  free(atomic_exchange(&v->text, copy));
  atomic_store(&v->set, set);
  return ok;
}

static void read_environment(void) {
  for (int i = 0; i < FY_TC_COUNT; i++) {
    const char *e = getenv(rows[i].name);
    if (!store((fy_tc)i, e)) {
      char msg[512];
      refused((fy_tc)i, e, msg, sizeof msg);
      fy_log(FERRY_LOG_WARNING, "%s: ignored", msg);
    }
  }
}

/* The value of control id when it is set and of kind a or b, else NULL. */
static tc_value *value_of(fy_tc id, tc_kind a, tc_kind b) {
  if ((unsigned)id >= FY_TC_COUNT || (rows[id].kind != a && rows[id].kind != b))
    return NULL;
  pthread_once(&once, read_environment);
  tc_value *v = &values[id];
  return atomic_load_explicit(&v->set, memory_order_acquire) ? v : NULL;
}

int fy_tc_long(fy_tc id, long *value) {
  tc_value *v = value_of(id, TC_INT, TC_CHOICE);
  if (v)
    *value = atomic_load_explicit(&v->a, memory_order_relaxed);
  return v != NULL;
}

int fy_tc_pair(fy_tc id, long *a, long *b) {
  tc_value *v = value_of(id, TC_PAIR, TC_PAIR);
  if (v) {
    *a = atomic_load_explicit(&v->a, memory_order_relaxed);
    *b = atomic_load_explicit(&v->b, memory_order_relaxed);
  }
  return v != NULL;
}

const char *fy_tc_text(fy_tc id) {
  tc_value *v = value_of(id, TC_TEXT, TC_TEXT);
  return v ? atomic_load_explicit(&v->text, memory_order_relaxed) : NULL;
}

int fy_tc_set(fy_tc id, const char *text) {
  if ((unsigned)id >= FY_TC_COUNT)
    return fy_error(FERRY_EINVAL, "test control %d does not exist", (int)id);
  pthread_once(&once, read_environment);
  if (store(id, text))
    return FERRY_OK;
  char msg[512];
  refused(id, text, msg, sizeof msg);
  fy_log(FERRY_LOG_WARNING, "%s: ignored", msg);
  return fy_error(FERRY_EINVAL, "%s", msg);
}

const char *fy_tc_name(fy_tc id) { return (unsigned)id < FY_TC_COUNT ? rows[id].name : NULL; }

const char *fy_tc_purpose(fy_tc id) { return (unsigned)id < FY_TC_COUNT ? rows[id].purpose : NULL; }

int fy_tc_value_text(fy_tc id, char *buf, size_t cap) {
  if ((unsigned)id >= FY_TC_COUNT || cap == 0)
    return 0;
  long a = 0, b = 0;
  const char *t;
  switch (rows[id].kind) {
  case TC_INT:
    if (!fy_tc_long(id, &a))
      return 0;
    snprintf(buf, cap, "%ld", a);
    return 1;
  case TC_PAIR:
    if (!fy_tc_pair(id, &a, &b))
      return 0;
    snprintf(buf, cap, "%ld:%ld", a, b);
    return 1;
  case TC_CHOICE:
    if (!fy_tc_long(id, &a))
      return 0;
    snprintf(buf, cap, "%s", rows[id].choices[a]);
    return 1;
  case TC_TEXT:
    if (!(t = fy_tc_text(id)))
      return 0;
    snprintf(buf, cap, "%s", t);
    return 1;
  }
  return 0;
}
