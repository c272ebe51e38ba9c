/* cl_program_cache.h — the process's OpenCL contexts and built programs:
 * one context per device, one program per (device, source, build options),
 * shared by the hashers (hash_cl.c) and the Hamming searches (hamming_cl.c).
 *
 * Why: a context costs tens of milliseconds, a build of the hash program
 * 0.1-0.3 s on NVIDIA and seconds on PoCL; every hasher paid both.
 *
 * Shared, not taken in turns: OpenCL (1.1 and later; appendix A.2 of the 1.2
 * specification) makes every host call thread-safe except clSetKernelArg on
 * one kernel object. So a user gets the device's context and the built
 * program (a reference of its own to each) and makes its own command queue,
 * kernels and buffers: users of one device run at once, without a lock of
 * the cache. The cache's lock is held only to find or add an entry; a
 * program is built under its entry's own lock, so it is built once however
 * many users ask at once (they wait for that build), while builds of other
 * programs go on.
 *
 * Failures are not kept: a device that could not be opened, or a program
 * that did not build, is tried again by the next user, whose error (the
 * build log included, fy_cl_build's message) is its own (ferry's error is
 * per thread).
 *
 * References: the cache holds one to each context and program, each user
 * one of its own, released as it releases what it made itself (fy_cl_close,
 * clReleaseProgram). The cache's live for the process: no release at exit
 * (a driver's own exit-time teardown may already have run then, and the
 * process's end frees them anyway); fy_cl_cache_release drops them on
 * request (tests). */
#ifndef FY_CL_PROGRAM_CACHE_H
#define FY_CL_PROGRAM_CACHE_H

#include "opencl/opencl.h"

/* The programs the cache builds: which source (cl_sources.c). */
typedef enum fy_cl_prog {
  FY_CL_PROG_HAMMING, /* hamming.cl */
  FY_CL_PROG_HASH,    /* fy_cl_hash_source() */
} fy_cl_prog;

/* Opens device `device` (a global index) on its shared context: c->ctx a
 * reference of the caller's own, c->q a new in-order queue of its own;
 * fy_cl_close releases both. Errors as fy_cl_open's (*c zeroed then). */
int fy_cl_cache_open(int device, fy_cl_ctx *c);

/* Program `which` built with `options` (NULL: none) for c's device, c from
 * fy_cl_cache_open; built once per process. *out: a reference of the
 * caller's own (clReleaseProgram), NULL on an error. */
int fy_cl_cache_program(const fy_cl_ctx *c, fy_cl_prog which, const char *options, cl_program *out);

/* Tests: how many programs the cache has built (successful builds). */
long fy_cl_cache_builds(void);

/* Drops the cache's references (its contexts and programs; what users hold
 * stays valid); the next user opens and builds anew. Only while no other
 * thread is inside fy_cl_cache_open or fy_cl_cache_program. */
void fy_cl_cache_release(void);

#endif
