/* hamming_cl.c — the all-pairs and top-k Hamming search on an OpenCL
 * device (kernels: hamming.cl, embedded at build time).
 *
 * The codes are uploaded once. The upper triangle of the pair matrix is
 * cut into chunks of query rows (each a launch of work-groups of query rows
 * by blocks of columns); pairs within the threshold go to a bounded output
 * buffer through one atomic counter that goes past its end only when the
 * buffer overflowed, so such a chunk is known and re-run in halves (rows,
 * then columns, down to one pair): no pair is lost and device memory stays
 * bounded. ferry_hamming_pairs's order is restored by sorting on the host,
 * so the result equals the CPU search's.
 *
 * The context and the built programs are the process's, shared
 * (cl_program_cache.c); the queue, kernel and buffers are the search's, so
 * searches on OpenCL run at once. */
#include "opencl/cl_program_cache.h"
#include "search/search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_BUFFER_PAIRS = 4 << 20 };

typedef struct search {
  fy_cl_ctx c;
  cl_program prog;
  cl_kernel kern;
  cl_mem codes, out, count;
  size_t local;  /* work-group size (the program's FY_LOCAL) */
  size_t rows;   /* query rows per work-item (FY_ROWS) */
  size_t cap;    /* pairs the output buffer holds */
  uint32_t cols; /* columns per work-group */
  int words;
  uint32_t t;
  ferry_pair *host; /* cap pairs read back */
  /* where the pairs go */
  void (*sink)(const ferry_pair *, size_t, void *);
  void *user;
  ferry_pair *list; /* no sink: all of them */
  size_t n_list, list_cap, max_pairs;
  size_t reruns;
} search;

static void search_close(search *s) {
  const fy_cl_api *cl = s->c.cl;
  if (cl) {
    if (s->kern)
      cl->ReleaseKernel(s->kern);
    if (s->prog)
      cl->ReleaseProgram(s->prog);
    if (s->codes)
      cl->ReleaseMemObject(s->codes);
    if (s->out)
      cl->ReleaseMemObject(s->out);
    if (s->count)
      cl->ReleaseMemObject(s->count);
  }
  fy_cl_close(&s->c);
  free(s->host);
}

/* Opens the device, builds the kernels for `words`, uploads the codes. */
static int search_open(search *s, int device, const uint64_t *codes, size_t n, int words,
                       int filter, const char *kernel) {
  int rc;
  if (device == FY_CL_DEVICE_ANY)
    device = fy_cl_default_device();
  rc = fy_cl_cache_open(device, &s->c);
  if (rc)
    return rc;
  const fy_cl_api *cl = s->c.cl;
  size_t local = 256;
  while (local > 1 && local > s->c.info.max_wg)
    local /= 2;
  s->local = local;
  s->words = words;
  s->rows = words == 1 ? 8 : 4; /* registers: 8 or 16 ulongs of queries */
  char opts[96];
  snprintf(opts, sizeof opts, "-DFY_WORDS=%d -DFY_LOCAL=%zu -DFY_ROWS=%zu -DFY_FILTER=%d", words,
           local, s->rows, filter);
  rc = fy_cl_cache_program(&s->c, FY_CL_PROG_HAMMING, opts, &s->prog);
  if (rc)
    return rc;
  cl_int st = CL_SUCCESS;
  s->kern = cl->CreateKernel(s->prog, kernel, &st);
  if (!s->kern)
    return fy_cl_fail(&s->c, kernel, st);
  /* no codes: one zero code (a buffer cannot be empty; codes may be NULL) */
  static const uint64_t none[4];
  size_t bytes = (n ? n : 1) * (size_t)words * sizeof *codes;
  s->codes = cl->CreateBuffer(s->c.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                              (void *)(n ? codes : none), &st);
  if (!s->codes) {
    char what[96];
    snprintf(what, sizeof what, "uploading %zu codes (%zu bytes)", n, bytes);
    return fy_cl_fail(&s->c, what, st);
  }
  return FERRY_OK;
}

static int set_args(search *s, uint32_t i0, uint32_t i1, uint32_t j0, uint32_t j1) {
  const fy_cl_api *cl = s->c.cl;
  uint32_t cap = (uint32_t)s->cap;
  cl_int st = CL_SUCCESS;
  st |= cl->SetKernelArg(s->kern, 0, sizeof s->codes, &s->codes);
  st |= cl->SetKernelArg(s->kern, 1, sizeof i0, &i0);
  st |= cl->SetKernelArg(s->kern, 2, sizeof i1, &i1);
  st |= cl->SetKernelArg(s->kern, 3, sizeof j0, &j0);
  st |= cl->SetKernelArg(s->kern, 4, sizeof j1, &j1);
  st |= cl->SetKernelArg(s->kern, 5, sizeof s->cols, &s->cols);
  st |= cl->SetKernelArg(s->kern, 6, sizeof s->t, &s->t);
  st |= cl->SetKernelArg(s->kern, 7, sizeof s->out, &s->out);
  st |= cl->SetKernelArg(s->kern, 8, sizeof cap, &cap);
  st |= cl->SetKernelArg(s->kern, 9, sizeof s->count, &s->count);
  return st == CL_SUCCESS ? FERRY_OK : fy_cl_fail(&s->c, "setting the search's arguments", st);
}

static int emit(search *s, const ferry_pair *p, size_t n) {
  if (!n)
    return FERRY_OK;
  if (s->sink) {
    s->sink(p, n, s->user);
    return FERRY_OK;
  }
  if (s->max_pairs && s->n_list + n > s->max_pairs)
    return fy_error(FERRY_ETOO_LARGE, "ferry_hamming_pairs: more than %zu pairs (max_pairs)",
                    s->max_pairs);
  ferry_pair *l = fy_grow(s->list, &s->list_cap, s->n_list + n, sizeof *l, 1024);
  if (!l)
    return fy_error(FERRY_ENOMEM, "ferry_hamming_pairs: out of memory for %zu pairs",
                    s->n_list + n);
  s->list = l;
  memcpy(l + s->n_list, p, n * sizeof *p);
  s->n_list += n;
  return FERRY_OK;
}

/* Pairs of rows [i0, i1) with columns [j0, j1): one launch, or halves
 * when the pairs could not fit (the kernel's counter stops once past the
 * buffer, so it cannot wrap). */
static int run_range(search *s, uint32_t i0, uint32_t i1, uint32_t j0, uint32_t j1) {
  if (i0 >= i1 || j0 >= j1 || j1 <= i0 + 1)
    return FERRY_OK;
  const fy_cl_api *cl = s->c.cl;
  int rc = set_args(s, i0, i1, j0, j1);
  if (rc)
    return rc;
  uint32_t zero = 0, found = 0;
  cl_int st =
      cl->EnqueueWriteBuffer(s->c.q, s->count, CL_FALSE, 0, sizeof zero, &zero, 0, NULL, NULL);
  if (st != CL_SUCCESS)
    return fy_cl_fail(&s->c, "clearing the pair counter", st);
  size_t rows = i1 - i0, per_group = s->local * s->rows;
  size_t global[2] = {(rows + per_group - 1) / per_group * s->local,
                      (j1 - j0 + s->cols - 1) / s->cols};
  size_t local[2] = {s->local, 1};
  st = cl->EnqueueNDRangeKernel(s->c.q, s->kern, 2, NULL, global, local, 0, NULL, NULL);
  if (st != CL_SUCCESS)
    return fy_cl_fail(&s->c, "running the pair search", st);
  st = cl->EnqueueReadBuffer(s->c.q, s->count, CL_TRUE, 0, sizeof found, &found, 0, NULL, NULL);
  if (st != CL_SUCCESS)
    return fy_cl_fail(&s->c, "reading the pair count", st);
  if (found > s->cap) { /* re-run in halves: rows, then columns */
    s->reruns++;
    if (i1 - i0 > 1) {
      uint32_t mid = i0 + (i1 - i0) / 2;
      rc = run_range(s, i0, mid, j0, j1);
      return rc ? rc : run_range(s, mid, i1, j0, j1);
    }
    uint32_t mid = j0 + (j1 - j0) / 2;
    rc = run_range(s, i0, i1, j0, mid);
    return rc ? rc : run_range(s, i0, i1, mid, j1);
  }
  if (!found)
    return FERRY_OK;
  st = cl->EnqueueReadBuffer(s->c.q, s->out, CL_TRUE, 0, found * sizeof *s->host, s->host, 0, NULL,
                             NULL);
  if (st != CL_SUCCESS)
    return fy_cl_fail(&s->c, "reading the pairs", st);
  return emit(s, s->host, found);
}

static int pairs_run(search *s, int device, const uint64_t *codes, size_t n, int words, int t,
                     size_t buffer_pairs) {
  if (!codes && n)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: NULL argument");
  if (words != 1 && words != 4)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: words must be 1 or 4, not %d", words);
  if (n >= UINT32_MAX)
    return fy_error(FERRY_ETOO_LARGE, "ferry_hamming_pairs: %zu codes (at most 2^32 - 2)", n);
  if (t < 0 || t > 64 * words)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: threshold %d not in 0..%d", t, 64 * words);
  /* the lower bound first where it rarely passes for uniform codes: it is
   * 24 +- 2.4 bits a word (each bit of lo | hi is set with chance 3/4) */
  int filter = t <= 20 * words;
  int rc = search_open(s, device, codes, n, words, filter, "fy_hamming_pairs");
  if (rc || n < 2)
    return rc;
  const fy_cl_api *cl = s->c.cl;
  s->t = (uint32_t)t;
  s->cols = words == 1 ? 4096 : 2048;
  size_t cap = buffer_pairs ? buffer_pairs : DEFAULT_BUFFER_PAIRS;
  if (s->c.info.max_alloc && cap > s->c.info.max_alloc / sizeof(ferry_pair))
    cap = s->c.info.max_alloc / sizeof(ferry_pair);
  if (cap > UINT32_MAX / 2)
    cap = UINT32_MAX / 2;
  s->cap = cap ? cap : 1;
  cl_int st = CL_SUCCESS;
  s->out = cl->CreateBuffer(s->c.ctx, CL_MEM_WRITE_ONLY, s->cap * sizeof(ferry_pair), NULL, &st);
  if (!s->out)
    return fy_cl_fail(&s->c, "allocating the pair buffer", st);
  s->count = cl->CreateBuffer(s->c.ctx, CL_MEM_READ_WRITE, sizeof(uint32_t), NULL, &st);
  if (!s->count)
    return fy_cl_fail(&s->c, "allocating the pair counter", st);
  s->host = malloc(s->cap * sizeof *s->host);
  if (!s->host)
    return fy_error(FERRY_ENOMEM, "ferry_hamming_pairs: out of memory for the pair buffer");
  /* chunks of rows: about 2^34 pairs looked at per launch (a GPU), 2^25 (a CPU) */
  double per = s->c.info.gpu ? (double)(1ull << 34) : (double)(1u << 25);
  size_t per_group = s->local * s->rows;
  for (size_t i0 = 0; i0 + 1 < n && !rc;) {
    size_t rows = (size_t)(per / (double)(n - i0));
    rows = (rows + per_group - 1) / per_group * per_group;
    if (rows < per_group)
      rows = per_group;
    size_t i1 = i0 + rows < n ? i0 + rows : n;
    rc = run_range(s, (uint32_t)i0, (uint32_t)i1, (uint32_t)(i0 + 1), (uint32_t)n);
    i0 = i1;
  }
  return rc;
}

int fy_cl_hamming_pairs(int device, const uint64_t *codes, size_t n, int words, int t,
                        size_t max_pairs, size_t buffer_pairs, ferry_pair **pairs, size_t *count,
                        size_t *reruns) {
  if (reruns)
    *reruns = 0;
  if (!pairs || !count)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: NULL argument");
  *pairs = NULL;
  *count = 0;
  search s;
  memset(&s, 0, sizeof s);
  s.max_pairs = max_pairs;
  int rc = pairs_run(&s, device, codes, n, words, t, buffer_pairs);
  if (reruns)
    *reruns = s.reruns;
  search_close(&s);
  if (rc) {
    free(s.list);
    return rc;
  }
  if (s.n_list)
    qsort(s.list, s.n_list, sizeof *s.list, fy_pair_cmp);
  *pairs = s.list;
  *count = s.n_list;
  return FERRY_OK;
}

int fy_cl_hamming_pairs_each(int device, const uint64_t *codes, size_t n, int words, int t,
                             size_t buffer_pairs,
                             void (*sink)(const ferry_pair *pairs, size_t n, void *user),
                             void *user) {
  if (!sink)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: NULL sink");
  search s;
  memset(&s, 0, sizeof s);
  s.sink = sink;
  s.user = user;
  int rc = pairs_run(&s, device, codes, n, words, t, buffer_pairs);
  search_close(&s);
  return rc;
}

int fy_cl_hamming_topk(int device, const uint64_t *codes, size_t n, int words, int k,
                       ferry_neighbor *out) {
  if (k < 1 || k > 32)
    return fy_error(FERRY_EUNSUPPORTED,
                    "ferry_hamming_topk: k = %d on OpenCL (the OpenCL search keeps at most 32 "
                    "neighbours; use the CPU)",
                    k);
  if (words != 1 && words != 4)
    return fy_error(FERRY_EINVAL, "ferry_hamming_topk: words must be 1 or 4, not %d", words);
  if (!out || (!codes && n))
    return fy_error(FERRY_EINVAL, "ferry_hamming_topk: NULL argument");
  search s;
  memset(&s, 0, sizeof s);
  int rc = search_open(&s, device, codes, n, words, 0, "fy_hamming_topk");
  if (rc || n == 0) {
    search_close(&s);
    return rc;
  }
  const fy_cl_api *cl = s.c.cl;
  size_t chunk = (size_t)((s.c.info.gpu ? (double)(1u << 28) : (double)(1u << 24)) / (double)n);
  chunk = (chunk + s.local - 1) / s.local * s.local;
  if (chunk < s.local)
    chunk = s.local;
  if (chunk > n)
    chunk = (n + s.local - 1) / s.local * s.local;
  cl_int st = CL_SUCCESS;
  /* the kernel writes out[q * k + r] for q in the chunk: a buffer of n * k
   * would be simplest, but a chunk's rows are enough with an offset */
  s.out = cl->CreateBuffer(s.c.ctx, CL_MEM_WRITE_ONLY, n * (size_t)k * sizeof *out, NULL, &st);
  if (!s.out)
    rc = fy_cl_fail(&s.c, "allocating the neighbour buffer", st);
  uint32_t un = (uint32_t)n, uk = (uint32_t)k;
  for (size_t q0 = 0; q0 < n && !rc; q0 += chunk) {
    uint32_t a = (uint32_t)q0, b = (uint32_t)(q0 + chunk < n ? q0 + chunk : n);
    st = CL_SUCCESS;
    st |= cl->SetKernelArg(s.kern, 0, sizeof s.codes, &s.codes);
    st |= cl->SetKernelArg(s.kern, 1, sizeof un, &un);
    st |= cl->SetKernelArg(s.kern, 2, sizeof a, &a);
    st |= cl->SetKernelArg(s.kern, 3, sizeof b, &b);
    st |= cl->SetKernelArg(s.kern, 4, sizeof uk, &uk);
    st |= cl->SetKernelArg(s.kern, 5, sizeof s.out, &s.out);
    if (st != CL_SUCCESS) {
      rc = fy_cl_fail(&s.c, "setting the top-k arguments", st);
      break;
    }
    size_t global = (b - a + s.local - 1) / s.local * s.local;
    st = cl->EnqueueNDRangeKernel(s.c.q, s.kern, 1, NULL, &global, &s.local, 0, NULL, NULL);
    if (st != CL_SUCCESS)
      rc = fy_cl_fail(&s.c, "running the top-k search", st);
  }
  if (!rc) {
    st = cl->EnqueueReadBuffer(s.c.q, s.out, CL_TRUE, 0, n * (size_t)k * sizeof *out, out, 0, NULL,
                               NULL);
    if (st != CL_SUCCESS)
      rc = fy_cl_fail(&s.c, "reading the neighbours", st);
  }
  search_close(&s);
  return rc;
}
