/* sample.c — the work done for one sample: choose the crop, decode only
 * what it needs, resample, store into the batch. */
#include "pipeline/pipeline.h"

#include <math.h>
#include <string.h>

static double rnd(uint64_t seed, int epoch, int64_t index, int stream, int k) {
  uint64_t key = ((uint64_t)(uint32_t)epoch << 16) | ((uint64_t)stream << 8) | (uint64_t)k;
  return fy_rand_unit(fy_rand_u64(seed, key, (uint64_t)index));
}

/* torchvision RandomResizedCrop.get_params: ten tries at a random area and
 * log-uniform aspect ratio, then a centred fallback clamped to the ratio
 * range. */
static void random_resized_crop(const ferry_loader_options *o, uint64_t seed, int epoch,
                                int64_t index, int w, int h, fy_box *box) {
  double area = (double)w * h;
  double lr0 = log(o->ratio_min), lr1 = log(o->ratio_max);
  for (int k = 0; k < 10; k++) {
    double target = area * (o->scale_min + (o->scale_max - o->scale_min) *
                                               rnd(seed, epoch, index, FY_STREAM_CROP, 4 * k));
    double aspect = exp(lr0 + (lr1 - lr0) * rnd(seed, epoch, index, FY_STREAM_CROP, 4 * k + 1));
    int cw = (int)lround(sqrt(target * aspect)), ch = (int)lround(sqrt(target / aspect));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
      int y = (int)(rnd(seed, epoch, index, FY_STREAM_CROP, 4 * k + 2) * (h - ch + 1));
      int x = (int)(rnd(seed, epoch, index, FY_STREAM_CROP, 4 * k + 3) * (w - cw + 1));
      *box = (fy_box){x, y, x + cw, y + ch};
      return;
    }
  }
  double in_ratio = (double)w / h;
  int cw = w, ch = h;
  if (in_ratio < o->ratio_min)
    ch = (int)lround(cw / o->ratio_min);
  else if (in_ratio > o->ratio_max)
    cw = (int)lround(ch * o->ratio_max);
  int x = (w - cw) / 2, y = (h - ch) / 2;
  *box = (fy_box){x, y, x + cw, y + ch};
}

/* exact_decode's centre crop is torchvision's Resize(floor(size / ratio))
 * + CenterCrop(size) on Pillow, step by step: the whole image resized to
 * whole_w x whole_h (the short side's target, the other side truncated, as
 * torchvision sizes it), then the output-sized window at (left, top),
 * rounded half to even as Python's round(). One resample of the box alone
 * (the default) equals it only to float rounding. */
static int exact_center(const ferry_loader_options *o) {
  return o->exact_decode && o->crop == FERRY_CROP_CENTER;
}

static void center_geometry(const ferry_loader_options *o, int w, int h, int *ww, int *wh,
                            int *left, int *top) {
  double tw = floor(o->width / o->crop_ratio + 1e-9), th = floor(o->height / o->crop_ratio + 1e-9);
  if (tw / w >= th / h) {
    *ww = (int)tw;
    *wh = (int)(tw * h / w);
  } else {
    *wh = (int)th;
    *ww = (int)(th * w / h);
  }
  *ww = *ww < o->width ? o->width : *ww;
  *wh = *wh < o->height ? o->height : *wh;
  *left = (int)nearbyint((*ww - o->width) / 2.0);
  *top = (int)nearbyint((*wh - o->height) / 2.0);
}

void fy_plan_box(const ferry_loader_options *o, uint64_t seed, int epoch, int64_t index, int w,
                 int h, fy_box *box) {
  if (o->crop == FERRY_CROP_RANDOM) {
    random_resized_crop(o, seed, epoch, index, w, h, box);
  } else if (exact_center(o)) {
    /* torchvision's geometry as a box (the GPU's engine resamples it; the
     * CPU path resizes the whole image and crops, resize_center) */
    int ww, wh, left, top;
    center_geometry(o, w, h, &ww, &wh, &left, &top);
    double sx = (double)w / ww, sy = (double)h / wh;
    *box = (fy_box){left * sx, top * sy, (left + o->width) * sx, (top + o->height) * sy};
  } else if (o->crop == FERRY_CROP_CENTER) {
    /* torchvision Resize(size / ratio) + CenterCrop(size), as one box: the
     * scale at which the image covers the enlarged output, then the
     * output-sized window at its centre, mapped back to the source. */
    double r = fmax(o->width / o->crop_ratio / w, o->height / o->crop_ratio / h);
    double bw = fmin(o->width / r, w), bh = fmin(o->height / r, h);
    box->x0 = (w - bw) / 2;
    box->y0 = (h - bh) / 2;
    box->x1 = box->x0 + bw;
    box->y1 = box->y0 + bh;
  } else {
    *box = (fy_box){0, 0, w, h};
  }
}

int fy_plan_flip(const ferry_loader_options *o, uint64_t seed, int epoch, int64_t index) {
  if (o->flip_prob <= 0)
    return 0;
  return rnd(seed, epoch, index, FY_STREAM_FLIP, 0) < o->flip_prob;
}

void fy_worker_state_free(fy_worker_state *w) {
  fy_buf_free(&w->file);
  fy_decoder_free(&w->dec);
  fy_resize_ctx_free(&w->rs);
  fy_buf_free(&w->resized);
  fy_buf_free(&w->whole);
}

typedef struct plan_ctx {
  const ferry_loader_options *o;
  int epoch;
  int64_t index;
  fy_box box;
} plan_ctx;

/* DCT scaling is an approximation of Pillow's full decode + resize:
 * exact_decode turns it off whatever allow_dct_scaling says. */
static int dct_scaling(const ferry_loader_options *o) {
  return o->allow_dct_scaling && !o->exact_decode;
}

/* The exact centre crop of the decoded whole image d into out. */
static int resize_center(fy_worker_state *w, const ferry_loader_options *o, const ferry_image *im,
                         uint8_t *out) {
  int ww, wh, left, top;
  center_geometry(o, im->width, im->height, &ww, &wh, &left, &top);
  int rc = fy_buf_reserve(&w->whole, (size_t)ww * wh * 3);
  fy_box all = {0, 0, im->width, im->height};
  if (rc == FERRY_OK)
    rc = fy_resize_u8(im->data, im->width, im->height, im->stride, im->channels, &all, w->whole.p,
                      ww, wh, (size_t)ww * 3, o->filter, &w->rs);
  for (int y = 0; rc == FERRY_OK && y < o->height; y++)
    memcpy(out + (size_t)y * o->width * 3, w->whole.p + ((size_t)(top + y) * ww + left) * 3,
           (size_t)o->width * 3);
  return rc;
}

/* Called by the decoder once the source size is known: the decoder then
 * reads only the crop, at the smallest DCT scale that keeps it at least as
 * large as the output. */
static int plan_cb(void *user, int w, int h, ferry_rect *crop, int *min_w, int *min_h) {
  plan_ctx *p = user;
  fy_plan_box(p->o, p->o->seed, p->epoch, p->index, w, h, &p->box);
  int x0 = (int)floor(p->box.x0), y0 = (int)floor(p->box.y0);
  int x1 = (int)ceil(p->box.x1), y1 = (int)ceil(p->box.y1);
  *crop = (ferry_rect){x0, y0, x1 - x0, y1 - y0};
  if (exact_center(p->o))
    *crop = (ferry_rect){0, 0, w, h}; /* resized whole, then cropped */
  if (dct_scaling(p->o)) {
    /* Scale the hint to the whole crop: crop * s >= output. */
    *min_w = p->o->width;
    *min_h = p->o->height;
  } else {
    *min_w = *min_h = 0;
  }
  return FERRY_OK;
}

/* Decodes the crop (at a reduced DCT scale where that keeps enough
 * pixels), then resamples the exact crop box to the output size, into
 * `out` (o->width * 3 bytes a row) or, when NULL, into w->resized. Times
 * the two stages. */
static int decode_crop_resize(fy_worker_state *w, const ferry_loader_options *o, const char *path,
                              const uint8_t *data, size_t n, plan_ctx *pc, uint8_t *out) {
  ferry_decode_options dopt;
  ferry_decode_options_default(&dopt);
  dopt.ignore_orientation = o->ignore_orientation;
  dopt.max_pixels = o->max_pixels;
  dopt.allow_dct_scaling = dct_scaling(o);
  /* Fast decoder settings where the image is downscaled afterwards, and
   * the 14-bit resampler; never without DCT scaling, the exact path (see
   * ferry_loader_options). */
  int fast = dct_scaling(o);
  w->dec.fast_decode = fast;
  fy_decoded d;
  fy_note_set(w->note, FY_STAGE_DECODE, path, 0);
  fy_fault_stall();
  double t0 = fy_now();
  int rc = fy_decode(&w->dec, data, n, path, &dopt, plan_cb, pc, &d);
  double t1 = fy_now();
  w->decode_s += t1 - t0;
  if (rc)
    return rc;
  fy_note_set(w->note, FY_STAGE_RESIZE, path, 0);
  /* The crop box in the decoded pixels' coordinates. */
  fy_box b = {(pc->box.x0 - d.x0) * d.sx, (pc->box.y0 - d.y0) * d.sy, (pc->box.x1 - d.x0) * d.sx,
              (pc->box.y1 - d.y0) * d.sy};
  b.x0 = fmax(b.x0, 0);
  b.y0 = fmax(b.y0, 0);
  b.x1 = fmin(b.x1, d.image.width);
  b.y1 = fmin(b.y1, d.image.height);
  if (!out) {
    rc = fy_buf_reserve(&w->resized, (size_t)o->width * o->height * 3);
    out = w->resized.p;
  }
  if (rc == FERRY_OK && exact_center(o))
    rc = resize_center(w, o, &d.image, out);
  else if (rc == FERRY_OK)
    rc = (fast ? fy_resize_u8_fast : fy_resize_u8)(
        d.image.data, d.image.width, d.image.height, d.image.stride, d.image.channels, &b, out,
        o->width, o->height, (size_t)o->width * 3, o->filter, &w->rs);
  w->transform_s += fy_now() - t1;
  if (rc)
    return fy_error(rc, "%s: %s", path, ferry_last_error());
  return FERRY_OK;
}

/* Decodes `data` (a file's bytes, or a JPEG pack sample), crops, resizes
 * and stores it into dst. */
static int process_bytes(fy_worker_state *w, const ferry_loader_options *o,
                         const fy_store_params *store, const char *path, const uint8_t *data,
                         size_t n, int epoch, int64_t index, void *dst) {
  plan_ctx pc = {o, epoch, index, {0, 0, 0, 0}};
  fy_store_params sp = *store;
  sp.flip = fy_plan_flip(o, o->seed, epoch, index);
  /* Plain u8 HWC (the GPU's staging too): resampled straight into the
   * sample, without the store's copy. */
  int direct = sp.dtype == FERRY_U8 && !sp.normalize && !sp.flip && sp.layout == FERRY_LAYOUT_HWC;
  int rc = decode_crop_resize(w, o, path, data, n, &pc, direct ? dst : NULL);
  double t3 = fy_now();
  if (rc || direct)
    return rc;
  fy_store(w->resized.p, o->width, o->height, 3, (size_t)o->width * 3, &sp, dst);
  w->transform_s += fy_now() - t3;
  return FERRY_OK;
}

int fy_process_sample(fy_worker_state *w, const ferry_loader_options *o,
                      const fy_store_params *store, const fy_source *src, int epoch, int64_t index,
                      void *dst) {
  double t0 = fy_now();
  size_t n = 0;
  const char *path = fy_source_path(src, index);
  fy_note_set(w->note, FY_STAGE_READ, path, 0);
  int rc = fy_source_read(src, index, o->max_bytes, &w->file, &n);
  w->read_s += fy_now() - t0;
  if (rc)
    return rc;
  return process_bytes(w, o, store, path, w->file.p, n, epoch, index, dst);
}

/* What touches a pack's mapping, run under fy_bus_guard: a shard
 * truncated under the loader then fails the sample instead of killing the
 * process with SIGBUS. */
typedef struct pack_job {
  fy_worker_state *w;
  const ferry_loader_options *o;
  const fy_store_params *store;
  const fy_pack *p;
  int epoch;
  int64_t index;
  void *dst;
  int rc;
  size_t n; /* JPEG packs: the sample's bytes, copied into w->file */
} pack_job;

/* JPEG packs: the sample's bytes copied out of the mapping (then decoded
 * from the copy, outside the guard). */
static void copy_jpeg(void *arg) {
  pack_job *j = arg;
  size_t n = 0;
  const uint8_t *jpeg = fy_pack_sample_len(j->p, j->index, &n, NULL); /* the index is mapped too */
  j->rc = fy_buf_reserve(&j->w->file, n ? n : 1);
  if (j->rc == FERRY_OK)
    memcpy(j->w->file.p, jpeg, n);
  j->n = n;
}

/* u8 packs: resampled or stored straight from the mapping. */
static void u8_sample(void *arg) {
  pack_job *j = arg;
  fy_worker_state *w = j->w;
  const ferry_loader_options *o = j->o;
  const fy_pack *p = j->p;
  double t0 = fy_now();
  const uint8_t *px = fy_pack_sample(p, j->index, NULL);
  int pw = p->width, ph = p->height;
  size_t stride = (size_t)pw * 3;
  fy_store_params sp = *j->store;
  sp.flip = fy_plan_flip(o, o->seed, j->epoch, j->index);
  if (pw != o->width || ph != o->height || o->crop == FERRY_CROP_RANDOM) {
    fy_box box = {0, 0, pw, ph};
    if (o->crop == FERRY_CROP_RANDOM)
      fy_plan_box(o, o->seed, j->epoch, j->index, pw, ph, &box);
    int rc = fy_buf_reserve(&w->resized, (size_t)o->width * o->height * 3);
    if (rc == FERRY_OK)
      rc = fy_resize_u8(px, pw, ph, stride, 3, &box, w->resized.p, o->width, o->height,
                        (size_t)o->width * 3, o->filter, &w->rs);
    if (rc) {
      j->rc = rc;
      return;
    }
    px = w->resized.p;
    stride = (size_t)o->width * 3;
  }
  fy_store(px, o->width, o->height, 3, stride, &sp, j->dst); /* zero decode */
  w->transform_s += fy_now() - t0;
  j->rc = FERRY_OK;
}

static int shrunk(const fy_pack *p, int64_t index) {
  char name[4400];
  fy_pack_sample_name(p, index, name, sizeof name);
  return fy_error(FERRY_EIO,
                  "%s: the shard shrank while it was being read (truncated or replaced?)", name);
}

int fy_process_pack_sample(fy_worker_state *w, const ferry_loader_options *o,
                           const fy_store_params *store, const fy_pack *p, int epoch, int64_t index,
                           void *dst) {
  pack_job j = {w, o, store, p, epoch, index, dst, FERRY_OK, 0};
  if (p->kind == FY_PACK_KIND_JPEG) {
    /* decoded like a file: every crop and transform */
    char name[4400];
    if (fy_bus_guard(copy_jpeg, &j) != 0)
      return shrunk(p, index);
    if (j.rc)
      return j.rc;
    int rc;
    fy_pack_sample_name(p, index, name, sizeof name);
    /* the watchdog's note must outlive this call: not the name on the stack */
    fy_note *note = w->note;
    fy_note_set(note, FY_STAGE_DECODE, "a JPEG pack sample", 0);
    w->note = NULL;
    rc = process_bytes(w, o, store, name, w->file.p, j.n, epoch, index, dst);
    w->note = note;
    return rc;
  }
  if (fy_bus_guard(u8_sample, &j) != 0)
    return shrunk(p, index);
  return j.rc;
}
