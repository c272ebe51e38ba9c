/* jpeg_dc.h — the DC coefficients of a baseline or progressive JPEG
 * without decoding the image (jpeg_dc.c: an entropy decoder that skips
 * the AC data): the block means fast-mode hashing (hash/) reads. */
#ifndef FY_CODEC_JPEG_DC_H
#define FY_CODEC_JPEG_DC_H

#include "core/internal.h"

#define FY_DC_LOOKAHEAD 12 /* bits per AC skip lookup */
#define FY_DC_LOOKCODE 10  /* bits per symbol lookup (DC, long AC codes) */
#define FY_DC_FALLBACK 1   /* not an error: decode through libjpeg instead */

typedef struct fy_dc_huff {
  int defined;
  uint16_t look[1 << FY_DC_LOOKCODE];  /* len << 8 | symbol; 0: longer code */
  uint16_t skip[1 << FY_DC_LOOKAHEAD]; /* AC: eob << 10 | coefficients << 4 |
                                          bits of the whole symbols that fit */
  int32_t dcfast[1 << FY_DC_LOOKCODE]; /* DC: difference << 8 | code + magnitude
                                          bits, when both fit; 0: decode */
  int32_t maxcode[18], valoffset[18];
  uint8_t vals[256];
} fy_dc_huff;

typedef struct fy_dc_comp {
  int id, h, v, tq;
  int bw, bh;  /* blocks covering the image */
  int pw, ph;  /* blocks of the MCU-padded grid (row stride pw) */
  int al;      /* progressive: successive-approximation bit reached; -1 none */
  int32_t *dc; /* quantised DC values, pw x ph */
} fy_dc_comp;

typedef struct fy_jpeg_dc {
  fy_buf mem;
  int width, height, ncomp, hmax, vmax, progressive, restart;
  int mcux, mcuy, have_sof, grids, jfif, adobe, adobe_transform;
  fy_dc_comp comp[4];
  uint16_t q0[4];
  int qdef[4];
  fy_dc_huff dcl[4], ac[4];
} fy_jpeg_dc;

/* Reads the DC coefficients of every block of component 0 (and of all
 * components when `color`). FERRY_OK or FY_DC_FALLBACK (never an error
 * message: libjpeg gives those). Images over max_pixels fall back too. */
int fy_jpeg_dc_read(fy_jpeg_dc *dc, const uint8_t *data, size_t size, int color,
                    uint64_t max_pixels);
/* Component 0 as block means (0..255), averaged over f x f blocks:
 * ceil(bw / f) x ceil(bh / f) floats. */
void fy_jpeg_dc_luma(const fy_jpeg_dc *dc, int f, float *out);
/* Block means as RGB (the chroma block under each luma block), 3 bytes per
 * luma block. */
void fy_jpeg_dc_rgb(const fy_jpeg_dc *dc, uint8_t *out);

#endif
