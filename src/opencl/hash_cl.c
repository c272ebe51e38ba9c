/* hash_cl.c — compatible-mode hashes on an OpenCL device (kernels:
 * hash.cl), the host side: the same plan as CUDA's (cuda/hash_plan.c), with
 * the arenas' bases set to byte offsets, since OpenCL buffers have no
 * addresses a job could hold:
 *
 *   data: [the round's images | u8 scratch | double scratch]
 *   up:   [resampling tables | pass jobs | gray jobs | Haar jobs | hash jobs]
 *
 * A job's addresses are offsets into `data` (the tables' into `up`); each
 * kernel gets the buffer and the offset of its jobs. One in-order queue:
 * upload, the kernels, the hashes read back, one wait per round. The
 * context and the built program are the process's, shared
 * (cl_program_cache.c); the queue, kernels and buffers are the hasher's. */
#include "opencl/cl_program_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/hash_plan.h"
#include "hash/hash.h"

#define NGRID FY_HP_NGRID
#define LOCAL_PASS 256               /* work-group of the pass kernel (its local array) */
#define CHUNK_ITEMS (1ll << 26)      /* items per launch of the pass and Haar kernels */
#define BITS_LOCAL_BYTES 40000       /* the bits kernel's local memory, rounded up */
#define MAX_ROUND 4096               /* images per round */
#define MAX_BUDGET ((size_t)1 << 30) /* data bytes per round, at most */

struct fy_cl_hasher {
  fy_cl_ctx c;
  int open;
  cl_program prog;
  cl_kernel k_gray, k_pass, k_haar, k_bits;
  cl_mem data, up, out, plans;
  size_t data_cap, up_cap, out_cap;
  size_t pass_local, bits_local, budget;
  fy_hash_plan P;
  void *host_up, *host_in; /* the upload and (fy_cl_hasher_run) the staged images */
  size_t host_up_cap, host_in_cap;
  uint64_t *hout;
  size_t hout_cap;
};

void fy_cl_hasher_free(fy_cl_hasher *h) {
  if (!h)
    return;
  const fy_cl_api *cl = h->c.cl;
  if (cl) {
    if (h->c.q)
      cl->Finish(h->c.q);
    cl_kernel ks[] = {h->k_gray, h->k_pass, h->k_haar, h->k_bits};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
      if (ks[i])
        cl->ReleaseKernel(ks[i]);
    cl_mem ms[] = {h->data, h->up, h->out, h->plans};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
      if (ms[i])
        cl->ReleaseMemObject(ms[i]);
    if (h->prog)
      cl->ReleaseProgram(h->prog);
  }
  if (h->open)
    fy_cl_close(&h->c);
  fy_hash_plan_free(&h->P);
  free(h->host_up);
  free(h->host_in);
  free(h->hout);
  free(h);
}

static int kernel(fy_cl_hasher *h, const char *name, cl_kernel *k) {
  cl_int st = CL_SUCCESS;
  *k = h->c.cl->CreateKernel(h->prog, name, &st);
  return *k ? FERRY_OK : fy_cl_fail(&h->c, name, st);
}

int fy_cl_hasher_new(int device, fy_cl_hasher **out) {
  if (!out)
    return fy_error(FERRY_EINVAL, "fy_cl_hasher_new: NULL argument");
  *out = NULL;
  fy_cl_hasher *h = calloc(1, sizeof *h);
  if (!h)
    return fy_error(FERRY_ENOMEM, "OpenCL hash: out of memory");
  if (device == FY_CL_DEVICE_ANY)
    device = fy_cl_default_device();
  int rc = fy_cl_cache_open(device, &h->c);
  if (rc) {
    free(h);
    return rc;
  }
  h->open = 1;
  const fy_cl_device_info *d = &h->c.info;
  if (!d->fp64) {
    rc = fy_error(FERRY_EUNSUPPORTED,
                  "OpenCL device %d (%s) cannot hash: it has no double precision (cl_khr_fp64), "
                  "which the hashes' bit-exact DCT and wavelet need",
                  device, d->name);
    fy_cl_hasher_free(h);
    return rc;
  }
  if (d->max_wg < 64 || d->local_mem < BITS_LOCAL_BYTES) {
    rc = fy_error(FERRY_EUNSUPPORTED,
                  "OpenCL device %d (%s) cannot hash: it needs work-groups of 64 and %d bytes of "
                  "local memory (it has %zu and %llu)",
                  device, d->name, BITS_LOCAL_BYTES, d->max_wg, (unsigned long long)d->local_mem);
    fy_cl_hasher_free(h);
    return rc;
  }
  h->pass_local = LOCAL_PASS;
  while (h->pass_local > d->max_wg)
    h->pass_local /= 2; /* >= 64: still whole groups of 32 items */
  h->bits_local = d->max_wg < 256 ? d->max_wg : 256;
  h->budget = d->max_alloc / 2 < MAX_BUDGET ? (size_t)(d->max_alloc / 2) : MAX_BUDGET;
  char opts[64];
  snprintf(opts, sizeof opts, "-DFY_LOCAL_PASS=%zu", h->pass_local);
  rc = fy_cl_cache_program(&h->c, FY_CL_PROG_HASH, opts, &h->prog);
  if (!rc)
    rc = kernel(h, "fy_hash_gray", &h->k_gray);
  if (!rc)
    rc = kernel(h, "fy_hash_pass", &h->k_pass);
  if (!rc)
    rc = kernel(h, "fy_hash_haar", &h->k_haar);
  if (!rc)
    rc = kernel(h, "fy_hash_bits", &h->k_bits);
  fy_dct_plan plans[2];
  if (!rc && (fy_dct_plan_init(&plans[0], 32) || fy_dct_plan_init(&plans[1], 64)))
    rc = fy_error(FERRY_EINTERNAL, "OpenCL hash: DCT plan");
  if (!rc) {
    cl_int st = CL_SUCCESS;
    h->plans = h->c.cl->CreateBuffer(h->c.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                     sizeof plans, plans, &st);
    if (!h->plans)
      rc = fy_cl_fail(&h->c, "uploading the DCT plans", st);
  }
  if (rc) {
    fy_cl_hasher_free(h);
    return rc;
  }
  *out = h;
  return FERRY_OK;
}

/* *m holds at least n bytes (grown by a quarter; contents not kept). */
static int dgrow(fy_cl_hasher *h, cl_mem *m, size_t *cap, size_t n, const char *what) {
  if (n <= *cap && *m)
    return FERRY_OK;
  if (*m)
    h->c.cl->ReleaseMemObject(*m);
  *m = NULL;
  *cap = 0;
  size_t want = n + n / 4 + 4096;
  if (want > h->c.info.max_alloc && n <= h->c.info.max_alloc)
    want = n;
  cl_int st = CL_SUCCESS;
  *m = h->c.cl->CreateBuffer(h->c.ctx, CL_MEM_READ_WRITE, want, NULL, &st);
  if (!*m) {
    char msg[128];
    snprintf(msg, sizeof msg, "allocating %zu bytes for %s", want, what);
    return fy_cl_fail(&h->c, msg, st);
  }
  *cap = want;
  return FERRY_OK;
}

static int hgrow(void **p, size_t *cap, size_t n) {
  if (n <= *cap)
    return FERRY_OK;
  void *q = realloc(*p, n + n / 4);
  if (!q)
    return fy_error(FERRY_ENOMEM, "OpenCL hash: out of memory (%zu bytes)", n);
  *p = q;
  *cap = n + n / 4;
  return FERRY_OK;
}

/* Enqueues `kern` over items [0, total) in launches of CHUNK_ITEMS (arguments
 * up, off, njobs, total, base, data). */
static int run_items(fy_cl_hasher *h, cl_kernel kern, const char *what, size_t off, int njobs,
                     long long total) {
  const fy_cl_api *cl = h->c.cl;
  const size_t local = h->pass_local;
  cl_ulong o = off;
  int64_t tot = total;
  cl_int st = cl->SetKernelArg(kern, 0, sizeof h->up, &h->up);
  st |= cl->SetKernelArg(kern, 1, sizeof o, &o);
  st |= cl->SetKernelArg(kern, 2, sizeof njobs, &njobs);
  st |= cl->SetKernelArg(kern, 3, sizeof tot, &tot);
  st |= cl->SetKernelArg(kern, 5, sizeof h->data, &h->data);
  if (st != CL_SUCCESS)
    return fy_cl_fail(&h->c, what, st);
  for (long long base = 0; base < total; base += CHUNK_ITEMS) {
    long long items = total - base < CHUNK_ITEMS ? total - base : CHUNK_ITEMS;
    size_t global = ((size_t)items + local - 1) / local * local;
    int64_t b = base;
    st = cl->SetKernelArg(kern, 4, sizeof b, &b);
    if (st == CL_SUCCESS)
      st = cl->EnqueueNDRangeKernel(h->c.q, kern, 1, NULL, &global, &local, 0, NULL, NULL);
    if (st != CL_SUCCESS)
      return fy_cl_fail(&h->c, what, st);
  }
  return FERRY_OK;
}

/* One round: images whose data are offsets into `data` (already there);
 * scratch from scratch_off on. */
static int run_round(fy_cl_hasher *h, const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                     size_t scratch_off, ferry_hash_result *out) {
  const fy_cl_api *cl = h->c.cl;
  fy_hash_plan *P = &h->P;
  P->u8_base = P->dbl_base = P->tab_base = 0;
  int rc = fy_hash_plan_all(P, im, n, kinds, s);
  if (rc)
    return rc;
  const size_t u8b = fy_hp_align256(P->u8_bytes), dblb = P->dbl_bytes;
  if (scratch_off + u8b + dblb > h->data_cap) /* the callers sized it (round_scratch) */
    return fy_error(FERRY_EINTERNAL, "OpenCL hash: scratch not sized");
  P->u8_base = scratch_off;
  P->dbl_base = scratch_off + u8b;
  if ((rc = fy_hash_plan_all(P, im, n, kinds, s)) || (rc = fy_hash_plan_layout(P)))
    return rc;
  if ((rc = hgrow(&h->host_up, &h->host_up_cap, P->bytes)) ||
      (rc = dgrow(h, &h->up, &h->up_cap, P->bytes, "the jobs")))
    return rc;
  fy_hash_plan_write(P, h->host_up);
  const size_t outn = (size_t)n * NGRID * 4;
  if ((rc = hgrow((void **)&h->hout, &h->hout_cap, outn * sizeof *h->hout)) ||
      (rc = dgrow(h, &h->out, &h->out_cap, outn * sizeof *h->hout, "the hashes")))
    return rc;
  cl_int st =
      cl->EnqueueWriteBuffer(h->c.q, h->up, CL_FALSE, 0, P->bytes, h->host_up, 0, NULL, NULL);
  if (st != CL_SUCCESS)
    return fy_cl_fail(&h->c, "uploading the jobs", st);
  if (P->ngray) {
    cl_ulong o = P->off_g;
    size_t global[2] = {64 * 256, P->ngray}, local[2] = {256, 1};
    if (local[0] > h->c.info.max_wg)
      local[0] = h->pass_local;
    st = cl->SetKernelArg(h->k_gray, 0, sizeof h->up, &h->up);
    st |= cl->SetKernelArg(h->k_gray, 1, sizeof o, &o);
    st |= cl->SetKernelArg(h->k_gray, 2, sizeof h->data, &h->data);
    if (st == CL_SUCCESS)
      st = cl->EnqueueNDRangeKernel(h->c.q, h->k_gray, 2, NULL, global, local, 0, NULL, NULL);
    if (st != CL_SUCCESS)
      return fy_cl_fail(&h->c, "converting to grey", st);
  }
  for (int k = 0; k < 2; k++)
    if (P->tot[k] &&
        (rc = run_items(h, h->k_pass, "resampling", P->off_p[k], (int)P->nstage[k], P->tot[k])))
      return rc;
  for (size_t k = 0; k < P->nsteps; k++)
    if ((rc = run_items(h, h->k_haar, "the Haar steps", P->off_w[k], (int)P->steps[k].n,
                        P->wtot[k])))
      return rc;
  cl_ulong o = P->off_h;
  st = cl->SetKernelArg(h->k_bits, 0, sizeof h->up, &h->up);
  st |= cl->SetKernelArg(h->k_bits, 1, sizeof o, &o);
  st |= cl->SetKernelArg(h->k_bits, 2, sizeof h->plans, &h->plans);
  st |= cl->SetKernelArg(h->k_bits, 3, sizeof h->data, &h->data);
  st |= cl->SetKernelArg(h->k_bits, 4, sizeof h->out, &h->out);
  size_t global = (size_t)n * h->bits_local, local = h->bits_local;
  if (st == CL_SUCCESS)
    st = cl->EnqueueNDRangeKernel(h->c.q, h->k_bits, 1, NULL, &global, &local, 0, NULL, NULL);
  if (st != CL_SUCCESS)
    return fy_cl_fail(&h->c, "thresholding the hashes", st);
  st = cl->EnqueueReadBuffer(h->c.q, h->out, CL_TRUE, 0, outn * sizeof *h->hout, h->hout, 0, NULL,
                             NULL);
  if (st != CL_SUCCESS)
    return fy_cl_fail(&h->c, "running the hash kernels", st);
  fy_hash_plan_results(im, n, kinds, s, h->hout, out);
  fy_hash_plan_reset(P);
  return FERRY_OK;
}

/* The scratch bytes a round of images needs (a sizing plan). */
static int round_scratch(fy_cl_hasher *h, const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                         size_t *bytes) {
  h->P.u8_base = h->P.dbl_base = h->P.tab_base = 0;
  int rc = fy_hash_plan_all(&h->P, im, n, kinds, s);
  *bytes = rc ? 0 : fy_hp_align256(h->P.u8_bytes) + h->P.dbl_bytes;
  fy_hash_plan_reset(&h->P);
  return rc;
}

/* Images as offsets into data: im[i].data = (const uint8_t *)offset. */
static const uint8_t *as_offset(size_t off) { return (const uint8_t *)(uintptr_t)off; }

int fy_cl_hasher_run(fy_cl_hasher *h, const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                     ferry_hash_result *out) {
  if (!h || (n && !out))
    return fy_error(FERRY_EINVAL, "fy_cl_hasher_run: NULL argument");
  int rc = fy_hash_plan_check_images(im, n, s);
  if (rc)
    return rc;
  kinds &= FY_GPU_HASH_KINDS;
  if (!kinds || !n)
    return FERRY_OK;
  fy_gpu_hash_image *dev = malloc((size_t)(n < MAX_ROUND ? n : MAX_ROUND) * sizeof *dev);
  if (!dev)
    return fy_error(FERRY_ENOMEM, "OpenCL hash: out of memory");
  for (int i0 = 0; i0 < n && !rc;) {
    size_t in_bytes = 0;
    const int m =
        fy_hash_plan_round(&h->P, im + i0, n - i0, kinds, s, 1, h->budget, MAX_ROUND, &in_bytes);
    if ((rc = hgrow(&h->host_in, &h->host_in_cap, in_bytes)))
      break;
    size_t o = 0, need = 0;
    for (int i = 0; i < m; i++) { /* staged as the CUDA path stages them: pitch kept */
      const size_t len = fy_hp_image_len(&im[i0 + i]);
      memcpy((char *)h->host_in + o, im[i0 + i].data, len);
      dev[i] = im[i0 + i];
      dev[i].data = as_offset(o);
      o += fy_hp_align256(len);
    }
    if ((rc = round_scratch(h, dev, m, kinds, s, &need)) ||
        (rc = dgrow(h, &h->data, &h->data_cap, o + need, "the images and scratch")))
      break;
    /* blocking: host_in is refilled for the next round */
    cl_int st =
        h->c.cl->EnqueueWriteBuffer(h->c.q, h->data, CL_TRUE, 0, o, h->host_in, 0, NULL, NULL);
    if (st != CL_SUCCESS) {
      rc = fy_cl_fail(&h->c, "uploading images", st);
      break;
    }
    rc = run_round(h, dev, m, kinds, s, o, out + i0);
    i0 += m;
  }
  free(dev);
  return rc;
}

int fy_cl_hasher_run_packed(fy_cl_hasher *h, const void *base, size_t bytes,
                            const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                            ferry_hash_result *out) {
  if (!h || (n && (!out || !im || !base)))
    return fy_error(FERRY_EINVAL, "fy_cl_hasher_run_packed: NULL argument");
  int rc = fy_hash_plan_check_images(im, n, s);
  if (rc)
    return rc;
  kinds &= FY_GPU_HASH_KINDS;
  if (!kinds || !n)
    return FERRY_OK;
  fy_gpu_hash_image *dev = malloc((size_t)n * sizeof *dev);
  if (!dev)
    return fy_error(FERRY_ENOMEM, "OpenCL hash: out of memory");
  /* the rounds' largest scratch first: the block is uploaded once and
   * must not move */
  const size_t scratch_off = fy_hp_align256(bytes);
  size_t most = 0;
  for (int i = 0; i < n; i++) {
    dev[i] = im[i];
    dev[i].data = as_offset((size_t)(im[i].data - (const uint8_t *)base));
  }
  for (int i0 = 0; i0 < n;) {
    size_t in_bytes = 0;
    const int m =
        fy_hash_plan_round(&h->P, dev + i0, n - i0, kinds, s, 0, h->budget, MAX_ROUND, &in_bytes);
    size_t need = 0;
    if ((rc = round_scratch(h, dev + i0, m, kinds, s, &need)))
      break;
    most = need > most ? need : most;
    i0 += m;
  }
  if (!rc)
    rc = dgrow(h, &h->data, &h->data_cap, scratch_off + most, "the images and scratch");
  if (!rc) {
    cl_int st =
        h->c.cl->EnqueueWriteBuffer(h->c.q, h->data, CL_FALSE, 0, bytes, base, 0, NULL, NULL);
    if (st != CL_SUCCESS)
      rc = fy_cl_fail(&h->c, "uploading images", st);
  }
  for (int i0 = 0; i0 < n && !rc;) {
    size_t in_bytes = 0;
    const int m =
        fy_hash_plan_round(&h->P, dev + i0, n - i0, kinds, s, 0, h->budget, MAX_ROUND, &in_bytes);
    rc = run_round(h, dev + i0, m, kinds, s, scratch_off, out + i0);
    i0 += m;
  }
  /* the caller reuses `base` when this returns: the upload must be done */
  if (h->c.q)
    h->c.cl->Finish(h->c.q);
  free(dev);
  return rc;
}
