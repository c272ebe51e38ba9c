/* reader_gpu.c — batches of video frames made on the GPU: NVDEC decodes
 * (nvdec.c), each kept frame is converted to upright RGB in the slot's
 * device arena (cuda/yuv.cu), and the loader's batch kernels (cuda/gpu.cu)
 * resample every frame of the batch with the CPU resizer's own fixed-point
 * tables and store it (layout, dtype, normalize) in device memory.
 *
 * Batches rotate through NSLOTS slots. A batch handed out stays valid until
 * the call after next; the consumer's work on the legacy default stream
 * queued before that call is waited for (stream-ordered) before its slot is
 * written again. */
#include "codec/codec.h"
#include "image/image.h"
#include "image/resample.h"
#include "video/video.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSLOTS 3

struct fy_vgpu {
  char *path;
  ferry_video_options o;
  ferry_video_info info;
  fy_nvdec *dec;
  fy_vdec *cpu; /* instead of dec: a stream NVDEC does not take */
  fy_buf host;  /* a CPU-decoded frame, upright, before its upload */
  fy_gpu *g;
  void *stream;
  fy_vsampler sampler;
  int orientation;
  int uw, uh;       /* upright decoded frame */
  int out_w, out_h; /* output */
  size_t frame_bytes, temp_bytes;
  int32_t *tab; /* resampling tables, the same for every frame */
  int tab_entries;
  fy_gpu_sample proto;
  double *ts[NSLOTS];
  int64_t *idx[NSLOTS];
  ferry_video_batch batch;
  int nbatches, handed; /* handed: a batch is out (its slot: (nbatches-1) % NSLOTS) */
  int done;
  char done_msg[512];
  ferry_video_stats stats;
};

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Source box in the upright frame: all of it, or the centred box of the
 * output's aspect ratio. */
static fy_box source_box(const fy_vgpu *v) {
  fy_box b = {0, 0, v->uw, v->uh};
  if (v->o.crop == FERRY_CROP_CENTER) {
    double s = fmin((double)v->uw / v->out_w, (double)v->uh / v->out_h);
    double bw = v->out_w * s, bh = v->out_h * s;
    b = (fy_box){(v->uw - bw) / 2, (v->uh - bh) / 2, (v->uw + bw) / 2, (v->uh + bh) / 2};
  }
  return b;
}

static int build_tables(fy_vgpu *v) {
  if (v->o.filter == FERRY_FILTER_NEAREST)
    return fy_error(FERRY_EUNSUPPORTED, "%s: the GPU video path has no nearest filter", v->path);
  fy_box b = source_box(v);
  int tx = fy_coeffs_max_taps(v->o.filter, b.x1 - b.x0, v->out_w);
  int ty = fy_coeffs_max_taps(v->o.filter, b.y1 - b.y0, v->out_h);
  int cap = v->out_w * (tx + 2) + v->out_h * (ty + 2);
  fy_buf scratch = {0};
  fy_axis_table ax, ay;
  int st = FERRY_ENOMEM;
  if ((v->tab = malloc(sizeof *v->tab * (size_t)cap)) != NULL)
    st = fy_resize_axis_table(v->o.filter, v->uw, b.x0, b.x1, v->out_w, v->tab, cap, &ax, &scratch);
  if (st == FERRY_OK)
    st = fy_resize_axis_table(v->o.filter, v->uh, b.y0, b.y1, v->out_h, v->tab + ax.entries,
                              cap - ax.entries, &ay, &scratch);
  fy_buf_free(&scratch);
  if (st != FERRY_OK)
    return fy_error(st, "%s: cannot plan the resize %dx%d -> %dx%d", v->path, v->uw, v->uh,
                    v->out_w, v->out_h);
  v->tab_entries = ax.entries + ay.entries;
  v->proto = (fy_gpu_sample){.pitch = v->uw * 3,
                             .xs = 0,
                             .xk = v->out_w,
                             .xtaps = ax.taps,
                             .ys = ax.entries,
                             .yk = ax.entries + v->out_h,
                             .ytaps = ay.taps,
                             .row0 = ay.first,
                             .rows = ay.last - ay.first};
  v->temp_bytes = align256((size_t)(ay.last - ay.first) * v->out_w * 3);
  return FERRY_OK;
}

static int open_gpu(fy_vgpu *v) {
  int B = v->o.batch_size;
  fy_gpu_params p = {.device = v->o.device,
                     .nslots = NSLOTS,
                     .batch = B,
                     .width = v->out_w,
                     .height = v->out_h,
                     .layout = v->o.layout,
                     .dtype = v->o.dtype,
                     .normalize = v->o.normalize,
                     .arena_bytes = v->frame_bytes * (size_t)B,
                     .temp_bytes = v->temp_bytes * (size_t)B,
                     .table_entries = v->tab_entries,
                     .hw_decode = 0,
                     .decoders = 1,
                     .no_staging = 1};
  memcpy(p.mean, v->o.mean, sizeof p.mean);
  memcpy(p.std, v->o.std, sizeof p.std);
  int st = fy_gpu_open(&p, &v->g);
  if (st != FERRY_OK)
    return st;
  v->stream = fy_gpu_stream(v->g);
  for (int i = 0; i < NSLOTS; i++) {
    v->ts[i] = calloc((size_t)B, sizeof *v->ts[i]);
    v->idx[i] = calloc((size_t)B, sizeof *v->idx[i]);
    if (!v->ts[i] || !v->idx[i])
      return fy_error(FERRY_ENOMEM, "%s: out of memory", v->path);
  }
  return FERRY_OK;
}

int fy_vgpu_open(const char *path, const ferry_video_options *o, fy_vgpu **out,
                 ferry_video_info *info) {
  *out = NULL;
  double t0 = fy_now();
  fy_vgpu *v = calloc(1, sizeof *v);
  if (!v || !(v->path = strdup(path))) {
    free(v);
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  }
  v->o = *o;
  int st = o->cpu_decode ? FERRY_EUNSUPPORTED
                         : fy_nvdec_open(path, o->device, o->start_s, &v->dec, &v->info);
  if (st == FERRY_OK)
    fy_nvdec_set_keep(v->dec, o->nvdec_keep);
  if (st == FERRY_OK && fy_nvdec_set_strict(v->dec, o->strict) != FERRY_OK) {
    fy_nvdec_close(v->dec); /* strict, and NVDEC cannot flag this codec's damage */
    v->dec = NULL;
    st = FERRY_EUNSUPPORTED;
  }
  if (st == FERRY_EUNSUPPORTED) {
    /* NVDEC refuses this stream (codec, chroma format, size) or this
     * machine has none (no libnvcuvid): decode on the CPU and upload the
     * frames; the batches are made on the GPU all the same (info.nvdec
     * says which) */
    st = fy_vdec_open(path, o->threads, o->strict, &v->cpu, &v->info);
    if (st == FERRY_OK && o->start_s > 0)
      st = fy_vdec_seek(v->cpu, o->start_s);
  }
  if (st == FERRY_OK) {
    if (o->ignore_rotation) {
      v->info.rotation = 0;
      v->info.upright_width = v->info.width;
      v->info.upright_height = v->info.height;
    }
    v->orientation = fy_video_orientation(v->info.rotation);
    v->uw = v->info.upright_width;
    v->uh = v->info.upright_height;
    v->out_w = o->width ? o->width : v->uw;
    v->out_h = o->height ? o->height : v->uh;
    v->frame_bytes = align256((size_t)v->uw * v->uh * 3);
    if (v->uw < 1 || v->uh < 1)
      st = fy_error(FERRY_ECORRUPT, "%s: video of size %dx%d", path, v->uw, v->uh);
  }
  if (st == FERRY_OK)
    st = build_tables(v);
  if (st == FERRY_OK)
    st = open_gpu(v);
  if (st != FERRY_OK) {
    fy_vgpu_close(v);
    return st;
  }
  fy_vsampler_init(&v->sampler, o->stride, o->rate, o->start_s, o->end_s);
  if (v->cpu)
    fy_vdec_sampler(v->cpu, &v->sampler);
  else
    fy_nvdec_sampler(v->dec, &v->sampler);
  v->stats.open_s = fy_now() - t0;
  *info = v->info;
  *out = v;
  return FERRY_OK;
}

void fy_vgpu_close(fy_vgpu *v) {
  if (!v)
    return;
  fy_nvdec_close(v->dec);
  fy_vdec_close(v->cpu);
  fy_buf_free(&v->host);
  fy_gpu_close(v->g);
  for (int i = 0; i < NSLOTS; i++) {
    free(v->ts[i]);
    free(v->idx[i]);
  }
  free(v->tab);
  free(v->path);
  free(v);
}

void fy_vgpu_stats(const fy_vgpu *v, ferry_video_stats *s) {
  *s = v->stats;
  if (v->cpu)
    fy_vdec_damage(v->cpu, &s->damaged, &s->first_damaged, &s->first_damaged_s);
  else {
    fy_nvdec_damage(v->dec, &s->damaged, &s->first_damaged, &s->first_damaged_s);
    s->wait_s = fy_nvdec_wait_s(v->dec);
  }
}

/* Decodes up to the next kept frame. */
static int next_kept(fy_vgpu *v, double *t, int64_t *index) {
  for (;;) {
    double t0 = fy_now();
    /* frames before the next one the sample keeps cost what the codec
     * allows: non-reference ones are not decoded (as reader.c) */
    double want = fy_vsample_next(&v->sampler, v->info.fps, v->info.start_s);
    int st;
    if (v->cpu) {
      fy_vdec_want(v->cpu, want);
      st = fy_vdec_next(v->cpu, t, index);
    } else {
      fy_nvdec_want(v->dec, want);
      st = fy_nvdec_next(v->dec, t, index);
    }
    v->stats.decode_s += fy_now() - t0;
    if (st != FERRY_OK)
      return st;
    v->stats.decoded++;
    int k = fy_vsample_index(&v->sampler, *t, *index);
    if (k > 0) {
      v->stats.kept++;
      return FERRY_OK;
    }
    if (k < 0)
      return FERRY_END;
  }
}

/* The CPU decoder's current frame, upright, uploaded to the arena. */
static int upload(fy_vgpu *v, uint8_t *dst) {
  double t0 = fy_now();
  const uint8_t *px;
  int w, h;
  size_t stride, row = (size_t)v->uw * 3;
  int st = fy_vdec_rgb(v->cpu, &px, &w, &h, &stride);
  if (st != FERRY_OK)
    return st;
  if (w != v->info.width || h != v->info.height)
    return fy_error(FERRY_EUNSUPPORTED, "%s: frame size changes mid-stream (%dx%d, then %dx%d)",
                    v->path, v->info.width, v->info.height, w, h);
  if (fy_buf_reserve(&v->host, row * v->uh) != FERRY_OK)
    return fy_error(FERRY_ENOMEM, "%s: out of memory for a %dx%d frame", v->path, w, h);
  int ow, oh;
  if (v->orientation != 1)
    fy_orient(px, w, h, 3, stride, v->orientation, v->host.p, &ow, &oh);
  else
    for (int y = 0; y < h; y++)
      memcpy((uint8_t *)v->host.p + (size_t)y * row, px + (size_t)y * stride, row);
  st = fy_gpu_upload(v->o.device, v->host.p, dst, row * v->uh);
  v->stats.convert_s += fy_now() - t0;
  return st;
}

/* The current frame, upright RGB, into the slot's arena at position k. */
static int convert(fy_vgpu *v, uint8_t *arena, int k) {
  if (v->cpu)
    return upload(v, arena + (size_t)k * v->frame_bytes);
  double t0 = fy_now();
  fy_gpu_yuv f;
  int st = fy_nvdec_map(v->dec, v->stream, &f);
  if (st != FERRY_OK)
    return st;
  double t1 = fy_now();
  v->stats.decode_s += t1 - t0;
  if (f.width != v->info.width || f.height != v->info.height)
    return fy_error(FERRY_EUNSUPPORTED, "%s: frame size changes mid-stream (%dx%d, then %dx%d)",
                    v->path, v->info.width, v->info.height, f.width, f.height);
  f.orientation = v->orientation;
  st = fy_gpu_yuv_to_rgb(&f, arena + (size_t)k * v->frame_bytes, v->uw * 3, v->stream);
  /* the surface goes back to the decoder once the conversion has read it */
  if (st == FERRY_OK)
    st = fy_gpu_stream_sync(v->stream);
  fy_nvdec_unmap(v->dec);
  v->stats.convert_s += fy_now() - t1;
  return st;
}

static int finish(fy_vgpu *v, int s, int n) {
  double t0 = fy_now();
  memcpy(fy_gpu_tables(v->g, s), v->tab, sizeof *v->tab * (size_t)v->tab_entries);
  fy_gpu_sample *smp = fy_gpu_samples(v->g, s);
  uint64_t arena = (uint64_t)(uintptr_t)fy_gpu_arena(v->g, s);
  for (int k = 0; k < n; k++) {
    smp[k] = v->proto;
    smp[k].src = arena + (uint64_t)k * v->frame_bytes;
    smp[k].out_index = k;
    smp[k].temp = (int64_t)((size_t)k * v->temp_bytes);
  }
  int st = fy_gpu_finish(v->g, s, n, v->tab_entries, 0);
  if (st == FERRY_OK)
    st = fy_gpu_wait(v->g, s);
  v->stats.resize_s += fy_now() - t0;
  return st;
}

static int stop(fy_vgpu *v, int st) {
  v->done = st;
  if (st != FERRY_END)
    snprintf(v->done_msg, sizeof v->done_msg, "%s", ferry_last_error());
  return st;
}

int fy_vgpu_frame_at(fy_vgpu *v, int64_t k, ferry_image *frame, double *t) {
  double t0 = fy_now();
  int st = v->cpu ? fy_vdec_frame_at(v->cpu, k, t) : fy_nvdec_frame_at(v->dec, k, t);
  v->stats.decode_s += fy_now() - t0;
  if (st != FERRY_OK)
    return st;
  v->stats.kept++; /* as the CPU reader counts random access */
  /* upright RGB into a slot no batch handed out is in (the next one),
   * then to the host */
  uint8_t *arena = fy_gpu_arena(v->g, v->nbatches % NSLOTS);
  if ((st = convert(v, arena, 0)) != FERRY_OK)
    return st;
  size_t bytes = (size_t)v->uw * v->uh * 3;
  if (fy_buf_reserve(&v->host, bytes) != FERRY_OK)
    return fy_error(FERRY_ENOMEM, "%s: out of memory for a %dx%d frame", v->path, v->uw, v->uh);
  if ((st = fy_gpu_download(v->o.device, arena, v->host.p, bytes)) != FERRY_OK)
    return st;
  *frame = (ferry_image){.data = v->host.p,
                         .width = v->uw,
                         .height = v->uh,
                         .channels = 3,
                         .stride = (size_t)v->uw * 3};
  return FERRY_OK;
}

int fy_vgpu_next(fy_vgpu *v, ferry_video_batch **batch) {
  *batch = NULL;
  if (v->done)
    return v->done == FERRY_END ? FERRY_END : fy_error(v->done, "%s", v->done_msg);
  int s = v->nbatches % NSLOTS;
  if (v->handed) { /* the consumer's default-stream work on the last batch */
    int st = fy_gpu_release(v->g, (v->nbatches - 1) % NSLOTS, NULL);
    if (st != FERRY_OK)
      return stop(v, st);
    v->handed = 0;
  }
  uint8_t *arena = fy_gpu_arena(v->g, s);
  int n = 0, st = FERRY_OK;
  while (n < v->o.batch_size) {
    st = next_kept(v, &v->ts[s][n], &v->idx[s][n]);
    if (st == FERRY_OK)
      st = convert(v, arena, n);
    if (st != FERRY_OK)
      break;
    n++;
  }
  if (st != FERRY_OK)
    stop(v, st);
  if (n == 0)
    return st;
  int fst = finish(v, s, n);
  if (fst != FERRY_OK)
    return stop(v, fst);
  size_t sample = (size_t)v->out_w * v->out_h * 3 * ferry_dtype_size(v->o.dtype);
  v->batch = (ferry_video_batch){.data = fy_gpu_output(v->g, s),
                                 .timestamps = v->ts[s],
                                 .frame_indices = v->idx[s],
                                 .count = n,
                                 .index = v->nbatches++,
                                 .channels = 3,
                                 .height = v->out_h,
                                 .width = v->out_w,
                                 .layout = v->o.layout,
                                 .dtype = v->o.dtype,
                                 .nbytes = (size_t)n * sample,
                                 .device = v->o.device};
  v->handed = 1;
  *batch = &v->batch;
  return FERRY_OK;
}
