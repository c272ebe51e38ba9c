/* hash.h — internal interface of the perceptual hashes (src/hash).
 *
 * Two ways to a hash:
 *   - compatible: the full-resolution image, Pillow's convert("L") and
 *     Pillow's Lanczos resize (fy_resize_u8), then imagehash's numpy/scipy/
 *     pywt arithmetic reproduced exactly (dct.c, wavelet.c): bit-identical to
 *     imagehash 4.3 on the same pixels.
 *   - fast: a small float luminance image (the JPEG DC coefficients, or a
 *     box-reduced decode), a float Lanczos to the hash grid and the same
 *     thresholds: the same hash most of the time, at a fraction of the cost.
 *
 * Bits are packed as imagehash flattens its boolean array: element 0 is the
 * most significant bit of the hash value (ferry_hash.w[] holds the value
 * little-endian in 64-bit words), so that the hex string is the value. */
#ifndef FY_HASH_H
#define FY_HASH_H

#include "codec/codec.h"
#include "core/internal.h"
#include "image/image.h"

#define FY_HASH_MAX_SIZE 16

/* ------------------------------------------------------------------ DCT */

#include "hash/dct_core.h" /* fy_dct_plan, FY_DCT_MAX, the transform */

/* Builds the plan (FERRY_EINVAL when n is not supported). */
int fy_dct_plan_init(fy_dct_plan *p, int n);
/* In place: c[k] = 2 sum_j c[j] cos(pi k (2j + 1) / 2n), the rounding of
 * scipy.fftpack.dct(c) (type 2, norm None). */
void fy_dct2(const fy_dct_plan *p, double *c);
/* scipy.fftpack.dct(scipy.fftpack.dct(pixels, axis=0), axis=1)[:keep, :keep]
 * for an n x n 8-bit image; out is keep x keep, row-major. */
void fy_dct2_2d_low(const fy_dct_plan *p, const uint8_t *pixels, size_t stride, int keep,
                    double *out);

/* -------------------------------------------------------------- Haar */

/* Doubles of scratch that fy_haar_remove_ll needs for an n x n array. */
size_t fy_haar_scratch_doubles(int n);
/* In place on an n x n array (n a power of two): PyWavelets'
 * waverec2(wavedec2(x, 'haar', level=log2 n) with the approximation set to
 * zero), as imagehash's whash(remove_max_haar_ll=True) does. */
void fy_haar_remove_ll(double *x, int n, double *scratch);
/* In place: the approximation of `levels` Haar levels (pywt.wavedec2(x,
 * 'haar', level=levels)[0]), left in the top-left (n >> levels)^2 of x,
 * row-major and packed. scratch holds n^2 / 2 doubles. */
void fy_haar_ll(double *x, int n, int levels, double *scratch);

/* ------------------------------------------------------------- bits */

/* An empty hash of `bits` bits. */
void fy_bits_clear(ferry_hash *h, int bits);
/* Sets / reads element i of imagehash's flattened array. */
void fy_bits_set(ferry_hash *h, int i);
int fy_bits_get(const ferry_hash *h, int i);
/* h = (v[i] > threshold) for i < n. */
void fy_bits_above(ferry_hash *h, const double *v, int n, double threshold);
/* The mean of n values, summed in order. */
double fy_mean(const double *v, int n);
/* numpy.median of n values (n even: the mean of the middle two, as numpy
 * computes it). scratch holds n doubles. */
double fy_median(const double *v, int n, double *scratch);

/* ------------------------------------------------------------ images */

/* An 8-bit gray image (Pillow's "L"). */
typedef struct fy_gray {
  const uint8_t *p;
  int w, h;
  size_t stride;
} fy_gray;

/* A float luminance image covering the picture: the picture is the box
 * [box[0], box[2]) x [box[1], box[3]) in pixel units of p (the last row
 * and column may be partly outside it). */
typedef struct fy_fimage {
  const float *p;
  int w, h;
  double box[4];
} fy_fimage;

/* Separable Lanczos-3 (Pillow's geometry, double weights) / exact-area
 * average of the box of src to dw x dh. */
int fy_lanczos_f(const float *src, int sw, int sh, const double box[4], float *dst, int dw, int dh,
                 fy_buf *scratch);
int fy_box_f(const float *src, int sw, int sh, const double box[4], float *dst, int dw, int dh,
             fy_buf *scratch);
/* Pillow's convert("L") of an RGB image. */
void fy_rgb_to_l(const uint8_t *rgb, int w, int h, size_t stride, uint8_t *gray, size_t gstride);
/* Whether image bytes hold a gray picture (JPEG with one component, gray
 * or gray+alpha PNG), from the header: then decoding to one channel is
 * Pillow's L without a conversion. */
int fy_source_is_gray(const uint8_t *data, size_t size, ferry_format f);
/* Averages f x f cells of an 8-bit image (1 or 3 channels) into a float
 * luminance image of ceil(w/f) x ceil(h/f) (Pillow's L per pixel, then the
 * mean) and, when rgb is not NULL, the rounded mean colour of each cell. */
void fy_reduce_u8(const uint8_t *src, int w, int h, size_t stride, int channels, int f, float *gray,
                  uint8_t *rgb);

/* --------------------------------------------------------- colorhash */

/* Pixel counts of colorhash's categories. */
typedef struct fy_color_counts {
  uint64_t total, black, gray, colors; /* colors: neither black nor gray */
  uint64_t faint[6], bright[6];        /* by hue bin */
} fy_color_counts;

/* Saturation class by (max, min) and hue bin by (max channel, distances of
 * the other two to the max), from Pillow's rgb2hsv. */
typedef struct fy_color_tables {
  uint8_t *sat, *hue;
  int ready;
} fy_color_tables;

int fy_color_tables_init(fy_color_tables *t);
void fy_color_tables_free(fy_color_tables *t);
/* Pillow's RGB -> HSV hue and saturation of one pixel. */
void fy_pillow_hsv(int r, int g, int b, int *hue, int *sat);
/* Adds an RGB image's pixels to the counts; writes Pillow's L of every
 * pixel to `gray` when not NULL. */
void fy_color_count_rgb(const fy_color_tables *t, const uint8_t *rgb, int w, int h, size_t stride,
                        uint8_t *gray, size_t gstride, fy_color_counts *c);
/* The same for a gray image (every pixel is black or gray). */
void fy_color_count_gray(const uint8_t *gray, int w, int h, size_t stride, fy_color_counts *c);
/* imagehash.colorhash's bits from the counts. */
void fy_colorhash_bits(const fy_color_counts *c, int binbits, ferry_hash *out);

/* ------------------------------------------------------- JPEG DC reader */

#include "codec/jpeg_dc.h" /* fy_jpeg_dc_read: fast mode's pixels */

/* Decodes a YCbCr JPEG to Pillow's L (into *gray, described by *out) a
 * strip at a time, counting colorhash's categories on the way when counts
 * is not NULL. FY_DC_FALLBACK for anything else (the codec decodes it). */
int fy_jpeg_gray(const uint8_t *data, size_t size, uint64_t max_pixels, fy_buf *gray, fy_buf *strip,
                 const fy_color_tables *t, fy_color_counts *counts, fy_gray *out);

/* ------------------------------------------------------ hash pipelines */

/* Scratch of one hashing thread. */
typedef struct fy_hash_ctx {
  fy_decoder dec;
  fy_buf file, gray, small, work, fgray, fsmall, fscratch, cells, strip, sig, sig_in;
  fy_resize_ctx resize;
  fy_dct_plan dct32, dct64;
  fy_color_tables colors;
  fy_jpeg_dc dc;
} fy_hash_ctx;

int fy_hash_ctx_init(fy_hash_ctx *c);
void fy_hash_ctx_free(fy_hash_ctx *c);

/* imagehash's whash image_scale for a width x height image. */
int fy_whash_scale(int width, int height, int hash_size);
/* One hash of a grey image the mode's way (img: the mode's image type,
 * fy_gray for compatible mode, fy_fimage for fast; kind tells dhash from
 * dhash_v). */
typedef int (*fy_gray_hash_fn)(fy_hash_ctx *c, const void *img, ferry_hash_kind kind, int hash_size,
                               ferry_hash *out);
/* The hashes of the kinds asked for that fns has (indexed by
 * ferry_hash_kind), in the enum's order; the first error ends it. Both modes'
 * one loop over the kinds. */
static inline int fy_gray_hashes_with(fy_hash_ctx *c, const void *img, unsigned kinds,
                                      int hash_size, const fy_gray_hash_fn *fns,
                                      ferry_hash_result *r) {
  int rc = FERRY_OK;
  for (int k = 0; k < FERRY_HASH_KIND_COUNT && !rc; k++)
    if ((kinds & FERRY_HASH_MASK(k)) && fns[k])
      rc = fns[k](c, img, (ferry_hash_kind)k, hash_size, &r->hash[k]);
  return rc;
}
/* The modes' grey hashes for fy_gray_hashes_with, in ferry_hash_kind's order
 * (colorhash is not a grey hash: NULL): compatible mode's ahash, dhash,
 * dhash_v, phash and whash of an L image (fy_gray), and fast mode's from a
 * float luminance image (fy_fimage). */
extern const fy_gray_hash_fn fy_compat_gray_fns[FERRY_HASH_KIND_COUNT];
extern const fy_gray_hash_fn fy_fast_gray_fns[FERRY_HASH_KIND_COUNT];

/* The pixels compatible mode hashes: Pillow's L (channels 1), or RGB
 * (channels 3, only when fy_compat_decode was asked not to convert: a GPU
 * converts it). Valid until the next call with the same context. */
typedef struct fy_compat_image {
  const uint8_t *p;
  int w, h, channels;
  size_t stride;
} fy_compat_image;

/* Compatible mode from file bytes up to the pixels, the one copy of that
 * logic (ferry_hash_memory and the GPU paths both use it): colour JPEGs
 * straight to Pillow's L (fy_jpeg_gray), other pictures decoded at full
 * size without orientation or DCT scaling, to RGB or to L when the source
 * is gray and colorhash is not wanted; colorhash's categories counted on
 * the way. With to_l, RGB pictures are converted to L here. r gets width,
 * height, exact and, when o->kinds asks for it, colorhash (r->kinds is then
 * that bit alone); format is the caller's (f). */
int fy_compat_decode(fy_hash_ctx *c, const ferry_hash_options *o, const uint8_t *data, size_t size,
                     const char *name, ferry_format f, int to_l, ferry_hash_result *r,
                     fy_compat_image *out);
/* The same from a file, as ferry_hash_file reads it (r cleared, then
 * r->format set even when decoding fails), RGB left unconverted: the CPU
 * part of compatible mode on a GPU. */
int fy_compat_decode_file(fy_hash_ctx *c, const ferry_hash_options *o, const char *path,
                          ferry_hash_result *r, fy_compat_image *out);

/* ------------------------------------------------------- signature */

/* signature.c: the grey levels a border row or column of the grid spans at
 * most, how far its mean may stray from the outermost line's, and the grid
 * (FY_SIG_GRID x FY_SIG_GRID means) every signature starts from. A looser
 * test cut skies and plain walls off ordinary photos (80 of the corpus's
 * 418; 22 now), and where a line's spread sat at the threshold two decodes
 * of one file trimmed differently. */
#define FY_SIG_FLAT 8
#define FY_SIG_SAME 6
#define FY_SIG_GRID 128
/* The parts of a signature, as fractions (x0, y0, x1, y1) of the trimmed
 * picture: the whole, then the five 90 % crops. */
extern const double fy_sig_parts[FERRY_SIGNATURE_PARTS][4];
/* The signature of a float luminance image (fast mode's) / of 8-bit pixels
 * (1 channel L or 3 channels RGB). */
int fy_signature(fy_hash_ctx *c, const fy_fimage *img, ferry_signature *out);
int fy_signature_u8(fy_hash_ctx *c, const uint8_t *px, int w, int h, size_t stride, int channels,
                    ferry_signature *out);
/* The box (x0, y0, x1, y1) of an n x n grid left after cutting off flat
 * rows and columns. */
void fy_sig_trim(const float *g, int n, int box[4]);
/* A part's code for the picture turned: turn = 4 transposed + 2 mirrored
 * (columns reversed) + 1 flipped (rows reversed), applied in that order. */
void fy_sig_turn(const uint64_t in[4], int turn, uint64_t out[4]);
/* Where pixel (y, x) of an n x n picture turned that way comes from, as a
 * row-major index of the picture as it is: out = F(M(T(in))), T transposes,
 * M reverses columns, F rows (the one rule for every grid turned). */
static inline int fy_sig_turn_at(int n, int turn, int y, int x) {
  int sy = turn & 1 ? n - 1 - y : y, sx = turn & 2 ? n - 1 - x : x;
  return turn & 4 ? sx * n + sy : sy * n + sx;
}
/* The same turn of an n x n thumbnail. */
void fy_sig_turn_thumb(const uint8_t *in, int n, int turn, uint8_t *out);

/* sigwin.c: crops at any place, from the thumbnail. Boxes are (x0, y0,
 * width, height), fractions of the picture's sides. FY_SIG_WINDOWS windows
 * (FY_SIG_WIN_AXIS spans of each side, window k spanning k % AXIS across
 * and k / AXIS down), each reduced to FY_SIG_WIN_GRID x FY_SIG_WIN_GRID;
 * an alignment keeps at least FY_SIG_CROP_MIN of each side. */
#define FY_SIG_WIN_AXIS 8
#define FY_SIG_WINDOWS (FY_SIG_WIN_AXIS * FY_SIG_WIN_AXIS)
#define FY_SIG_WIN_GRID 16
#define FY_SIG_CROP_MIN 0.7
void fy_sig_window(int k, double box[4]);
/* The box of a thumbnail as a grid, exact-area means. */
void fy_sig_grid(const uint8_t *thumb, const double box[4], float *out);
/* The 64-bit code of the whole thumbnail (its grid into `grid`) and of its
 * windows. */
uint64_t fy_sig_whole_code(const uint8_t *thumb, float *grid);
void fy_sig_window_codes(const uint8_t *thumb, uint64_t codes[FY_SIG_WINDOWS]);
/* Pearson correlation of two grids of n values (0 when one is flat). */
double fy_sig_correlation(const float *a, const float *b, int n);
/* How well `small` (a whole grid) is the box of `big` (a thumbnail) once
 * the box is aligned (refined in place): the best correlation; below
 * `floor` at the start, that one unrefined. */
double fy_sig_crop_align(const uint8_t *big, const float *small, double box[4], double floor);

struct ferry_hasher {
  ferry_hash_options o;
  fy_hash_ctx c;
};

/* Checks hash options: FERRY_OK or FERRY_EINVAL with a message. */
int fy_hash_options_check(const ferry_hash_options *o);
/* The options a public call was given, into *out: a copy of `in`, or the
 * defaults when it is NULL; then checked as fy_hash_options_check. */
int fy_hash_options_take(const ferry_hash_options *in, ferry_hash_options *out);

#endif
