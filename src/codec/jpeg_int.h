/* jpeg_int.h — internals shared by the libjpeg-turbo based decoders. */
#ifndef FY_JPEG_INT_H
#define FY_JPEG_INT_H

#include "codec/codec.h"

#include <setjmp.h>
#include <stdio.h>

#include <jerror.h>
#include <jpeglib.h>

typedef struct fy_jerr {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
  int truncated;
  int too_many_scans;
  struct jpeg_memory_mgr mem;        /* libjpeg's own methods, under fy_jpeg_mem_hook */
  struct jpeg_progress_mgr progress; /* the scan limit */
} fy_jerr;

/* The limits of fy_jpeg_scan_budget (jpeg_budget.c), checked before a JPEG
 * is decoded. Most scans a JPEG may hold: a progressive file has about 10
 * (every JPEG of the corpus at most 10); one made of thousands of repeated
 * scans takes minutes to decode (a decoding bomb). libjpeg-turbo's own
 * tools offer the same guard (djpeg -maxscans; 500 suggested there). The
 * progress monitor (fy_jpeg_mem_hook) holds libjpeg to it as well. */
#define FY_JPEG_MAX_SCANS 1000
/* Most times the scans may go over the image's blocks (each scan visits
 * those of its components): libjpeg's progression visits them 4.3 (colour)
 * to 6 (grey) times, every file of the corpus at most 5.3; 16 leaves room
 * for any encoder's script while a 169-megapixel image (the pixel limit)
 * costs at most about 3x a usual progressive decode. */
#define FY_JPEG_MAX_PASSES 16
/* Block visits always allowed (small images, many scans: milliseconds). */
#define FY_JPEG_SCAN_FLOOR (1u << 22)

/* Installs ferry's error manager: errors and corrupt-data warnings longjmp
 * to e->jump with the message in e->msg. */
void fy_jerr_init(struct jpeg_decompress_struct *cinfo, fy_jerr *e);
/* Call right after jpeg_create_decompress, with fy_jerr_init's e
 * installed: sets the scan limit (FY_JPEG_MAX_SCANS, a progress monitor),
 * and, for fault injection (tests) when fy_fail_alloc is armed, routes
 * libjpeg's allocations (cinfo->mem) through the same counter, so that the
 * Nth one fails as libjpeg's own out-of-memory error does. */
void fy_jpeg_mem_hook(struct jpeg_decompress_struct *cinfo);
/* The status and message for a libjpeg failure of file `name`. */
int fy_jerr_status(const fy_jerr *e, const char *name);
/* Refuses zero-size images and those over req->max_pixels. */
int fy_jpeg_check_limits(const struct jpeg_decompress_struct *c, const fy_codec_req *req,
                         const char *name);
/* DCT scale numerator (over 8) for a w x h region that must keep at least
 * min_w x min_h pixels. */
int fy_jpeg_pick_scale(int w, int h, int min_w, int min_h);

#endif
