/* reader.c — the public video reader: opens a file through the decoder
 * (fy_vdec), samples frames, resizes them (image/ resampler), rotates them
 * upright and stores them into a batch (fused dtype/layout/normalize). */
#include "codec/codec.h"
#include "image/image.h"
#include "video/video.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ferry_video_reader {
  char *path;
  ferry_video_options o;
  ferry_video_info info;
  fy_vdec *dec;
  fy_vgpu *gpu; /* device >= 0: NVDEC + GPU batches instead */
  fy_vsampler sampler;
  int orientation;  /* EXIF-style, from the rotation */
  int out_w, out_h; /* upright output size */
  int pre_w, pre_h; /* resized size before rotation */
  fy_box box;       /* source box, stored coordinates */
  fy_store_params store;
  size_t sample_bytes;
  fy_buf data; /* the batch */
  double *timestamps;
  int64_t *indices;
  ferry_video_batch batch;
  int nbatches;
  int done;           /* FERRY_END or an error code once finished */
  int random;         /* ferry_video_frame_at was called: no sequential reads */
  char done_msg[512]; /* the error's message, repeated by later calls */
  fy_resize_ctx rctx;
  fy_buf small, upright; /* resized frame, rotated frame */
  ferry_video_stats stats;
};

void ferry_video_options_default(ferry_video_options *o) {
  memset(o, 0, sizeof *o);
  o->crop = FERRY_CROP_NONE;
  o->filter = FERRY_FILTER_TRIANGLE;
  o->stride = 1;
  o->batch_size = 8;
  o->layout = FERRY_LAYOUT_CHW;
  o->dtype = FERRY_U8;
  o->mean[0] = 0.485f, o->mean[1] = 0.456f, o->mean[2] = 0.406f;
  o->std[0] = 0.229f, o->std[1] = 0.224f, o->std[2] = 0.225f;
  o->device = -1;
  o->nvdec_keep = FY_NVDEC_KEEP_DEFAULT;
}

static int check_options(const char *path, const ferry_video_options *o) {
  if (o->width < 0 || o->height < 0 || (o->width == 0) != (o->height == 0) || o->width > 16384 ||
      o->height > 16384)
    return fy_error(FERRY_EINVAL, "%s: bad output size %dx%d", path, o->width, o->height);
  if (o->crop != FERRY_CROP_NONE && o->crop != FERRY_CROP_CENTER)
    return fy_error(FERRY_EINVAL, "%s: video crop must be none or center", path);
  if (o->stride < 1 || o->rate < 0 || !isfinite(o->rate))
    return fy_error(FERRY_EINVAL, "%s: stride must be >= 1 and rate >= 0", path);
  if (o->stride > 1 && o->rate > 0)
    return fy_error(FERRY_EINVAL, "%s: stride and rate exclude each other", path);
  if (o->start_s < 0 || (o->end_s > 0 && o->end_s <= o->start_s))
    return fy_error(FERRY_EINVAL, "%s: bad time range %.3f..%.3f s", path, o->start_s, o->end_s);
  if (o->batch_size < 1 || o->batch_size > 65536)
    return fy_error(FERRY_EINVAL, "%s: batch size must be 1..65536", path);
  if ((unsigned)o->dtype > FERRY_F32 || (unsigned)o->layout > FERRY_LAYOUT_CHW ||
      (unsigned)o->filter > FERRY_FILTER_NEAREST)
    return fy_error(FERRY_EINVAL, "%s: bad dtype, layout or filter", path);
  if (o->device < -1)
    return fy_error(FERRY_EINVAL, "%s: bad device %d (-1: CPU, >= 0: CUDA device)", path,
                    o->device);
  if (o->nvdec_keep < 0 || o->nvdec_keep > FY_NVDEC_KEEP_MAX)
    return fy_error(FERRY_EINVAL,
                    "%s: nvdec_keep %d is not 0..%d (idle NVDEC decoders kept for the next file)",
                    path, o->nvdec_keep, FY_NVDEC_KEEP_MAX);
  return FERRY_OK;
}

/* Output geometry: the resize works in stored orientation (pre_w x pre_h),
 * the small result is rotated upright. */
static void plan(ferry_video_reader *r) {
  int sw = r->info.width, sh = r->info.height;
  int swap = r->orientation >= 5;
  r->out_w = r->o.width ? r->o.width : (swap ? sh : sw);
  r->out_h = r->o.height ? r->o.height : (swap ? sw : sh);
  r->pre_w = swap ? r->out_h : r->out_w;
  r->pre_h = swap ? r->out_w : r->out_h;
  r->box = (fy_box){0, 0, sw, sh};
  if (r->o.crop == FERRY_CROP_CENTER) {
    /* largest box of the output's aspect ratio, centred */
    double s = fmin((double)sw / r->pre_w, (double)sh / r->pre_h);
    double bw = r->pre_w * s, bh = r->pre_h * s;
    r->box = (fy_box){(sw - bw) / 2, (sh - bh) / 2, (sw + bw) / 2, (sh + bh) / 2};
  }
}

static int alloc_batch(ferry_video_reader *r) {
  size_t px = (size_t)r->out_w * r->out_h * 3, total;
  r->sample_bytes = px * ferry_dtype_size(r->o.dtype);
  if (!fy_mul_size(r->sample_bytes, (size_t)r->o.batch_size, &total) ||
      fy_buf_reserve(&r->data, total) != FERRY_OK)
    return FERRY_ENOMEM;
  r->timestamps = calloc((size_t)r->o.batch_size, sizeof *r->timestamps);
  r->indices = calloc((size_t)r->o.batch_size, sizeof *r->indices);
  return r->timestamps && r->indices ? FERRY_OK : FERRY_ENOMEM;
}

int ferry_video_open(const char *path, const ferry_video_options *options,
                     ferry_video_reader **out) {
  if (!out)
    return fy_error(FERRY_EINVAL, "ferry_video_open: reader is NULL");
  *out = NULL;
  if (!path)
    return fy_error(FERRY_EINVAL, "ferry_video_open: path is NULL");
  ferry_video_reader *r = calloc(1, sizeof *r);
  if (!r)
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  if (!(r->path = strdup(path))) {
    free(r);
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  }
  if (options)
    r->o = *options;
  else
    ferry_video_options_default(&r->o);
  double t0 = fy_now();
  int st = check_options(path, &r->o);
  if (st == FERRY_OK && r->o.device >= 0) {
    st = fy_vgpu_open(path, &r->o, &r->gpu, &r->info);
    if (st != FERRY_OK) {
      ferry_video_close(r);
      return st;
    }
    *out = r;
    return FERRY_OK;
  }
  if (st == FERRY_OK)
    st = fy_vdec_open(path, r->o.threads, r->o.strict, &r->dec, &r->info);
  if (st == FERRY_OK && r->o.ignore_rotation) {
    r->info.rotation = 0;
    r->info.upright_width = r->info.width;
    r->info.upright_height = r->info.height;
  }
  if (st == FERRY_OK) {
    r->orientation = fy_video_orientation(r->info.rotation);
    plan(r);
    if (alloc_batch(r) != FERRY_OK)
      st = fy_error(FERRY_ENOMEM, "%s: out of memory for batches of %d frames of %dx%d", path,
                    r->o.batch_size, r->out_w, r->out_h);
  }
  if (st == FERRY_OK && r->o.start_s > 0)
    st = fy_vdec_seek(r->dec, r->o.start_s);
  if (st != FERRY_OK) {
    ferry_video_close(r);
    return st;
  }
  fy_vsampler_init(&r->sampler, r->o.stride, r->o.rate, r->o.start_s, r->o.end_s);
  if (r->dec)
    fy_vdec_sampler(r->dec, &r->sampler);
  r->store =
      (fy_store_params){.layout = r->o.layout, .dtype = r->o.dtype, .normalize = r->o.normalize};
  memcpy(r->store.mean, r->o.mean, sizeof r->store.mean);
  memcpy(r->store.std, r->o.std, sizeof r->store.std);
  r->stats.open_s = fy_now() - t0;
  *out = r;
  return FERRY_OK;
}

void ferry_video_get_info(const ferry_video_reader *r, ferry_video_info *info) {
  if (r && info)
    *info = r->info;
}

void ferry_video_get_stats(const ferry_video_reader *r, ferry_video_stats *s) {
  if (r && s && r->gpu) {
    fy_vgpu_stats(r->gpu, s);
    return;
  }
  if (r && s)
    *s = r->stats;
  if (r && s && r->dec)
    fy_vdec_damage(r->dec, &s->damaged, &s->first_damaged, &s->first_damaged_s);
  else if (s)
    s->damaged = 0, s->first_damaged = -1, s->first_damaged_s = 0;
}

/* Decodes up to the next kept frame: FERRY_OK, FERRY_END or an error. */
/* Frames in order from a reader used for random access: refused. */
static int refuse_after_random(const ferry_video_reader *r) {
  return fy_error(FERRY_EINVAL,
                  "%s: this reader was used for random access (ferry_video_frame_at): read "
                  "frames in order with another reader",
                  r->path);
}

/* The reader's end, kept for the calls after: FERRY_END, or an error whose
 * message names the file (one from below that does not gets the name). */
static int finish(ferry_video_reader *r, int st) {
  r->done = st;
  if (st == FERRY_END)
    return st;
  const char *m = ferry_last_error();
  size_t n = strlen(r->path);
  if (!strncmp(m, r->path, n) && m[n] == ':')
    snprintf(r->done_msg, sizeof r->done_msg, "%s", m);
  else
    snprintf(r->done_msg, sizeof r->done_msg, "%s: %s", r->path, m);
  return fy_error(st, "%s", r->done_msg);
}

static int next_kept(ferry_video_reader *r, double *t, int64_t *index) {
  if (r->random)
    return refuse_after_random(r);
  if (r->done)
    return r->done == FERRY_END ? FERRY_END : fy_error(r->done, "%s", r->done_msg);
  for (;;) {
    double t0 = fy_now();
    /* frames before the next one the sample keeps cost what the codec
     * allows: non-reference ones are not decoded, keyframes are jumped to */
    fy_vdec_want(r->dec, fy_vsample_next(&r->sampler, r->info.fps, r->info.start_s));
    int st = fy_vdec_next(r->dec, t, index);
    r->stats.decode_s += fy_now() - t0;
    if (st == FERRY_OK) {
      r->stats.decoded++;
      int k = fy_vsample_index(&r->sampler, *t, *index);
      if (k > 0) {
        r->stats.kept++;
        return FERRY_OK;
      }
      if (k == 0)
        continue;
      st = FERRY_END;
    }
    return finish(r, st);
  }
}

/* The current frame, resized, upright, stored as sample k of the batch. */
static int store_frame(ferry_video_reader *r, int k) {
  const uint8_t *px;
  int w, h;
  size_t stride;
  double t0 = fy_now();
  int st = fy_vdec_rgb(r->dec, &px, &w, &h, &stride);
  double t1 = fy_now();
  r->stats.convert_s += t1 - t0;
  if (st != FERRY_OK)
    return st;
  if (w != r->info.width || h != r->info.height)
    return fy_error(FERRY_EUNSUPPORTED, "%s: frame size changes mid-stream (%dx%d, then %dx%d)",
                    r->path, r->info.width, r->info.height, w, h);
  size_t small_row = (size_t)r->pre_w * 3;
  if (fy_buf_reserve(&r->small, small_row * r->pre_h) != FERRY_OK ||
      fy_buf_reserve(&r->upright, small_row * r->pre_h) != FERRY_OK)
    return fy_error(FERRY_ENOMEM, "%s: out of memory for a %dx%d frame", r->path, r->pre_w,
                    r->pre_h);
  const uint8_t *img = px;
  size_t img_stride = stride;
  int full = r->box.x0 == 0 && r->box.y0 == 0 && r->pre_w == w && r->pre_h == h;
  if (!full) {
    st = fy_resize_u8(px, w, h, stride, 3, &r->box, r->small.p, r->pre_w, r->pre_h, small_row,
                      r->o.filter, &r->rctx);
    if (st != FERRY_OK)
      return st;
    img = r->small.p;
    img_stride = small_row;
  }
  if (r->orientation != 1) {
    int ow, oh;
    if (full && fy_buf_reserve(&r->upright, (size_t)w * h * 3) != FERRY_OK)
      return fy_error(FERRY_ENOMEM, "%s: out of memory for a %dx%d frame", r->path, w, h);
    fy_orient(img, r->pre_w, r->pre_h, 3, img_stride, r->orientation, r->upright.p, &ow, &oh);
    img = r->upright.p;
    img_stride = (size_t)ow * 3;
  }
  fy_store(img, r->out_w, r->out_h, 3, img_stride, &r->store,
           (uint8_t *)r->data.p + (size_t)k * r->sample_bytes);
  r->stats.resize_s += fy_now() - t1;
  return FERRY_OK;
}

int ferry_video_next(ferry_video_reader *r, ferry_video_batch **batch) {
  if (!r || !batch)
    return fy_error(FERRY_EINVAL, "ferry_video_next: NULL argument");
  *batch = NULL;
  if (r->gpu && r->random)
    return refuse_after_random(r);
  if (r->gpu)
    return fy_vgpu_next(r->gpu, batch);
  int n = 0, st = FERRY_OK;
  while (n < r->o.batch_size) {
    st = next_kept(r, &r->timestamps[n], &r->indices[n]);
    if (st != FERRY_OK)
      break;
    if ((st = store_frame(r, n)) != FERRY_OK) {
      finish(r, st);
      break;
    }
    n++;
  }
  if (n == 0)
    return st; /* FERRY_END or the error */
  ferry_video_batch *b = &r->batch;
  *b = (ferry_video_batch){.data = r->data.p,
                           .timestamps = r->timestamps,
                           .frame_indices = r->indices,
                           .count = n,
                           .index = r->nbatches++,
                           .channels = 3,
                           .height = r->out_h,
                           .width = r->out_w,
                           .layout = r->o.layout,
                           .dtype = r->o.dtype,
                           .nbytes = (size_t)n * r->sample_bytes,
                           .device = -1};
  *batch = b;
  return FERRY_OK; /* an error after these frames comes with the next call */
}

static int full_frame(ferry_video_reader *r, ferry_image *frame);

int ferry_video_next_frame(ferry_video_reader *r, ferry_image *frame, double *timestamp,
                           int64_t *frame_index) {
  if (!r || !frame)
    return fy_error(FERRY_EINVAL, "ferry_video_next_frame: NULL argument");
  memset(frame, 0, sizeof *frame);
  if (r->gpu)
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: single frames come from the CPU reader (device -1); a GPU reader gives "
                    "batches",
                    r->path);
  double t;
  int64_t idx;
  int st = next_kept(r, &t, &idx);
  if (st != FERRY_OK)
    return st;
  if ((st = full_frame(r, frame)) != FERRY_OK)
    return st;
  if (timestamp)
    *timestamp = t;
  if (frame_index)
    *frame_index = idx;
  return FERRY_OK;
}

int ferry_video_frame_at(ferry_video_reader *r, int64_t k, ferry_image *frame, double *timestamp) {
  if (!r || !frame)
    return fy_error(FERRY_EINVAL, "ferry_video_frame_at: NULL argument");
  memset(frame, 0, sizeof *frame);
  if (k < 0 || (r->info.frames > 0 && k >= r->info.frames))
    return fy_error(FERRY_EINVAL, "%s: frame %lld is out of range (the file has %lld frames)",
                    r->path, (long long)k, (long long)r->info.frames);
  r->random = 1;
  double t, t0 = fy_now();
  if (r->gpu) {
    int st = fy_vgpu_frame_at(r->gpu, k, frame, &t);
    if (st == FERRY_OK && timestamp)
      *timestamp = t;
    return st;
  }
  int st = fy_vdec_frame_at(r->dec, k, &t);
  r->stats.decode_s += fy_now() - t0;
  if (st != FERRY_OK)
    return st;
  r->stats.kept++;
  if ((st = full_frame(r, frame)) != FERRY_OK)
    return st;
  if (timestamp)
    *timestamp = t;
  return FERRY_OK;
}

/* The current frame, upright 8-bit RGB at full size. */
static int full_frame(ferry_video_reader *r, ferry_image *frame) {
  int st;
  const uint8_t *px;
  int w, h;
  size_t stride;
  double t0 = fy_now();
  if ((st = fy_vdec_rgb(r->dec, &px, &w, &h, &stride)) != FERRY_OK)
    return st;
  r->stats.convert_s += fy_now() - t0;
  if (r->orientation != 1) {
    if (fy_buf_reserve(&r->upright, (size_t)w * h * 3) != FERRY_OK)
      return fy_error(FERRY_ENOMEM, "%s: out of memory for a %dx%d frame", r->path, w, h);
    fy_orient(px, w, h, 3, stride, r->orientation, r->upright.p, &w, &h);
    px = r->upright.p;
    stride = (size_t)w * 3;
  }
  *frame = (ferry_image){
      .data = (uint8_t *)px, .width = w, .height = h, .channels = 3, .stride = stride};
  return FERRY_OK;
}

void ferry_video_close(ferry_video_reader *r) {
  if (!r)
    return;
  fy_vdec_close(r->dec);
  fy_vgpu_close(r->gpu);
  fy_buf_free(&r->data);
  fy_buf_free(&r->small);
  fy_buf_free(&r->upright);
  fy_resize_ctx_free(&r->rctx);
  free(r->timestamps);
  free(r->indices);
  free(r->path);
  free(r);
}

int ferry_video_probe_file(const char *path, ferry_video_info *info) {
  if (!path || !info)
    return fy_error(FERRY_EINVAL, "ferry_video_probe_file: NULL argument");
  fy_vdec *d;
  int st = fy_vdec_open(path, 1, 0, &d, info);
  fy_vdec_close(d);
  return st;
}
