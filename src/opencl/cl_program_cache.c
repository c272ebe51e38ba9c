/* cl_program_cache.c — the process's OpenCL contexts and built programs,
 * shared by the hashers and the searches (the rules: cl_program_cache.h). */
#include "opencl/cl_program_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct prog_entry {
  struct prog_entry *next;
  fy_cl_prog which;
  char *options;
  pthread_mutex_t build; /* held while building; guards prog */
  cl_program prog;       /* NULL until built */
} prog_entry;

typedef struct dev_entry {
  struct dev_entry *next;
  fy_cl_ctx c; /* the shared context (no queue: each user makes its own) */
  prog_entry *progs;
} dev_entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the lists, not the builds */
static dev_entry *devices;
static atomic_long builds;

int fy_cl_cache_open(int device, fy_cl_ctx *c) {
  memset(c, 0, sizeof *c);
  int rc = FERRY_OK;
  pthread_mutex_lock(&lock);
  dev_entry *d = devices;
  while (d && d->c.info.index != device)
    d = d->next;
  if (!d) {
    d = calloc(1, sizeof *d);
    if (!d)
      rc = fy_error(FERRY_ENOMEM, "OpenCL: out of memory");
    else if ((rc = fy_cl_open(device, &d->c))) {
      free(d);
      d = NULL;
    } else {
      d->c.cl->ReleaseCommandQueue(d->c.q);
      d->c.q = NULL;
      d->next = devices;
      devices = d;
    }
  }
  if (d) {
    *c = d->c;
    c->cl->RetainContext(c->ctx);
  }
  pthread_mutex_unlock(&lock);
  if (rc)
    return rc;
  cl_int st = CL_SUCCESS;
  c->q = c->cl->CreateCommandQueue(c->ctx, c->dev, 0, &st);
  if (!c->q) {
    rc = fy_cl_fail(c, "creating a command queue", st);
    fy_cl_close(c);
    memset(c, 0, sizeof *c);
  }
  return rc;
}

/* The entry of (which, options) on the device of context ctx, added when
 * missing; under `lock`. */
static int find_program(cl_context ctx, fy_cl_prog which, const char *options, prog_entry **out) {
  dev_entry *d = devices;
  while (d && d->c.ctx != ctx)
    d = d->next;
  if (!d)
    return fy_error(FERRY_EINTERNAL, "OpenCL: a program asked for on a context the cache did "
                                     "not open");
  prog_entry *p = d->progs;
  while (p && (p->which != which || strcmp(p->options, options)))
    p = p->next;
  if (!p) {
    size_t n = strlen(options) + 1;
    p = calloc(1, sizeof *p);
    if (!p || !(p->options = malloc(n))) {
      free(p);
      return fy_error(FERRY_ENOMEM, "OpenCL: out of memory");
    }
    memcpy(p->options, options, n);
    p->which = which;
    pthread_mutex_init(&p->build, NULL);
    p->next = d->progs;
    d->progs = p;
  }
  *out = p;
  return FERRY_OK;
}

static int build(const fy_cl_ctx *c, fy_cl_prog which, const char *options, cl_program *out) {
  fy_cl_ctx cc = *c; /* fy_cl_build takes a mutable one */
  if (which == FY_CL_PROG_HAMMING)
    return fy_cl_build(&cc, fy_cl_hamming_src, options, out);
  char *src = fy_cl_hash_source();
  if (!src)
    return fy_error(FERRY_ENOMEM, "OpenCL hash: out of memory");
  int rc = fy_cl_build(&cc, src, options, out);
  free(src);
  return rc;
}

int fy_cl_cache_program(const fy_cl_ctx *c, fy_cl_prog which, const char *options,
                        cl_program *out) {
  *out = NULL;
  if (!options)
    options = "";
  prog_entry *p = NULL;
  pthread_mutex_lock(&lock);
  int rc = find_program(c->ctx, which, options, &p);
  pthread_mutex_unlock(&lock);
  if (rc)
    return rc;
  pthread_mutex_lock(&p->build);
  if (!p->prog && !(rc = build(c, which, options, &p->prog)))
    atomic_fetch_add(&builds, 1);
  if (p->prog) {
    c->cl->RetainProgram(p->prog);
    *out = p->prog;
  }
  pthread_mutex_unlock(&p->build);
  return rc;
}

long fy_cl_cache_builds(void) { return atomic_load(&builds); }

void fy_cl_cache_release(void) {
  pthread_mutex_lock(&lock);
  dev_entry *d = devices;
  devices = NULL;
  pthread_mutex_unlock(&lock);
  while (d) {
    dev_entry *next = d->next;
    for (prog_entry *p = d->progs, *pn; p; p = pn) {
      pn = p->next;
      if (p->prog)
        d->c.cl->ReleaseProgram(p->prog);
      pthread_mutex_destroy(&p->build);
      free(p->options);
      free(p);
    }
    fy_cl_close(&d->c);
    free(d);
    d = next;
  }
}
