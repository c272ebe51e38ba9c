/* jpeg_common.c — libjpeg error handling, limits and DCT scale choice shared
 * by the JPEG decoders (interleaved RGB and planar YCbCr). */
#include "codec/jpeg_int.h"

#include <stdio.h>
#include <string.h>

/* libjpeg reports errors through a callback that must not return: jump back
 * to the caller with the formatted message. Corrupt-data warnings (a
 * truncated file, a damaged scan) are errors too: a training pipeline must
 * not learn from grey padding. */

static void jerr_exit(j_common_ptr cinfo) {
  fy_jerr *e = (fy_jerr *)cinfo->err;
  e->pub.format_message(cinfo, e->msg);
  longjmp(e->jump, 1);
}

static void jerr_emit(j_common_ptr cinfo, int level) {
  fy_jerr *e = (fy_jerr *)cinfo->err;
  if (level >= 0)
    return; /* trace messages */
  if (e->pub.msg_code == JWRN_JPEG_EOF)
    e->truncated = 1;
  e->pub.format_message(cinfo, e->msg);
  longjmp(e->jump, 1);
}

static void jerr_silent(j_common_ptr cinfo) { (void)cinfo; }

void fy_jerr_init(struct jpeg_decompress_struct *cinfo, fy_jerr *e) {
  cinfo->err = jpeg_std_error(&e->pub);
  e->pub.error_exit = jerr_exit;
  e->pub.emit_message = jerr_emit;
  e->pub.output_message = jerr_silent;
  e->msg[0] = '\0';
  e->truncated = 0;
  e->too_many_scans = 0;
}

/* libjpeg-turbo's allocation methods, each first asking the fault counter
 * (buf.c). Raising JERR_OUT_OF_MEMORY is what libjpeg itself does when
 * malloc fails, so the unwinding is libjpeg's tested path. */
static void injected_oom(j_common_ptr c) { ERREXIT1(c, JERR_OUT_OF_MEMORY, 0); }

static const struct jpeg_memory_mgr *own(j_common_ptr c) { return &((fy_jerr *)c->err)->mem; }

static void *mem_small(j_common_ptr c, int pool, size_t n) {
  if (fy_fail_alloc_now())
    injected_oom(c);
  return own(c)->alloc_small(c, pool, n);
}

static void *mem_large(j_common_ptr c, int pool, size_t n) {
  if (fy_fail_alloc_now())
    injected_oom(c);
  return own(c)->alloc_large(c, pool, n);
}

static JSAMPARRAY mem_sarray(j_common_ptr c, int pool, JDIMENSION w, JDIMENSION rows) {
  if (fy_fail_alloc_now())
    injected_oom(c);
  return own(c)->alloc_sarray(c, pool, w, rows);
}

static JBLOCKARRAY mem_barray(j_common_ptr c, int pool, JDIMENSION w, JDIMENSION rows) {
  if (fy_fail_alloc_now())
    injected_oom(c);
  return own(c)->alloc_barray(c, pool, w, rows);
}

/* Allocates the whole-image buffers (progressive and multi-scan files). */
static void mem_realize(j_common_ptr c) {
  if (fy_fail_alloc_now())
    injected_oom(c);
  own(c)->realize_virt_arrays(c);
}

static void scan_limit(j_common_ptr c) {
  struct jpeg_decompress_struct *d = (struct jpeg_decompress_struct *)c;
  if (!c->is_decompressor || d->input_scan_number <= FY_JPEG_MAX_SCANS)
    return;
  fy_jerr *e = (fy_jerr *)c->err;
  e->too_many_scans = 1;
  longjmp(e->jump, 1);
}

void fy_jpeg_mem_hook(struct jpeg_decompress_struct *cinfo) {
  fy_jerr *e = (fy_jerr *)cinfo->err;
  memset(&e->progress, 0, sizeof e->progress);
  e->progress.progress_monitor = scan_limit;
  cinfo->progress = &e->progress;
  if (!fy_fail_alloc_armed())
    return;
  struct jpeg_memory_mgr *m = cinfo->mem;
  ((fy_jerr *)cinfo->err)->mem = *m;
  m->alloc_small = mem_small;
  m->alloc_large = mem_large;
  m->alloc_sarray = mem_sarray;
  m->alloc_barray = mem_barray;
  m->realize_virt_arrays = mem_realize;
}

int fy_jerr_status(const fy_jerr *e, const char *name) {
  if (e->too_many_scans)
    return fy_error(FERRY_ETOO_LARGE, "%s: JPEG with more than %d scans, over the limit", name,
                    FY_JPEG_MAX_SCANS);
  if (e->pub.msg_code == JERR_OUT_OF_MEMORY)
    return fy_error(FERRY_ENOMEM, "%s: out of memory decoding JPEG (libjpeg: %s)", name, e->msg);
  if (e->truncated)
    return fy_error(FERRY_ECORRUPT, "%s: truncated JPEG data", name);
  if (e->pub.msg_code == JERR_SOF_UNSUPPORTED) /* lossless (SOF3), hierarchical, ... */
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: unsupported format: a JPEG process ferry does not "
                    "decode (%s)",
                    name, e->msg);
  if (e->pub.msg_code == JERR_NO_SOI || e->pub.msg_code == JERR_INPUT_EMPTY)
    return fy_error(FERRY_ECORRUPT, "%s: not a JPEG file (%s)", name, e->msg);
  return fy_error(FERRY_ECORRUPT, "%s: corrupt JPEG: %s", name, e->msg);
}

/* Smallest DCT scale M/8 whose output of the w x h region keeps at least
 * min_w x min_h pixels. Decoding at 1/2, 1/4 or 1/8 skips most of the IDCT
 * and upsampling work: this is where ferry overtakes a full decode. */
int fy_jpeg_pick_scale(int w, int h, int min_w, int min_h) {
  if (min_w <= 0 || min_h <= 0)
    return 8;
  /* Only the power-of-two scales: libjpeg-turbo has SIMD IDCTs for them,
   * while its 3/8, 5/8, 6/8, 7/8 IDCTs are scalar and measured slower than
   * decoding at the next power of two up. */
  static const int choices[] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    int m = choices[i];
    if ((long)w * m >= (long)min_w * 8 && (long)h * m >= (long)min_h * 8)
      return m;
  }
  return 8;
}

int fy_jpeg_check_limits(const struct jpeg_decompress_struct *c, const fy_codec_req *req,
                         const char *name) {
  if (c->image_width == 0 || c->image_height == 0)
    return fy_error(FERRY_ECORRUPT, "%s: JPEG has zero size", name);
  if (fy_over_pixel_limit(c->image_width, c->image_height, req->max_pixels))
    return fy_pixel_limit_error(name, "JPEG", c->image_width, c->image_height, req->max_pixels);
  return FERRY_OK;
}
