/* hash_plan.c — the GPU hashes' plan (see hash_plan.h): which kernel jobs
 * a round of images needs and where their data lives, as fy_resize_u8 and
 * wavelet.c would work on the CPU:
 *
 *  - per hash grid, fy_resize_u8's choice: a copy (Pillow's crop shortcut),
 *    one pass, horizontal-then-vertical, or vertical-then-horizontal when
 *    the height shrinks more than twice as much as the width; stage 0 jobs
 *    read the full-resolution L image, stage 1 jobs the intermediates; the
 *    tables are fy_resize_axis_table's (the CPU's own fixed-point weights);
 *  - wHash: wavedec2 down to 1 x 1, the approximation zeroed, waverec2,
 *    then wavedec2 to the hash size, one job per image per step;
 *  - one threshold job per image.
 *
 * Plain C: no CUDA here, so tests/unit/test_gpu_plan.c checks it anywhere. */
#include "cuda/hash_plan.h"

#include <stdlib.h>
#include <string.h>

#include "hash/hash.h"
#include "image/image.h"

#define MAX_CACHED 256 /* tables kept across rounds (cheap to rebuild) */

/* *p grown to hold `need` elements (doubling); NULL when out of memory
 * (*p is then unchanged). */
static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return p;
  size_t c = *cap ? *cap : 16;
  while (c < need)
    c *= 2;
  void *q = realloc(p, c * elem);
  if (q)
    *cap = c;
  return q;
}

#define PUSH(arr, n, cap, val)                                                                     \
  do {                                                                                             \
    void *q_ = grow((arr), &(cap), (n) + 1, sizeof *(arr));                                        \
    if (!q_)                                                                                       \
      return fy_error(FERRY_ENOMEM, "GPU hash: out of memory planning");                           \
    (arr) = q_;                                                                                    \
    (arr)[(n)++] = (val);                                                                          \
  } while (0)

static int floor_log2(int v) {
  int l = 0;
  while (v >> (l + 1))
    l++;
  return l;
}

static void table_free(fy_hp_table *t) {
  if (t)
    free(t->v);
  free(t);
}

/* A new table for in -> out pixels (in == -out: the identity). */
static int make_table(fy_hash_plan *P, int in, int out, fy_hp_table **res) {
  fy_hp_table *t = calloc(1, sizeof *t);
  if (!t)
    return fy_error(FERRY_ENOMEM, "hash: out of memory for a resampling table");
  t->in = in, t->out = out, t->off = -1;
  if (in < 0) { /* identity */
    t->taps = 1, t->first = 0, t->last = out;
    t->entries = (size_t)out * 2;
    if (!(t->v = malloc(t->entries * sizeof *t->v))) {
      table_free(t);
      return fy_error(FERRY_ENOMEM, "hash: out of memory for a resampling table");
    }
    for (int i = 0; i < out; i++)
      t->v[i] = i, t->v[out + i] = 1 << FY_HP_PREC;
    *res = t;
    return FERRY_OK;
  }
  double scale = (double)in / out;
  long cap = (long)out * ((long)(6.0 * (scale < 1 ? 1 : scale)) + 8);
  for (;;) {
    if (cap > (1l << 30)) {
      table_free(t);
      return fy_error(FERRY_ETOO_LARGE, "hash: resampling table %d -> %d too large", in, out);
    }
    int32_t *v = realloc(t->v, (size_t)cap * sizeof *v);
    if (!v) {
      table_free(t);
      return fy_error(FERRY_ENOMEM, "hash: out of memory for a resampling table");
    }
    t->v = v;
    fy_axis_table at;
    int rc = fy_resize_axis_table(FERRY_FILTER_LANCZOS, in, 0.0, (double)in, out, t->v, (int)cap,
                                  &at, &P->scratch);
    if (rc == FERRY_ETOO_LARGE) {
      cap *= 2;
      continue;
    }
    if (rc) {
      table_free(t);
      return fy_error(rc, "hash: resampling table %d -> %d", in, out);
    }
    t->taps = at.taps, t->first = at.first, t->last = at.last;
    t->entries = (size_t)at.entries;
    break;
  }
  *res = t;
  return FERRY_OK;
}

/* The table for in -> out, cached; in this round's upload. */
static int use_table(fy_hash_plan *P, int in, int out, fy_hp_table **res) {
  fy_hp_table *t = NULL;
  for (size_t i = 0; i < P->ncache && !t; i++)
    if (P->cache[i]->in == in && P->cache[i]->out == out)
      t = P->cache[i];
  if (!t) {
    int rc = make_table(P, in, out, &t);
    if (rc)
      return rc;
    void *q = grow(P->cache, &P->capcache, P->ncache + 1, sizeof *P->cache);
    if (!q) {
      table_free(t);
      return fy_error(FERRY_ENOMEM, "GPU hash: out of memory planning");
    }
    P->cache = q;
    P->cache[P->ncache++] = t;
  }
  if (t->off < 0) {
    t->off = P->tab_entries;
    P->tab_entries += (int)t->entries;
    PUSH(P->tabref, P->ntabref, P->captabref, t);
  }
  *res = t;
  return FERRY_OK;
}

static uint64_t u8_alloc(fy_hash_plan *P, size_t n) {
  uint64_t a = P->u8_base + P->u8_bytes;
  P->u8_bytes += fy_hp_align256(n);
  return a;
}

static uint64_t dbl_alloc(fy_hash_plan *P, size_t n) {
  uint64_t a = P->dbl_base + P->dbl_bytes;
  P->dbl_bytes += fy_hp_align256(n * sizeof(double));
  return a;
}

static int add_pass(fy_hash_plan *P, int stage, uint64_t src, long long sl, long long sp,
                    uint64_t dst, long long dl, long long dp, int lines, int vertical,
                    const fy_hp_table *t, int shift) {
  fy_hp_pass j;
  memset(&j, 0, sizeof j);
  j.src = src, j.dst = dst, j.sl = sl, j.sp = sp, j.dl = dl, j.dp = dp;
  j.start = P->tab_base + (uint64_t)t->off * 4;
  j.k = j.start + (uint64_t)t->out * 4;
  j.lines = lines, j.out = t->out, j.taps = t->taps, j.shift = shift;
  j.warp = t->taps >= 32;
  j.line_fast = vertical;
  PUSH(P->stage[stage], P->nstage[stage], P->capstage[stage], j);
  return FERRY_OK;
}

/* Image.resize((dw, dh), LANCZOS) of an L image as fy_resize_u8 does it
 * (box = the whole image): the grid's device address. */
static int plan_resize(fy_hash_plan *P, uint64_t src, long long pitch, int sw, int sh, int dw,
                       int dh, uint64_t *grid) {
  uint64_t dst = u8_alloc(P, (size_t)dw * dh);
  *grid = dst;
  fy_hp_table *th = NULL, *tv = NULL;
  int rc;
  const int need_h = dw != sw, need_v = dh != sh;
  if (!need_h && !need_v) { /* Pillow's crop shortcut: a copy */
    if ((rc = use_table(P, -dh, dh, &tv)))
      return rc;
    return add_pass(P, 0, src, 1, pitch, dst, 1, dw, sw, 1, tv, 0);
  }
  if (need_h && (rc = use_table(P, sw, dw, &th)))
    return rc;
  if (need_v && (rc = use_table(P, sh, dh, &tv)))
    return rc;
  if (!need_v)
    return add_pass(P, 0, src, pitch, 1, dst, dw, 1, sh, 0, th, 0);
  if (!need_h)
    return add_pass(P, 0, src, 1, pitch, dst, 1, dw, sw, 1, tv, 0);
  const long long shrink_h = (long long)sh - dh, shrink_w = (long long)sw - dw;
  if (!(shrink_h > 0 && shrink_h > shrink_w * 2)) { /* horizontal, then vertical */
    const int rows = tv->last - tv->first;
    uint64_t temp = u8_alloc(P, (size_t)dw * rows);
    if ((rc = add_pass(P, 0, src + (uint64_t)tv->first * pitch, pitch, 1, temp, dw, 1, rows, 0, th,
                       0)))
      return rc;
    return add_pass(P, 1, temp, 1, dw, dst, 1, dw, dw, 1, tv, tv->first);
  }
  /* vertical over the columns the horizontal pass reads, then horizontal */
  const int cols = th->last - th->first;
  uint64_t temp = u8_alloc(P, (size_t)cols * dh);
  if ((rc = add_pass(P, 0, src + (uint64_t)th->first, 1, pitch, temp, 1, cols, cols, 1, tv, 0)))
    return rc;
  return add_pass(P, 1, temp, cols, 1, dst, dw, 1, dh, 0, th, th->first);
}

static int add_step(fy_hash_plan *P, size_t k, fy_hp_haar j) {
  if (k >= P->capsteps) { /* slots past nsteps keep their arrays (n = 0) for reuse */
    size_t old = P->capsteps;
    void *q = grow(P->steps, &P->capsteps, k + 1, sizeof *P->steps);
    if (!q)
      return fy_error(FERRY_ENOMEM, "GPU hash: out of memory planning");
    P->steps = q;
    memset(P->steps + old, 0, (P->capsteps - old) * sizeof *P->steps);
  }
  if (k >= P->nsteps)
    P->nsteps = k + 1;
  fy_hp_step *st = &P->steps[k];
  PUSH(st->v, st->n, st->cap, j);
  return FERRY_OK;
}

/* wHash's Haar steps on the n x n grid; *low gets the s x s result. */
static int plan_haar(fy_hash_plan *P, uint64_t grid, int n, int s, uint64_t *low) {
  const int L = floor_log2(n), lev = L - floor_log2(s);
  uint64_t lvl[32], bands[32];
  for (int l = 0; l <= L; l++)
    lvl[l] = dbl_alloc(P, (size_t)(n >> l) * (n >> l));
  for (int l = 0; l < L; l++)
    bands[l] = dbl_alloc(P, (size_t)3 * (n >> (l + 1)) * (n >> (l + 1)));
  size_t k = 0;
  int rc;
  for (int l = 0; l < L; l++) /* wavedec2 down to 1 x 1 */
    if ((rc = add_step(
             P, k++,
             (fy_hp_haar){0, n >> (l + 1), 0, l == 0, l ? lvl[l] : grid, lvl[l + 1], bands[l], 0})))
      return rc;
  for (int l = L - 1; l >= 0; l--) /* approximation zeroed, waverec2 */
    if ((rc = add_step(
             P, k++,
             (fy_hp_haar){1, n >> (l + 1), l == L - 1, 0, lvl[l + 1], lvl[l], bands[l], 0})))
      return rc;
  for (int l = 0; l < lev; l++) /* wavedec2(level = lev)[0] */
    if ((rc = add_step(P, k++, (fy_hp_haar){2, n >> (l + 1), 0, 0, lvl[l], lvl[l + 1], 0, 0})))
      return rc;
  *low = lvl[lev];
  return FERRY_OK;
}

/* Plans one image's kernels (with the arena bases set, or 0 to size). */
static int plan_image(fy_hash_plan *P, const fy_gpu_hash_image *im, unsigned kinds, int s) {
  uint64_t src = (uint64_t)(uintptr_t)im->data;
  long long pitch = (long long)im->pitch;
  const int w = im->width, h = im->height;
  if (im->channels == 3) {
    uint64_t gray = u8_alloc(P, (size_t)w * h);
    PUSH(P->gray, P->ngray, P->capgray, ((fy_hp_gray){src, gray, pitch, w, h}));
    src = gray, pitch = w;
  }
  fy_hp_hash hj;
  memset(&hj, 0, sizeof hj);
  hj.s = s, hj.kinds = kinds;
  const int gw[FY_HP_NGRID] = {s, s + 1, s, 4 * s, 0}, gh[FY_HP_NGRID] = {s, s, s + 1, 4 * s, 0};
  int rc;
  for (int k = 0; k < 4; k++)
    if (kinds & FERRY_HASH_MASK(k))
      if ((rc = plan_resize(P, src, pitch, w, h, gw[k], gh[k], &hj.grid[k])))
        return rc;
  if (kinds & FERRY_HASH_MASK(FERRY_HASH_WHASH)) {
    const int n = fy_whash_scale(w, h, s);
    if ((rc = plan_resize(P, src, pitch, w, h, n, n, &hj.grid[FERRY_HASH_WHASH])))
      return rc;
    if ((rc = plan_haar(P, hj.grid[FERRY_HASH_WHASH], n, s, &hj.wlow)))
      return rc;
  }
  PUSH(P->hash, P->nhash, P->caphash, hj);
  return FERRY_OK;
}

void fy_hash_plan_reset(fy_hash_plan *P) {
  P->nstage[0] = P->nstage[1] = 0;
  P->ngray = 0;
  for (size_t k = 0; k < P->nsteps; k++)
    P->steps[k].n = 0;
  P->nsteps = 0;
  P->nhash = 0;
  for (size_t i = 0; i < P->ntabref; i++)
    P->tabref[i]->off = -1;
  P->ntabref = 0;
  if (P->ncache > MAX_CACHED) { /* many sizes: start again */
    for (size_t i = 0; i < P->ncache; i++)
      table_free(P->cache[i]);
    P->ncache = 0;
  }
  P->u8_bytes = P->dbl_bytes = 0;
  P->tab_entries = 0;
}

void fy_hash_plan_free(fy_hash_plan *P) {
  if (!P)
    return;
  for (int k = 0; k < 2; k++)
    free(P->stage[k]);
  free(P->gray);
  for (size_t k = 0; k < P->capsteps; k++)
    free(P->steps[k].v);
  free(P->steps);
  free(P->hash);
  free(P->tabref);
  free(P->wtot);
  free(P->off_w);
  for (size_t i = 0; i < P->ncache; i++)
    table_free(P->cache[i]);
  free(P->cache);
  fy_buf_free(&P->scratch);
  memset(P, 0, sizeof *P);
}

int fy_hash_plan_all(fy_hash_plan *P, const fy_gpu_hash_image *im, int n, unsigned kinds, int s) {
  fy_hash_plan_reset(P);
  for (int i = 0; i < n; i++) {
    int rc = plan_image(P, &im[i], kinds, s);
    if (rc)
      return rc;
  }
  return FERRY_OK;
}

size_t fy_hash_plan_image_bytes(fy_hash_plan *P, const fy_gpu_hash_image *im, unsigned kinds,
                                int s) {
  P->u8_base = P->dbl_base = P->tab_base = 0;
  if (fy_hash_plan_all(P, im, 1, kinds, s))
    return 0;
  size_t b = P->u8_bytes + P->dbl_bytes + (size_t)P->tab_entries * 4;
  fy_hash_plan_reset(P);
  return b;
}

int fy_hash_plan_round(fy_hash_plan *P, const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                       int host, size_t budget, int max_images, size_t *in_bytes) {
  size_t bytes = 0, in = 0;
  int i = 0;
  while (i < n && i < max_images) {
    size_t b = fy_hash_plan_image_bytes(P, &im[i], kinds, s);
    size_t ib = host ? fy_hp_align256(fy_hp_image_len(&im[i])) : 0;
    if (i > 0 && bytes + b + in + ib > budget)
      break;
    bytes += b, in += ib, i++;
  }
  *in_bytes = in;
  return i;
}

/* Pads a job's item count to a multiple of 32. */
static long long pad32(long long items) { return (items + 31) & ~31ll; }

int fy_hash_plan_layout(fy_hash_plan *P) {
  for (int k = 0; k < 2; k++) {
    long long total = 0;
    for (size_t i = 0; i < P->nstage[k]; i++) {
      fy_hp_pass *j = &P->stage[k][i];
      j->begin = total;
      total += pad32((long long)j->lines * j->out * (j->warp ? 32 : 1));
    }
    P->tot[k] = total;
  }
  if (P->nsteps > P->capw) {
    long long *wt = realloc(P->wtot, P->nsteps * sizeof *wt);
    if (wt)
      P->wtot = wt;
    size_t *ow = realloc(P->off_w, P->nsteps * sizeof *ow);
    if (ow)
      P->off_w = ow;
    if (!wt || !ow)
      return fy_error(FERRY_ENOMEM, "GPU hash: out of memory planning");
    P->capw = P->nsteps;
  }
  for (size_t k = 0; k < P->nsteps; k++) {
    long long total = 0;
    for (size_t i = 0; i < P->steps[k].n; i++) {
      fy_hp_haar *j = &P->steps[k].v[i];
      j->begin = total;
      total += pad32((long long)j->h * j->h);
    }
    P->wtot[k] = total;
  }
  size_t off = fy_hp_align256((size_t)P->tab_entries * 4);
  for (int k = 0; k < 2; k++) {
    P->off_p[k] = off;
    off = fy_hp_align256(off + P->nstage[k] * sizeof(fy_hp_pass));
  }
  P->off_g = off;
  off = fy_hp_align256(off + P->ngray * sizeof(fy_hp_gray));
  for (size_t k = 0; k < P->nsteps; k++) {
    P->off_w[k] = off;
    off = fy_hp_align256(off + P->steps[k].n * sizeof(fy_hp_haar));
  }
  P->off_h = off;
  P->bytes = fy_hp_align256(off + P->nhash * sizeof(fy_hp_hash));
  return FERRY_OK;
}

void fy_hash_plan_write(const fy_hash_plan *P, void *dst) {
  char *hp = dst;
  for (size_t i = 0; i < P->ntabref; i++) {
    const fy_hp_table *t = P->tabref[i];
    memcpy(hp + (size_t)t->off * 4, t->v, t->entries * 4);
  }
  for (int k = 0; k < 2; k++)
    if (P->nstage[k])
      memcpy(hp + P->off_p[k], P->stage[k], P->nstage[k] * sizeof(fy_hp_pass));
  if (P->ngray)
    memcpy(hp + P->off_g, P->gray, P->ngray * sizeof(fy_hp_gray));
  for (size_t k = 0; k < P->nsteps; k++)
    memcpy(hp + P->off_w[k], P->steps[k].v, P->steps[k].n * sizeof(fy_hp_haar));
  if (P->nhash)
    memcpy(hp + P->off_h, P->hash, P->nhash * sizeof(fy_hp_hash));
}

void fy_hash_plan_results(const fy_gpu_hash_image *im, int n, unsigned kinds, int s,
                          const uint64_t *words, ferry_hash_result *out) {
  for (int i = 0; i < n; i++) {
    ferry_hash_result *r = &out[i];
    r->width = im[i].width;
    r->height = im[i].height;
    r->kinds = kinds;
    r->exact = 1;
    for (int k = 0; k < FY_HP_NGRID; k++) {
      memset(&r->hash[k], 0, sizeof r->hash[k]);
      if (!(kinds & FERRY_HASH_MASK(k)))
        continue;
      r->hash[k].bits = s * s;
      for (int q = 0; q < 4; q++)
        r->hash[k].w[q] = words[((size_t)i * FY_HP_NGRID + k) * 4 + q];
    }
  }
}

int fy_hash_plan_check_images(const fy_gpu_hash_image *im, int n, int s) {
  if (s != 8 && s != 16)
    return fy_error(FERRY_EINVAL, "GPU hash: hash size must be 8 or 16, not %d", s);
  if (n < 0 || (n && !im))
    return fy_error(FERRY_EINVAL, "GPU hash: bad image list");
  for (int i = 0; i < n; i++)
    if (!im[i].data || im[i].width < 1 || im[i].height < 1 ||
        (im[i].channels != 1 && im[i].channels != 3) ||
        im[i].pitch < (size_t)im[i].width * im[i].channels)
      return fy_error(FERRY_EINVAL, "GPU hash: image %d: need 1 or 3 channels, got %dx%dx%d", i,
                      im[i].width, im[i].height, im[i].channels);
  return FERRY_OK;
}
