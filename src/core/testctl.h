/* testctl.h — the test controls: the one table of the FERRY_* environment
 * variables the library reads besides its two deployment paths
 * (FERRY_NVJPEG_PATH: nvjpeg_find.c; FERRY_OPENCL_LIBRARY: cl_runtime.c).
 * Each is a fault-injection hook or a switch that lets a test reach a path
 * it could not otherwise reach on the machine at hand; none tunes a run.
 * A row gives the name, what values it takes and its purpose
 * (docs/SECURITY.md lists them; `ferry doctor` shows those set).
 *
 * The environment is read once, at the first use of any control, from any
 * thread; a value that is malformed or out of range is warned about, in
 * the same words for every control (naming the variable, the value and
 * what it takes), and ignored. Reads after that are lock-free. Unit tests
 * set a control in-process with fy_tc_set. No control may be added for a
 * tuning knob: an option the user needs goes into its component's options
 * (include/ferry.h); an experiment lives on a branch. */
#ifndef FY_TESTCTL_H
#define FY_TESTCTL_H

#include <stddef.h>

typedef enum fy_tc {
  FY_TC_FAIL_ALLOC,         /* N: the Nth allocation fails (buf.c) */
  FY_TC_FAIL_READ,          /* N: the file read carrying byte N fails with EIO (fault.c) */
  FY_TC_FAIL_WRITE,         /* N: the write carrying byte N fails with ENOSPC (fault.c) */
  FY_TC_STALL_AT,           /* N:MS: the Nth decode sleeps MS ms first (fault.c) */
  FY_TC_DENY_DIR,           /* NAME: folders of this name cannot be listed (fault.c) */
  FY_TC_SYSFS_ROOT,         /* DIR: sysfs read under DIR (numa.c) */
  FY_TC_ISA,                /* the Hamming search's CPU kernels capped (search/isa.c) */
  FY_TC_GPU_HAMMING_FILTER, /* 0|1: the CUDA search's lower-bound filter forced (hamming.cu) */
  FY_TC_GPU_PAD,            /* 0..63: the JPEG engine's per-call choice from the start (gpu.cu) */
  FY_TC_GPU_PAD_BUY,        /* N: padding images before a context splits its calls (gpu.cu) */
  FY_TC_STREAM_MIN_MB,      /* MB: batch rings this large use streaming stores (copy.c) */
  FY_TC_HASH_ENGINE_FIRST,  /* 0|1: the JPEG engine's threads claim before the cores (hash/) */
  FY_TC_COUNT
} fy_tc;

/* Whole-number and choice controls (a choice: the index of the name among
 * its choices): 1 and *value when set, 0 when not set (or refused). */
int fy_tc_long(fy_tc id, long *value);
/* A two-number control (N:MS): 1 and *a, *b when set, else 0. */
int fy_tc_pair(fy_tc id, long *a, long *b);
/* A text control: the value, or NULL when not set. */
const char *fy_tc_text(fy_tc id);

/* Unit tests: sets control `id` as if the environment held `text` (NULL:
 * unset), through the same checks and warning. FERRY_OK, or FERRY_EINVAL
 * (warned; the control is then unset). Not while other threads read it.
 * The fault points armed once per process (FAIL_ALLOC, FAIL_READ,
 * FAIL_WRITE, STALL_AT) take their first value from here and are re-armed
 * with their own setters (fy_fail_alloc_set, ...; internal.h). */
int fy_tc_set(fy_tc id, const char *text);

/* The table, for `ferry doctor` and tests: the variable's name, what it
 * takes ("a whole number 0..63") and its purpose; NULL for an id out of
 * range. */
const char *fy_tc_name(fy_tc id);
const char *fy_tc_takes(fy_tc id, char *buf, size_t cap);
const char *fy_tc_purpose(fy_tc id);
/* The value of a control that is set, as text (a choice by its name); 0
 * when it is not set. */
int fy_tc_value_text(fy_tc id, char *buf, size_t cap);

#endif
