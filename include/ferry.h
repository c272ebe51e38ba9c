/*
 * ferry.h — the one public header of the ferry library.
 *
 * ferry moves images from storage into training and inference: it decodes
 * JPEG/PNG/WebP on every core, crops, resizes, flips, normalizes and batches
 * them into preallocated buffers.
 *
 * Conventions
 *   - Every function that can fail returns an int status: FERRY_OK (0) or a
 *     negative FERRY_E* code. ferry_strerror() names a code;
 *     ferry_last_error() gives the calling thread's last message, which names
 *     the file and the reason ("photo.jpg: truncated JPEG data").
 *   - Handles are opaque. Structs that are public are plain data that the
 *     caller may fill; always start from the *_default() initialiser so that
 *     fields added later get sane values.
 *   - Pixel data is 8-bit, interleaved (HWC), RGB unless said otherwise.
 */
#ifndef FERRY_H
#define FERRY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_VERSION_MAJOR 0
#define FERRY_VERSION_MINOR 1
#define FERRY_VERSION_PATCH 0
#define FERRY_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- status */

enum ferry_status {
  FERRY_OK = 0,
  FERRY_END = 1,               /* not an error: the epoch has no more batches */
  FERRY_EINVAL = -1,           /* a bad argument or option */
  FERRY_EIO = -2,              /* a file could not be opened or read */
  FERRY_EUNSUPPORTED = -3,     /* a format or feature ferry does not decode */
  FERRY_ECORRUPT = -4,         /* the data is damaged or truncated */
  FERRY_ETOO_LARGE = -5,       /* over a configured limit (pixels, bytes) */
  FERRY_ENOMEM = -6,           /* an allocation failed */
  FERRY_EEMPTY = -7,           /* a source holds no images */
  FERRY_ESTATE = -8,           /* a call made in the wrong state */
  FERRY_EINTERNAL = -9         /* a bug in ferry: please report it */
};

/* A short, static description of a status code ("corrupt data"). */
const char *ferry_strerror(int status);

/* The calling thread's most recent error message, naming the file and the
 * reason. Valid until the next ferry call on this thread. Never NULL. */
const char *ferry_last_error(void);

/* Library version, "MAJOR.MINOR.PATCH". */
const char *ferry_version(void);

/* ---------------------------------------------------------------- images */

typedef enum ferry_format {
  FERRY_FORMAT_UNKNOWN = 0,
  FERRY_FORMAT_JPEG,
  FERRY_FORMAT_PNG,
  FERRY_FORMAT_WEBP,
  FERRY_FORMAT_GIF,  /* recognised so the error can name it; not decoded */
  FERRY_FORMAT_BMP,  /* recognised, not decoded */
  FERRY_FORMAT_TIFF, /* recognised, not decoded */
  FERRY_FORMAT_PACK  /* reserved for packed tensor shards */
} ferry_format;

/* "JPEG", "PNG", ... ("unknown" for FERRY_FORMAT_UNKNOWN). */
const char *ferry_format_name(ferry_format format);

/* What the header of an image file says, without decoding the pixels. */
typedef struct ferry_info {
  ferry_format format;
  int width, height;   /* as stored, before orientation */
  int channels;        /* stored components: 1 gray, 3 color, 4 CMYK/alpha */
  int bit_depth;       /* bits per sample (8 or 16) */
  int orientation;     /* EXIF orientation 1..8 (1 when absent) */
  int progressive;     /* JPEG: progressive; PNG: interlaced */
  int arithmetic;      /* JPEG: arithmetic coding */
  int has_alpha;
  int lossless;        /* WebP: lossless bitstream */
  char colorspace[16]; /* "YCbCr", "Gray", "CMYK", "YCCK", "RGB", "RGBA", ... */
  char subsampling[8]; /* JPEG chroma subsampling: "4:4:4", "4:2:0", ... */
} ferry_info;

/* Reads the header of image bytes / an image file. The format is sniffed
 * from the bytes, never from the file name. */
int ferry_probe(const void *data, size_t size, ferry_info *info);
int ferry_probe_file(const char *path, ferry_info *info);

/* An 8-bit interleaved image. Owned by the caller after a decode; free it
 * with ferry_image_free(). */
typedef struct ferry_image {
  uint8_t *data;
  int width, height;
  int channels; /* 1, 3 or 4 */
  size_t stride; /* bytes per row */
} ferry_image;

void ferry_image_free(ferry_image *image);

/* A crop box in the coordinates of the upright (oriented) source image. */
typedef struct ferry_rect {
  int x, y, width, height;
} ferry_rect;

typedef struct ferry_decode_options {
  int channels;            /* output channels: 3 (RGB, default) or 1 (gray) */
  int ignore_orientation;  /* 1: do not apply EXIF orientation */
  uint64_t max_pixels;     /* refuse larger images before allocating; 0 = none.
                              default 178956970 (Pillow's limit) */
  uint64_t max_bytes;      /* refuse larger files; 0 = none. default 1 GiB */
  /* Size hint: when both > 0, a JPEG may be decoded at a reduced DCT scale
   * (M/8) as long as the result stays at least this large (after crop). */
  int min_width, min_height;
  int allow_dct_scaling;   /* default 1 */
  /* Optional crop (width/height 0 = whole image). Decoded as a region of
   * interest where the codec allows, else cropped after decoding. */
  ferry_rect crop;
} ferry_decode_options;

void ferry_decode_options_default(ferry_decode_options *options);

/* Decodes image bytes / a file into *image (allocated). `name` is used in
 * error messages (may be NULL). With DCT scaling or a crop, the output is
 * smaller than the source; ferry_decode_file reports the scale used through
 * the image's size. */
int ferry_decode(const void *data, size_t size, const char *name,
                 const ferry_decode_options *options, ferry_image *image);
int ferry_decode_file(const char *path, const ferry_decode_options *options,
                      ferry_image *image);

/* Writes an 8-bit image as PNG (so a person can look at a result). */
int ferry_write_png(const char *path, const ferry_image *image);

/* ------------------------------------------------------------ transforms */

typedef enum ferry_filter {
  FERRY_FILTER_BILINEAR = 0, /* 2-tap bilinear, no antialiasing (OpenCV) */
  FERRY_FILTER_TRIANGLE,     /* antialiased bilinear (Pillow BILINEAR,
                                torchvision antialias=True) */
  FERRY_FILTER_AREA,         /* box filter (Pillow BOX) */
  FERRY_FILTER_BICUBIC,      /* antialiased bicubic, a = -0.5 (Pillow) */
  FERRY_FILTER_LANCZOS,      /* Lanczos-3 (Pillow LANCZOS) */
  FERRY_FILTER_NEAREST
} ferry_filter;

typedef enum ferry_crop {
  FERRY_CROP_NONE = 0,   /* resize the whole image to the output size */
  FERRY_CROP_CENTER,     /* resize the short side to size/crop_ratio, then
                            take the centre (torchvision Resize+CenterCrop) */
  FERRY_CROP_RANDOM      /* torchvision RandomResizedCrop */
} ferry_crop;

typedef enum ferry_layout { FERRY_LAYOUT_HWC = 0, FERRY_LAYOUT_CHW } ferry_layout;
typedef enum ferry_dtype { FERRY_U8 = 0, FERRY_F16, FERRY_F32 } ferry_dtype;

/* Size in bytes of one element of a dtype. */
size_t ferry_dtype_size(ferry_dtype dtype);

/* Resamples an 8-bit image to out_w x out_h with `filter`, reading only the
 * source box `box` (NULL = whole image). Pillow's algorithm: for the
 * antialiased filters, results are identical to Pillow's Image.resize. */
int ferry_resize(const ferry_image *src, const ferry_rect *box, ferry_image *dst,
                 int out_w, int out_h, ferry_filter filter);

/* ---------------------------------------------------------------- loader */

typedef enum ferry_on_error {
  FERRY_ON_ERROR_SKIP = 0, /* report each bad file once, leave it out */
  FERRY_ON_ERROR_FAIL      /* stop the epoch with the error */
} ferry_on_error;

typedef struct ferry_loader_options {
  const char *source;   /* a directory (ImageFolder) or a list file */
  int batch_size;       /* default 256 */
  int width, height;    /* output size; default 224 x 224 */
  int workers;          /* decode threads; 0 = one per core */
  int prefetch;         /* batches in flight; default 3 */
  ferry_crop crop;      /* default FERRY_CROP_CENTER */
  float crop_ratio;     /* centre crop: output/resized short side (0.875) */
  float scale_min, scale_max; /* random crop area range (0.08, 1.0) */
  float ratio_min, ratio_max; /* random crop aspect range (3/4, 4/3) */
  ferry_filter filter;  /* default FERRY_FILTER_TRIANGLE */
  float flip_prob;      /* horizontal flip probability; default 0 */
  int normalize;        /* 1: (x/255 - mean) / std; default 0 (for u8: 0) */
  float mean[3], std[3];/* default ImageNet */
  ferry_layout layout;  /* default FERRY_LAYOUT_CHW */
  ferry_dtype dtype;    /* default FERRY_U8 */
  int shuffle;          /* default 1 */
  uint64_t seed;        /* default 0 */
  int rank, world_size; /* sharding; default 0 / 1 */
  int drop_last;        /* default 0 */
  ferry_on_error on_error;
  int ignore_orientation;
  uint64_t max_pixels;  /* per image; default as for decoding */
  int allow_dct_scaling;/* default 1 */
  /* Called (from a worker thread, serialised) once per bad file; NULL
   * prints "ferry: skipped <file>: <reason>" to stderr. */
  void (*on_skip)(void *user, const char *path, int status, const char *msg);
  void *on_skip_user;
} ferry_loader_options;

void ferry_loader_options_default(ferry_loader_options *options);

typedef struct ferry_loader ferry_loader;

/* A batch inside the loader's ring: valid until ferry_loader_release().
 * `data` is [count, C, H, W] (CHW) or [count, H, W, C] (HWC) of `dtype`;
 * images of skipped files are left out, so count may be < batch_size. */
typedef struct ferry_batch {
  void *data;
  int32_t *labels;        /* count labels (-1 when the source has none) */
  const int64_t *indices; /* count sample indices into the source */
  int count;              /* images in this batch */
  int index;              /* batch number within the epoch */
  int epoch;
  int channels, height, width;
  ferry_layout layout;
  ferry_dtype dtype;
  size_t nbytes;          /* bytes of image data for `count` images */
} ferry_batch;

/* Per-stage time summed over workers, in seconds, and counters. */
typedef struct ferry_stats {
  double read_s, decode_s, transform_s, wait_s;
  uint64_t images, skipped, batches;
} ferry_stats;

int ferry_loader_open(const ferry_loader_options *options, ferry_loader **loader);
/* Samples in the whole source, and in this rank's share of an epoch. */
int64_t ferry_loader_source_size(const ferry_loader *loader);
int64_t ferry_loader_epoch_size(const ferry_loader *loader);
/* Batches per epoch for this rank. */
int64_t ferry_loader_num_batches(const ferry_loader *loader);
/* Path and label of a sample of the source. */
const char *ferry_loader_path(const ferry_loader *loader, int64_t index);
int32_t ferry_loader_label(const ferry_loader *loader, int64_t index);
/* Number of classes (ImageFolder) and a class name. */
int ferry_loader_num_classes(const ferry_loader *loader);
const char *ferry_loader_class_name(const ferry_loader *loader, int label);

/* Starts an epoch (shuffle depends on seed and epoch). Ends any epoch in
 * progress. */
int ferry_loader_start_epoch(ferry_loader *loader, int epoch);
/* Waits for the next batch of the epoch: FERRY_OK, FERRY_END at the end of
 * the epoch, or an error (on_error = fail). At most `prefetch` batches may be
 * held unreleased; the next call after that returns FERRY_ESTATE. */
int ferry_loader_next(ferry_loader *loader, ferry_batch **batch);
/* Gives a batch's slot back to the loader. */
void ferry_loader_release(ferry_loader *loader, ferry_batch *batch);
void ferry_loader_get_stats(const ferry_loader *loader, ferry_stats *stats);
void ferry_loader_close(ferry_loader *loader);

#ifdef __cplusplus
}
#endif
#endif /* FERRY_H */
