/* codec.h — internal decoder interface shared by JPEG, PNG, WebP, TIFF, GIF, HEIF and BMP. */
#ifndef FY_CODEC_H
#define FY_CODEC_H

/* The longest side any decoder takes (only PNG could go beyond: JPEG
 * stops at 65,535, WebP at 16,383). A PNG's rows cost time and memory of
 * their own (libpng per row, the resampler's tables per source row): a
 * 1 x 178,956,970 PNG, within the pixel limit, took 41 s and 2 GB; one of
 * 1 x 2^20 takes 0.25 s. Applies while max_pixels does. */
#define FY_MAX_SIDE (1u << 20)

#include "core/internal.h"

#include <string.h>

/* Format from the first bytes (magic numbers), never from a file name. */
ferry_format fy_sniff(const uint8_t *data, size_t size);

/* Called once the header is known, with the upright (oriented) size of the
 * source, so the caller can choose the crop (random-resized-crop needs the
 * size) before any pixel is decoded. It fills *crop (upright coordinates,
 * width 0 = whole image) and may adjust *min_w / *min_h, the size the
 * decoded crop must keep (DCT scaling hint). Returns FERRY_OK or an error. */
typedef int (*fy_plan_fn)(void *user, int upright_w, int upright_h, ferry_rect *crop, int *min_w,
                          int *min_h);

/* What a decode produced, beyond the pixels. */
typedef struct fy_decoded {
  ferry_image image; /* points into the caller's buffer; upright */
  int src_w, src_h;  /* size of the whole source image: stored as the codecs
                      * return it, upright once fy_decode is done */
  /* The decoded image covers the upright source region starting at
   * (x0, y0), sampled at scale (sx, sy) = decoded px per source px. It may
   * cover more than the requested crop (JPEG iMCU alignment); the caller
   * resamples the exact box: ((cx - x0) * sx, ...). */
  double x0, y0, sx, sy;
  int scale_num, scale_denom; /* JPEG DCT scale used (1/1 otherwise) */
} fy_decoded;

/* Per-thread decode state reused between images (grow-only buffers). */
typedef struct fy_decoder {
  fy_buf pixels; /* output pixels */
  fy_buf temp;   /* scratch: full rows, orientation, conversions */
  fy_buf temp2;
  /* Set by the loader: JPEGs whose decoded region is then downscaled in
   * both axes (larger than the plan's min_w x min_h) are decoded with box
   * chroma upsampling fused with colour conversion. 0 (zero-initialised)
   * keeps Pillow's settings. */
  int fast_decode;
  /* Set by compatible hashing: 16-bit PNG samples become 8 bits as in
   * Pillow (gray: min(v, 255); RGB(A)/LA: the high byte) instead of
   * rounded (see png.c). */
  int pillow_16bit;
} fy_decoder;

void fy_decoder_free(fy_decoder *dec);

/* Decodes `data` to 8-bit RGB (opts->channels 3) or gray (1), upright
 * unless opts->ignore_orientation. `plan` may be NULL (then opts->crop and
 * opts->min_width/min_height are used). `name` names the file in errors. */
int fy_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
              const ferry_decode_options *opts, fy_plan_fn plan, void *plan_user, fy_decoded *out);

/* Per-format parts, called by fy_decode / ferry_probe after sniffing. Each
 * returns pixels in stored orientation covering `crop` (stored coordinates,
 * width 0 = all); orientation is applied by the caller. */
int fy_jpeg_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info);
int fy_png_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info);
int fy_webp_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info);
int fy_tiff_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info);
int fy_gif_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info);
int fy_heif_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info);
int fy_bmp_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info);
int fy_raw_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info);
/* 1 when the bytes are a camera raw file LibRaw reads (sniff.c): ORF, RW2,
 * RAF, CR3 by their magic; CR2, DNG (DNGVersion tag) and the TIFF-shaped
 * raws of Nikon, Sony, Pentax/Ricoh (Make) among TIFFs. */
int fy_sniff_raw(const uint8_t *data, size_t size);
/* A TIFF header's 16/32-bit field (n bytes at p) in its byte order (big:
 * "MM"): sniff.c, raw_check.c. */
uint32_t fy_tiff_u(const uint8_t *p, int n, int big);
/* 1 for TIFF's magic (II*\0, MM\0*), 2 for a TIFF-shaped raw's (Olympus
 * ORF, Panasonic RW2: byte order in bytes 0-1, IFD0's offset at byte 4),
 * 0 otherwise (fewer than 8 bytes too): sniff.c, raw_check.c. */
int fy_tiff_magic(const uint8_t *d, size_t n);

/* Decode request after planning, in stored (un-oriented) coordinates. */
typedef struct fy_codec_req {
  int channels;        /* 1 or 3 */
  uint64_t max_pixels; /* 0 = no limit; checked before allocating */
  ferry_rect crop;     /* stored coordinates; width 0 = whole image */
  int min_w, min_h;    /* stored orientation; 0 = full resolution */
  int allow_dct_scaling;
  int fast_upsampling; /* JPEG: box chroma upsampling */
  int fast_decode;     /* JPEG: fast settings when then downscaled (fy_decoder) */
  /* Optional planning after the header is read (JPEG calls it before any
   * pixel is decoded; see fy_codec_plan). */
  fy_plan_fn plan;
  void *plan_user;
  int orientation; /* of the source, for planning in upright terms */
  int planned;     /* set by fy_codec_plan */
} fy_codec_req;

/* Runs req->plan (if any) for a source of stored size sw x sh: fills
 * req->crop (stored coordinates, clamped) and req->min_w/min_h (stored
 * orientation). Codecs that can crop or scale while decoding call it once
 * they know the size; fy_decode calls it for those that do not (orient.c,
 * so that the codecs do not call back into decode.c). */
int fy_codec_plan(fy_codec_req *req, int sw, int sh);

/* Pillow's RGB -> L (ITU-R 601-2 luma in 16-bit fixed point), the one
 * copy the codecs use. */
static inline uint8_t fy_luma(unsigned r, unsigned g, unsigned b) {
  return (uint8_t)((19595u * r + 38470u * g + 7471u * b + 0x8000u) >> 16);
}

/* The same over n RGB pixels, in place: pixel i is read from 3i >= i
 * before it is written, so one buffer works. */
static inline void fy_rgb_to_gray_inplace(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = fy_luma(p[3 * i], p[3 * i + 1], p[3 * i + 2]);
}

/* *out for a whole image decoded at full size into px (w x h, channels). */
static inline void fy_decoded_whole(fy_decoded *out, uint8_t *px, int w, int h, int channels) {
  memset(out, 0, sizeof *out);
  out->image = (ferry_image){px, w, h, channels, (size_t)w * channels};
  out->src_w = w;
  out->src_h = h;
  out->sx = out->sy = 1.0;
  out->scale_num = out->scale_denom = 1;
}

/* An 8-bit RGB picture (rows `stride` bytes apart; a library's buffer)
 * copied into dec->pixels as RGB (channels 3) or Pillow's luma (1), and
 * *out for it: the last step of the codecs whose library decodes to RGB
 * (HEIF, BMP, camera raw). */
int fy_decoded_from_rgb(fy_decoder *dec, const uint8_t *rgb, int w, int h, size_t stride,
                        int channels, const char *name, fy_decoded *out);
/* 1 when ferry's pixels of these bytes (format f) are Pillow's, so that
 * compatible-mode hashes are imagehash's; 0 where they may differ (each
 * format's rule below). */
int fy_pillow_exact(ferry_format f, const uint8_t *data, size_t size);

/* PNG and WebP decode the whole image (crop is applied by the caller by
 * adjusting x0/y0), into dec->pixels. 16-bit PNG is reduced to 8 bits
 * (rounded: (v * 255 + 32895) >> 16), alpha is dropped (composited on
 * nothing: ML pipelines drop it, as Pillow's convert("RGB") does), palette
 * expanded, gray expanded to RGB when channels is 3, RGB converted to gray
 * with Pillow's weights (L = (19595 R + 38470 G + 7471 B + 32768) >> 16)
 * when channels is 1. */
int fy_png_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out);
int fy_webp_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req, fy_decoded *out);
/* TIFF (tiff.c): the first image, whole, through libtiff's RGBA interface,
 * its orientation tag already applied (as Pillow reads TIFF). */
int fy_tiff_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req, fy_decoded *out);
/* 1 when ferry's pixels of this TIFF are Pillow's (8-bit grey, RGB or
 * palette without alpha), 0 when they may differ (other depths, alpha,
 * CMYK, YCbCr, ...): compatible-mode hashes say so. */
int fy_tiff_pillow_exact(const uint8_t *data, size_t size);
/* GIF (gif.c): the first image, as the palette's colours. */
int fy_gif_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out);
/* 1 when ferry's pixels of this GIF are Pillow's (the first image covers
 * the screen and has a colour table), else 0. */
int fy_gif_pillow_exact(const uint8_t *data, size_t size);
/* HEIF (heif.c): HEIC, AVIF; the primary image, upright (libheif applies
 * the file's transformations), RGB or its luma. */
int fy_heif_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req, fy_decoded *out);
/* 0: Pillow reads HEIF only through a plugin whose decoder may differ. */
int fy_heif_pillow_exact(const uint8_t *data, size_t size);
/* Registers heif_hevc.c's libheif decoder plugin for HEVC (libde265, its
 * damage reported), ahead of libheif's own; once, after heif_init. */
int fy_heif_hevc_register(void);
/* BMP (bmp.c, stb_image): palette, 16, 24, 32-bit, top row first. */
int fy_bmp_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out);
/* 1 for palette, 24- and 32-bit BMPs (Pillow's pixels), 0 for 16-bit and
 * bit-field ones. */
int fy_bmp_pillow_exact(const uint8_t *data, size_t size);
/* camera raw (raw.c, LibRaw): the embedded preview, else the sensor data at
 * half size; its orientation for fy_decode (1 for a developed image, which
 * LibRaw makes upright); never Pillow's (0). */
int fy_raw_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out);
int fy_raw_orientation(const uint8_t *data, size_t size);
/* FERRY_ECORRUPT with the reason when a TIFF that LibRaw would read in a
 * raw (the file itself when TIFF-shaped; the blocks a RAF header points to;
 * a CR3's CMT1-4 boxes) has IFDs or entries pointing past the end of the
 * file, or a RAF header's offsets do, or a CR3's box sizes would make
 * LibRaw loop (raw_check.c, raw_cr3.c: LibRaw is never given it); FERRY_OK
 * otherwise. */
int fy_raw_check(const uint8_t *data, size_t size, const char *name);
/* raw_check.c's walk of the TIFF at byte `base` of the file (its byte
 * order, II or MM, at base): its IFDs from the one at `first` (an offset
 * from base; with `chain`, the next IFDs too), every IFD and entry's data
 * inside the file; messages name `where` (" (the block ...)" or ""). */
int fy_raw_tiff_walk(const uint8_t *d, size_t n, size_t base, uint32_t first, int chain,
                     const char *name, const char *where);
/* A Canon CR3's boxes walked as LibRaw 0.20's parseCR3 walks them
 * (raw_cr3.c): the TIFFs of its CMT1-4 boxes through fy_raw_tiff_walk, and
 * the box sizes on which LibRaw would loop without end or read far past
 * the file refused. */
int fy_raw_cr3_check(const uint8_t *d, size_t n, const char *name);
int fy_raw_pillow_exact(const uint8_t *data, size_t size);
int fy_jpeg_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req, fy_decoded *out);

/* One marker segment of a JPEG: its marker (0xC0..0xFE; 0xD9 for EOI) and
 * its payload, the bytes after the length field (none for EOI). */
typedef struct fy_jpeg_seg {
  uint8_t marker;
  const uint8_t *data;
  size_t len;
} fy_jpeg_seg;

/* The next marker segment of d[0..n) from *pos (2 after SOI to start),
 * which moves past it (for SOS: to the entropy-coded data, where a caller
 * that reads the scan sets *pos past it). Lenient (strict 0, libjpeg's
 * way): junk bytes, stuffed zeros and markers without a length (TEM, RSTn,
 * SOI) between segments are stepped over. Strict: only fill bytes may come
 * between segments. 1: *seg is the segment; 0: the data ended (lenient);
 * -1: a length below 2 or past the data, or (strict) anything out of place. */
int fy_jpeg_seg_next(const uint8_t *d, size_t n, size_t *pos, int strict, fy_jpeg_seg *seg);

/* FERRY_ETOO_LARGE (naming the file) when a JPEG's scans would cost
 * libjpeg more than FY_JPEG_MAX_SCANS scans or FY_JPEG_MAX_PASSES passes
 * over its blocks (jpeg_int.h), read from its markers before it is
 * decoded (jpeg_budget.c); FERRY_OK otherwise, damage included (libjpeg's
 * message). */
int fy_jpeg_scan_budget(const uint8_t *data, size_t size, const char *name);

/* 1 when a single-scan JPEG's marker structure is intact and it ends with
 * EOI (cheap: one pass over the bytes, no decoding). */
int fy_jpeg_structure_ok(const uint8_t *data, size_t size);

/* EXIF orientation (1..8) from a TIFF-structured EXIF payload (starting at
 * the "II*\0"/"MM\0*" header); 1 when absent or unreadable. Bounds-checked
 * against hostile offsets. */
int fy_exif_orientation(const uint8_t *tiff, size_t size);
/* Orientation from a whole JPEG file's APP1 segment, 1 when absent. */
int fy_jpeg_orientation(const uint8_t *data, size_t size);
/* 1 when the EXIF (a TIFF payload; a JPEG's first Exif APP1, of at least
 * its first bytes) names the camera (Make or Model in IFD0), else 0. */
int fy_exif_names_camera(const uint8_t *tiff, size_t size);
int fy_jpeg_names_camera(const uint8_t *data, size_t size);
/* Orientation stored in a WebP (EXIF chunk) or PNG (eXIf chunk), 1 when
 * absent. */
int fy_webp_orientation(const uint8_t *data, size_t size);
int fy_png_orientation(const uint8_t *data, size_t size);

/* Maps a rectangle given in upright coordinates of an image whose stored
 * size is sw x sh to stored coordinates, for orientation o. */
ferry_rect fy_rect_to_stored(ferry_rect upright, int sw, int sh, int orientation);
/* Upright size of a stored w x h image under orientation o. */
void fy_oriented_size(int w, int h, int orientation, int *ow, int *oh);
/* Clamps r to a w x h image, keeping at least 1 x 1; width or height <= 0
 * means the whole image. */
void fy_clamp_rect(ferry_rect *r, int w, int h);

/* Applies EXIF orientation o to an interleaved image: the result (upright)
 * is written to `dst` (which must hold w*h*c bytes, tightly packed) and its
 * size returned in *ow / *oh. o = 1 copies. */
void fy_orient(const uint8_t *src, int w, int h, int c, size_t sstride, int orientation,
               uint8_t *dst, int *ow, int *oh);

/* RGB pixels (w x h, `stride` bytes per row) to a JPEG of `quality` in a
 * malloc()ed buffer (*out, *size; the caller frees it). Errors name `name`. */
int fy_jpeg_encode(const uint8_t *px, int w, int h, size_t stride, int quality, const char *name,
                   uint8_t **out, size_t *size);

#endif
