/*
 * ferry.h — the one public header of the ferry library.
 *
 * ferry moves images from storage into training and inference: it decodes
 * JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF, BMP and camera raw (DNG, CR2, NEF, ...)
 * on every core, crops, resizes, flips, normalizes and batches them into
 * preallocated buffers.
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
  FERRY_END = 1,           /* not an error: the epoch has no more batches */
  FERRY_EINVAL = -1,       /* a bad argument or option */
  FERRY_EIO = -2,          /* a file could not be opened or read */
  FERRY_EUNSUPPORTED = -3, /* a format or feature ferry does not decode */
  FERRY_ECORRUPT = -4,     /* the data is damaged or truncated */
  FERRY_ETOO_LARGE = -5,   /* over a configured limit (pixels, bytes) */
  FERRY_ENOMEM = -6,       /* an allocation failed */
  FERRY_EEMPTY = -7,       /* a source holds no images */
  FERRY_ESTATE = -8,       /* a call made in the wrong state */
  FERRY_EINTERNAL = -9,    /* a bug in ferry: please report it */
  FERRY_ETIMEOUT = -10     /* stalled: nothing progressed within a time-out */
};

/* A short, static description of a status code ("corrupt data"). */
const char *ferry_strerror(int status);

/* The calling thread's most recent error message, naming the file and the
 * reason. Valid until the next ferry call on this thread. Never NULL. */
const char *ferry_last_error(void);

/* Messages that are not an error of the call at hand: a file skipped by
 * a loader or a hasher, the GPU's JPEG engine handing work back to the CPU,
 * a loader closed with threads still blocked, debug lines (at
 * FERRY_LOG_DEBUG: ferry_set_log_level). Those at or above the log level
 * go through one place: the function set here,
 * called from whichever thread noticed it (concurrently: the function
 * must be thread-safe and must not call back into ferry). Without
 * one, or after ferry_set_log(NULL, NULL), they go to stderr as
 * "ferry: MESSAGE" ("ferry: debug: ..." for debug lines), as libpng's or
 * FFmpeg's messages do. A per-run callback (on_skip, on_error) still takes
 * that run's file messages first. */
typedef enum ferry_log_level {
  FERRY_LOG_DEBUG = 0, /* diagnostics: where nvJPEG was looked for, the JPEG
                          engine controller's changes, where hashing and
                          search spent their time; FFmpeg's own log */
  FERRY_LOG_INFO,      /* what ferry chose, worth knowing */
  FERRY_LOG_WARNING    /* something was skipped or fell back; the run goes on */
} ferry_log_level;
typedef void (*ferry_log_fn)(void *user, ferry_log_level level, const char *message);
void ferry_set_log(ferry_log_fn fn, void *user);
/* The least level of the messages said (process-wide, any thread, at any
 * time): FERRY_LOG_INFO by default; FERRY_LOG_DEBUG adds the debug lines
 * (`ferry --verbose`, Python's ferry.set_log_level("debug")) and lets
 * libavformat's and libavcodec's own log through for the video files
 * opened after it; FERRY_LOG_WARNING keeps only warnings. FERRY_OK, or
 * FERRY_EINVAL for a level that is none of the three. */
int ferry_set_log_level(ferry_log_level level);
ferry_log_level ferry_get_log_level(void);

/* Library version, "MAJOR.MINOR.PATCH". */
const char *ferry_version(void);

/* The threads a job of this process uses when its options leave them at 0
 * (hashing; the Python package's loaders and hashes): the CPUs this
 * process may run on, shared among the LOCAL_WORLD_SIZE processes of this
 * node under torchrun; at least 1. */
int ferry_default_threads(void);

/* ---------------------------------------------------------------- images */

typedef enum ferry_format {
  FERRY_FORMAT_UNKNOWN = 0,
  FERRY_FORMAT_JPEG,
  FERRY_FORMAT_PNG,
  FERRY_FORMAT_WEBP,
  FERRY_FORMAT_GIF,  /* the first image (an animation's first frame) */
  FERRY_FORMAT_BMP,  /* palette, 16/24/32-bit; not run-length compressed ones */
  FERRY_FORMAT_TIFF, /* the first image; libtiff applies its orientation tag */
  FERRY_FORMAT_PACK, /* reserved for packed tensor shards */
  FERRY_FORMAT_HEIF, /* HEIC, AVIF: the primary image, upright (libheif) */
  FERRY_FORMAT_RAW   /* camera raw (DNG, CR2, CR3, NEF, ARW, ORF, RW2, RAF): the embedded
                        preview, else the sensor data at half size (LibRaw) */
} ferry_format;

/* "JPEG", "PNG", ... ("unknown" for FERRY_FORMAT_UNKNOWN). */
const char *ferry_format_name(ferry_format format);

/* What the header of an image file says, without decoding the pixels. */
typedef struct ferry_info {
  ferry_format format;
  int width, height; /* as stored, before orientation */
  int channels;      /* stored components: 1 gray, 3 color, 4 CMYK/alpha */
  int bit_depth;     /* bits per sample (8 or 16) */
  int orientation;   /* EXIF orientation 1..8 (1 when absent) */
  int progressive;   /* JPEG: progressive; PNG: interlaced */
  int arithmetic;    /* JPEG: arithmetic coding */
  int has_alpha;
  int lossless;         /* WebP: lossless bitstream */
  char colorspace[16];  /* "YCbCr", "Gray", "CMYK", "YCCK", "RGB", "RGBA", ... */
  char subsampling[16]; /* JPEG chroma subsampling: "4:4:4", "4:2:0", ..., or each
                          component's sampling factors ("1x1,2x2,1x1") where no name fits */
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
  int channels;  /* 1, 3 or 4 */
  size_t stride; /* bytes per row */
} ferry_image;

void ferry_image_free(ferry_image *image);

/* A crop box in the coordinates of the upright (oriented) source image. */
typedef struct ferry_rect {
  int x, y, width, height;
} ferry_rect;

/* The default pixel limit of decoding, loading and hashing (max_pixels):
 * Pillow's decompression-bomb error threshold (2 x MAX_IMAGE_PIXELS). */
#define FERRY_DEFAULT_MAX_PIXELS 178956970ull

typedef struct ferry_decode_options {
  int channels;           /* output channels: 3 (RGB, default) or 1 (gray) */
  int ignore_orientation; /* 1: do not apply EXIF orientation */
  uint64_t max_pixels;    /* refuse larger images before allocating; 0 = none.
                             default FERRY_DEFAULT_MAX_PIXELS */
  uint64_t max_bytes;     /* refuse larger files; 0 = none. default 1 GiB */
  /* Size hint: when both > 0, a JPEG may be decoded at a reduced DCT scale
   * (M/8) as long as the result stays at least this large (after crop). */
  int min_width, min_height;
  int allow_dct_scaling; /* default 1 */
  /* Optional crop (width/height 0 = whole image). Decoded as a region of
   * interest where the codec allows, else cropped after decoding. */
  ferry_rect crop;
  /* JPEG: libjpeg's simple (box) chroma upsampling instead of the default
   * "fancy" (triangle) one: a little faster, and what hardware decoders
   * such as nvJPEG's engine do. Default 0 (as Pillow). */
  int fast_upsampling;
} ferry_decode_options;

void ferry_decode_options_default(ferry_decode_options *options);

/* Decodes image bytes / a file into *image (allocated). `name` is used in
 * error messages (may be NULL). With DCT scaling or a crop, the output is
 * smaller than the source; ferry_decode_file reports the scale used through
 * the image's size. */
int ferry_decode(const void *data, size_t size, const char *name,
                 const ferry_decode_options *options, ferry_image *image);
int ferry_decode_file(const char *path, const ferry_decode_options *options, ferry_image *image);

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
  FERRY_CROP_NONE = 0, /* resize the whole image to the output size */
  FERRY_CROP_CENTER,   /* resize the short side to size/crop_ratio, then
                          take the centre (torchvision Resize+CenterCrop) */
  FERRY_CROP_RANDOM    /* torchvision RandomResizedCrop */
} ferry_crop;

typedef enum ferry_layout { FERRY_LAYOUT_HWC = 0, FERRY_LAYOUT_CHW } ferry_layout;
typedef enum ferry_dtype { FERRY_U8 = 0, FERRY_F16, FERRY_F32 } ferry_dtype;

/* Size in bytes of one element of a dtype. */
size_t ferry_dtype_size(ferry_dtype dtype);

/* Resamples an 8-bit image to out_w x out_h with `filter`, reading only the
 * source box `box` (NULL = whole image). Pillow's algorithm: for the
 * antialiased filters, results are identical to Pillow's Image.resize. */
int ferry_resize(const ferry_image *src, const ferry_rect *box, ferry_image *dst, int out_w,
                 int out_h, ferry_filter filter);

/* ---------------------------------------------------------------- loader */

typedef enum ferry_on_error {
  FERRY_ON_ERROR_SKIP = 0, /* report each bad file once, leave it out */
  FERRY_ON_ERROR_FAIL      /* stop the epoch with the error */
} ferry_on_error;

typedef enum ferry_numa {
  FERRY_NUMA_AUTO = 0, /* GPU mode on a host of several NUMA nodes: threads near the GPU */
  FERRY_NUMA_OFF       /* threads where the scheduler puts them */
} ferry_numa;

typedef struct ferry_loader_options {
  const char *source;         /* a directory (ImageFolder), a list file, a pack,
                               * or WebDataset shards (see shuffle_buffer) */
  int batch_size;             /* default 256 */
  int width, height;          /* output size; default 224 x 224 */
  int workers;                /* decode threads; 0 = one per core */
  int prefetch;               /* batches in flight (the ring's length); 0 (default):
                               * 4, or 6 on a GPU with the JPEG engine */
  ferry_crop crop;            /* default FERRY_CROP_CENTER */
  float crop_ratio;           /* centre crop: output/resized short side (0.875) */
  float scale_min, scale_max; /* random crop area range (0.08, 1.0) */
  float ratio_min, ratio_max; /* random crop aspect range (3/4, 4/3) */
  ferry_filter filter;        /* default FERRY_FILTER_TRIANGLE */
  float flip_prob;            /* horizontal flip probability; default 0 */
  int normalize;              /* 1: (x/255 - mean) / std; default 0 (for u8: 0) */
  float mean[3], std[3];      /* default ImageNet */
  ferry_layout layout;        /* default FERRY_LAYOUT_CHW */
  ferry_dtype dtype;          /* default FERRY_U8 */
  int shuffle;                /* default 1 */
  uint64_t seed;              /* default 0 */
  int rank, world_size;       /* sharding; default 0 / 1 */
  int drop_last;              /* default 0 */
  ferry_on_error on_error;
  int ignore_orientation;
  uint64_t max_pixels;   /* per image; default as for decoding */
  int allow_dct_scaling; /* default 1 */
  /* Where batches live: -1 = host memory (default); N = CUDA device N.
   * On a GPU, JPEGs the hardware engine accepts are decoded there (while
   * the CPU workers decode the rest), and resizing, flipping,
   * normalisation, layout and dtype run as one kernel pass per batch. */
  int device;
  int hw_decode;          /* use the GPU's JPEG engine (default 1) */
  uint64_t device_memory; /* bound on device scratch for decoding, all
                             slots together (default 2 GiB) */
  /* Keep each transformed sample in RAM the first time it is made, up to
   * this many bytes (0 = off), and serve it from there in later epochs.
   * Only for deterministic pipelines: crop != FERRY_CROP_RANDOM and
   * flip_prob == 0 (else ferry_loader_open refuses). On a GPU the cache
   * holds the u8 samples before normalisation (3 x width x height bytes
   * each); while it has room, samples are made on the CPU (the JPEG
   * engine's never pass through host memory), after that the engine
   * takes those not kept. */
  uint64_t cache_bytes;
  /* Called (from a worker thread, serialised) once per bad file; NULL:
   * "skipped <file>: <reason>" to the log (ferry_set_log). */
  void (*on_skip)(void *user, const char *path, int status, const char *msg);
  void *on_skip_user;
  /* 0 (default): where a JPEG is downscaled after decoding (its decoded
   * region is larger than the output in both axes), decode it with box
   * chroma upsampling fused with colour conversion (as GPU JPEG engines
   * do), and resample RGB with 14-bit instead of 22-bit weights (triangle,
   * area and bilinear filters; values within 1 of the exact result, 2 for
   * about 5 in 10^7). About 16 % fewer instructions per image; outputs at
   * 55-58 dB PSNR from the exact ones (figures in docs/ARCHITECTURE.md).
   * 1: Pillow's pixels: no DCT scaling (allow_dct_scaling is then
   * ignored), Pillow's decoder settings and resampling arithmetic
   * throughout; the loader then equals ferry_decode + ferry_resize, and
   * Pillow's decode + resize, byte for byte. allow_dct_scaling = 0 alone
   * implies it too. With FERRY_CROP_CENTER the whole image is resized as
   * torchvision's Resize(floor(size / crop_ratio)) sizes it, then cropped
   * as its CenterCrop(size): its eval transform on Pillow, byte for byte
   * (the CPU path; the GPU's engine resizes its own way). */
  int exact_decode;
  /* Bound on the batch ring: prefetch x batch_size x one sample's bytes
   * (page-rounded per batch), host or device memory. ferry_loader_open
   * refuses a larger ring with FERRY_ETOO_LARGE before allocating it.
   * 0 = the default, 4 GiB. */
  uint64_t max_batch_bytes;
  /* Longest wait, in ms, for a source file that is a FIFO, a character
   * device or a socket (poll()): past it the sample fails with FERRY_EIO,
   * "FILE: timed out after N ms reading", and is skipped or stops the
   * epoch as on_error says. 0 = the default, 30000; < 0 = wait for ever.
   * Regular files do not hang on a local disk; on a hung network mount
   * read() itself blocks, which no time-out can interrupt. */
  int read_timeout_ms;
  /* The stall watchdog. When ferry_loader_next() (or an epoch change) has
   * waited this many ms without any sample finishing, it returns
   * FERRY_ETIMEOUT, "loader: stalled: ...", naming what each thread was
   * doing (the file it was decoding, the GPU call it was waiting in) and
   * for how long; the loader then stays failed and ferry_loader_close()
   * waits at most this long for its threads, leaving any still blocked
   * (and the memory they use) behind rather than hanging. 0 = the default,
   * 60000; < 0 = wait for ever. */
  int stall_timeout_ms;
  /* Refuse a source file larger than this before reading it: the sample
   * fails with FERRY_ETOO_LARGE ("FILE: file is N bytes, over the L-byte
   * limit") and is skipped or stops the epoch as on_error says. Default 1
   * GiB, as for decoding; 0 = no limit (a FIFO or device: 1 GiB). */
  uint64_t max_bytes;
  /* WebDataset shards as the source (a .tar name, or a brace pattern such
   * as "train-{000000..000146}.tar"): each rank takes a contiguous run of
   * the shards' samples (the shards' order shuffled per epoch when shuffle
   * is on), then samples are shuffled within a sliding window of this
   * many, so reads stay near-sequential. 0 = the default, 1000. Files and
   * packs are shuffled as a whole. */
  int shuffle_buffer;
  /* CPU batches (device = -1) in page-locked memory, registered with CUDA
   * device N (portable: usable from every device), so that copies to a GPU
   * run asynchronously at full speed (torch's pin_memory). -1 = off, the
   * default. Without CUDA (not built in, no device) a warning says the
   * batches stay unpinned; ferry_loader_pinned() tells. */
  int pin_memory;
  /* GPU mode (device >= 0) on a host of several NUMA nodes with CPUs:
   * FERRY_NUMA_AUTO (default) runs the loader's threads on the CPUs of the
   * GPU's node (sysfs), those this process may use, and allocates the
   * pinned staging there; where several GPUs of the node each have a
   * process (LOCAL_WORLD_SIZE > 1, torchrun), each takes its own slice of
   * those CPUs. workers = 0 then counts those CPUs. A host of one node, a
   * node sysfs does not tell, CPU mode, or FERRY_NUMA_OFF: no placement.
   * ferry_loader_numa() tells what was done. */
  ferry_numa numa;
  /* 1 (default): once every batch of an epoch has a slot, the slots freed
   * after that fill with the first batches of the epoch after it (its
   * number + 1, the one Python's Loader and most loops start next), so
   * that starting it does not wait for a whole batch; starting another
   * epoch drops them. The files it skips reach on_skip when it starts;
   * ferry_stats counts its work as it is done. 0: the workers idle between
   * epochs. */
  int epoch_ahead;
  /* 1: while the consumer is the limit (a training step slower than the
   * loader) and no JPEG engine context decodes, the CPU workers it does
   * not need are parked, so that fewer threads compete with its own for
   * the cores; they come back when the loader is the limit again. Default
   * 0: it freed cores but made no run faster (bench/CLAIMS.md C33). */
  int park_workers;
} ferry_loader_options;

void ferry_loader_options_default(ferry_loader_options *options);

/* ------------------------------------------------ loader options by name */

/* The loader's options as one table (src/pipeline/options_table.c): each
 * option's name, type, range, default and help. The defaults above,
 * ferry_loader_open()'s checks, `ferry load`'s flags and help, and
 * Python's keywords are all made from it, so an option is added in one
 * place. Options are only ever added (ferry_loader_option_count() grows)
 * and fields only ever appended to ferry_option, which the library owns:
 * never declare one. (source and on_skip are not in the table: a front
 * end sets them itself.) */
typedef enum ferry_option_type {
  FERRY_OPTION_INT = 0, /* int; text: a decimal integer */
  FERRY_OPTION_U64,     /* uint64_t; text: a decimal integer, any in 0..2^64-1 */
  FERRY_OPTION_FLOAT,   /* `count` floats in a row; text: numbers joined by commas */
  FERRY_OPTION_BOOL,    /* int, 0 or 1; text: 1/0, true/false, yes/no, on/off */
  FERRY_OPTION_CHOICE,  /* an enum numbered 0..n-1; text: a name of `choices`
                           or `aliases`, in any case */
  FERRY_OPTION_DEVICE   /* int: -1 host memory, N CUDA device N; text: cpu,
                           cuda (device 0), cuda:N or the number */
} ferry_option_type;

/* ferry_option.flags */
enum {
  FERRY_OPTION_MIN_OPEN = 1, /* FLOAT: min itself is out of range */
  FERRY_OPTION_MAX_OPEN = 2, /* FLOAT: max itself is out of range */
  FERRY_OPTION_ORDERED = 4,  /* FLOAT, count 2: MIN <= MAX */
  FERRY_OPTION_MIB = 8       /* U64 bytes: given by `flag`, the value is in MiB */
};

typedef struct ferry_option {
  const char *name; /* "batch_size": the name ferry_loader_options_set takes,
                       Python's keyword; the field's name, or, for a
                       pair of fields, their common stem ("scale":
                       scale_min, scale_max) */
  const char *flag; /* its `ferry load` flag ("--batch"), or NULL */
  ferry_option_type type;
  int count;      /* FLOAT: how many floats (2: MIN,MAX; 3: R,G,B); else 1 */
  unsigned flags; /* FERRY_OPTION_* */
  /* INT, DEVICE, FLOAT: the range (FLOAT: -inf..inf means unchecked here:
   * ferry_loader_open checks it with the options it depends on). The
   * default may lie outside it ("0: ferry's choice"): a value that only
   * leaving the option unset gives. */
  double min, max;
  const char *default_value;  /* as text, as ferry_loader_options_set takes it */
  const char *const *choices; /* CHOICE: value i's name, NULL-terminated */
  const char *const *aliases; /* CHOICE: {alias, name, alias, name, ..., NULL} */
  const char *flag_value;     /* the value the flag alone sets ("0.5" for --flip; a
                                 BOOL flag's is the opposite of the default and it
                                 takes no value); NULL: the flag needs a value */
  const char *help;           /* one line */
  size_t offset;              /* offsetof(ferry_loader_options, its first field) */
} ferry_option;

int ferry_loader_option_count(void);
/* Option `index` (0 .. count-1), or NULL. */
const ferry_option *ferry_loader_option(int index);
/* The option called `name`, or whose `ferry load` flag that is ("--batch");
 * NULL: none. */
const ferry_option *ferry_loader_option_find(const char *name);
/* Sets an option from text, as a command line or a config file gives it
 * (`name` as for ferry_loader_option_find; by a FERRY_OPTION_MIB flag,
 * MiB). value NULL: the flag's flag_value. FERRY_EINVAL when the text is
 * not a value of the option's type and range, the message naming the option
 * as `name` does, the range and the text, then its help ("--batch needs
 * an integer in 1..1048576, got '0' (batch size: ...)"); the option is
 * then left as it was. The
 * checks between options (rank < world_size, ...) are ferry_loader_open's. */
int ferry_loader_options_set(ferry_loader_options *options, const char *name, const char *value);
/* An option's value as text that ferry_loader_options_set takes back
 * (bytes for MiB options, choices by name). FERRY_EINVAL for an unknown
 * name or a buffer too small (64 bytes are enough). */
int ferry_loader_options_get(const ferry_loader_options *options, const char *name, char *text,
                             size_t size);

typedef struct ferry_loader ferry_loader;

/* A batch inside the loader's ring: valid until ferry_loader_release().
 * With options.device >= 0, `data` is device memory of that GPU and the
 * batch's kernels have finished when ferry_loader_next() returns it.
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
  size_t nbytes; /* bytes of image data for `count` images */
  int device;    /* -1: host memory; N: memory of CUDA device N */
} ferry_batch;

/* Per-stage time summed over workers, in seconds, and counters. */
typedef struct ferry_stats {
  double read_s, decode_s, transform_s, wait_s;
  uint64_t images, skipped, batches;
  uint64_t gpu_decoded; /* images decoded by the GPU's JPEG engine */
  uint64_t cached;      /* images served from the memory cache */
  double idle_s;        /* summed over workers: time with no sample to claim (the ring
                           full, the consumer holding batches, or between epochs) */
  uint64_t gpu_chunks;  /* chunks sent to the JPEG engine: gpu_decoded / gpu_chunks is
                           the images per chunk (at most 64; fewer when the CPU workers
                           took part of the batch the engine's thread claimed from; a
                           short chunk goes to the engine as calls of 16 and 4) */
  double gpu_call_s;    /* seconds in the JPEG engine's calls, summed over its decoder
                           threads, each call until its images are on the device:
                           gpu_call_s / gpu_chunks is a chunk's time there */
} ferry_stats;

int ferry_loader_open(const ferry_loader_options *options, ferry_loader **loader);
/* The same over samples the caller lists (options->source is then only the
 * name messages give them; NULL: "a list of N path(s)"): count image paths
 * with labels (NULL: unlabelled, -1 each), or, with labels NULL, count
 * WebDataset shards (.tar; their samples and labels as for a shard source).
 * Paths are copied. */
int ferry_loader_open_paths(const ferry_loader_options *options, const char *const *paths,
                            const int32_t *labels, int64_t count, ferry_loader **loader);
/* 1 when the loader's CPU batches are page-locked (pin_memory took), else 0. */
int ferry_loader_pinned(const ferry_loader *loader);
/* Where the loader's threads run (the numa option): the NUMA node of its
 * GPU when they were placed on that node's CPUs, else -1. `cpus` (NULL, or
 * cap bytes) gets those CPUs as a cpulist ("16-23,80-87"), or, when not
 * placed, why not. */
int ferry_loader_numa(const ferry_loader *loader, char *cpus, size_t cap);
/* Samples in the whole source, and in this rank's share of an epoch. */
int64_t ferry_loader_source_size(const ferry_loader *loader);
int64_t ferry_loader_epoch_size(const ferry_loader *loader);
/* Batches per epoch for this rank, planned: an upper bound of those delivered, which are full
 * but the epoch's last (skipped files' places take the tail's samples). */
int64_t ferry_loader_num_batches(const ferry_loader *loader);
/* Path and label of a sample of the source. */
const char *ferry_loader_path(const ferry_loader *loader, int64_t index);
int32_t ferry_loader_label(const ferry_loader *loader, int64_t index);
/* A WebDataset sample's member KEY.<field> beside its image (a caption
 * "txt", metadata "json", ...: webdataset's field names, the name after the
 * key's dot), by the sample's index in the source: for a batch, call it with
 * each of batch->indices (the batch's order). *data is malloc'ed (free() it)
 * with *size bytes, or NULL when the sample has no such member (FERRY_OK).
 * FERRY_EUNSUPPORTED when the source is not shards. Thread-safe. */
int ferry_loader_field(const ferry_loader *loader, int64_t index, const char *field, void **data,
                       size_t *size);
/* Worker threads decoding on the CPU (options.workers, or the automatic
 * choice: the cores of its share; on a GPU with the JPEG engine, less its 4 decoder threads). */
int ferry_loader_num_workers(const ferry_loader *loader);
/* Of those, the ones claiming samples now: all, unless park_workers (off by default) parked those
 * a consumer-bound run did not need. */
int ferry_loader_num_workers_active(const ferry_loader *loader);
/* The ring's length: options.prefetch, or what ferry chose for 0. */
int ferry_loader_prefetch(const ferry_loader *loader);
/* Number of classes (ImageFolder) and a class name. */
int ferry_loader_num_classes(const ferry_loader *loader);
const char *ferry_loader_class_name(const ferry_loader *loader, int label);

/* Starts an epoch (shuffle depends on seed and epoch). Ends any epoch in
 * progress. */
int ferry_loader_start_epoch(ferry_loader *loader, int epoch);
/* Waits for the next batch of the epoch: FERRY_OK, FERRY_END at the end of
 * the epoch, or an error (on_error = fail). At most `prefetch` batches may be
 * held unreleased (batches of an earlier epoch included); the next call
 * after that returns FERRY_ESTATE. Each batch held takes one slot out of the
 * ring until it is released: the others go on filling. */
int ferry_loader_next(ferry_loader *loader, ferry_batch **batch);
/* Batches handed out stay valid until they are released, also across
 * ferry_loader_start_epoch(): a batch still held when an epoch starts keeps
 * its slot, which joins the ring when the batch is released. */
#define FERRY_LOADER_KEEPS_HELD_BATCHES 1
/* Gives a batch's slot back to the loader. For a batch on a GPU, the slot
 * is rewritten only after the work queued so far on the legacy default
 * stream has run. */
void ferry_loader_release(ferry_loader *loader, ferry_batch *batch);
/* The same for consumers that read a GPU batch on their own CUDA stream
 * (a cudaStream_t): the slot is rewritten only after that stream's work
 * queued so far has run. No host wait. */
void ferry_loader_release_on_stream(ferry_loader *loader, ferry_batch *batch, void *stream);
void ferry_loader_get_stats(const ferry_loader *loader, ferry_stats *stats);
/* Stops the loader's threads and waits for them (each finishes the sample
 * in hand; at most stall_timeout_ms): after it nothing runs in the
 * background, the next epoch made ahead (options.epoch_ahead) included.
 * Batches held stay valid until released; ferry_loader_start_epoch() and
 * ferry_loader_next() then fail with FERRY_ESTATE, and a ferry_loader_next()
 * waiting in another thread returns so. For a program that ends while it
 * still holds batches (Python's exit does this): stop the loader before
 * exit(), whose library destructors (CUDA's, nvJPEG's) must not run under
 * its threads. FERRY_OK, or FERRY_ETIMEOUT when a thread stays blocked
 * (ferry_loader_close() then leaves it behind). Calling it again is
 * harmless. */
int ferry_loader_stop(ferry_loader *loader);
/* Stops the loader (ferry_loader_stop()) and frees it. */
void ferry_loader_close(ferry_loader *loader);
/* Loaders that ferry_loader_close() left behind in this process, their
 * threads still blocked past stall_timeout_ms (a hung GPU call): with one,
 * leave with _exit() rather than exit(), since library destructors at
 * exit() (nvJPEG's) can wait for those threads' locks for ever. */
int ferry_loaders_abandoned(void);

/* ==================================================================== */
/* Perceptual hashes, Hamming search, duplicate groups, catalog index.  */
/* (src/hash, src/search, src/catalog; `ferry hash|index|dupes`)        */
/* ==================================================================== */

/* ---------------------------------------------------------------- hashes */

/* The hashes of imagehash 4.3. In compatible mode each is bit-identical to
 * imagehash's on the same file (Pillow decode, convert("L"), Lanczos). */
typedef enum ferry_hash_kind {
  FERRY_HASH_AHASH = 0, /* average_hash */
  FERRY_HASH_DHASH,     /* dhash (horizontal differences) */
  FERRY_HASH_DHASH_V,   /* dhash_vertical */
  FERRY_HASH_PHASH,     /* phash (DCT, median) */
  FERRY_HASH_WHASH,     /* whash (Haar, top LL removed, imagehash's defaults) */
  FERRY_HASH_COLORHASH, /* colorhash (HSV bins) */
  FERRY_HASH_KIND_COUNT
} ferry_hash_kind;

#define FERRY_HASH_MASK(kind) (1u << (kind))
#define FERRY_HASH_ALL ((1u << FERRY_HASH_KIND_COUNT) - 1u)
/* Not a hash but a kinds bit of its own: the file's signature (see
 * ferry_signature), what `ferry dupes` matches turned, mirrored, cropped and
 * letterboxed copies with. In ferry_index_options_default's kinds. */
#define FERRY_HASH_SIGNATURE (1u << 16)

typedef enum ferry_hash_mode {
  FERRY_HASH_FAST = 0,  /* DCT-domain reduced decode, float filters (default) */
  FERRY_HASH_COMPATIBLE /* full decode: imagehash's exact bits */
} ferry_hash_mode;

/* A hash of up to 256 bits. Its value, the number that imagehash's hex
 * string spells, is w[0] + w[1] 2^64 + w[2] 2^128 + w[3] 2^192: a 64-bit
 * hash is just w[0]. Bit i of imagehash's flattened array is bit
 * (bits - 1 - i) of the value. */
typedef struct ferry_hash {
  uint64_t w[4];
  int bits; /* 64 or 256 (hash size 8 or 16); colorhash: 14 * binbits */
} ferry_hash;

/* A picture's signature for robust near-duplicate matching (docs/DEDUP.md):
 * flat borders (letterboxing) cut off, then for the whole picture and five
 * 90 % crops (centre, four corners) the signs of the 16 x 16 lowest DCT
 * frequencies of a 64 x 64 grey reduction (bit 16 u + v of code[part]:
 * vertical frequency u, horizontal v), from which the codes of the picture
 * turned and mirrored follow (odd frequencies change sign, a transpose swaps
 * u and v); and a 24 x 24 grey thumbnail of the trimmed picture that
 * candidate pairs are verified with. */
#define FERRY_SIGNATURE_PARTS 6
#define FERRY_SIGNATURE_THUMB 24
typedef struct ferry_signature {
  uint64_t code[FERRY_SIGNATURE_PARTS][4];
  uint8_t thumb[FERRY_SIGNATURE_THUMB * FERRY_SIGNATURE_THUMB];
} ferry_signature;

typedef struct ferry_hash_options {
  ferry_hash_mode mode;
  unsigned kinds;      /* FERRY_HASH_MASK() bits, FERRY_HASH_SIGNATURE; default
                          FERRY_HASH_ALL */
  int hash_size;       /* 8 (64-bit hashes, default) or 16 (256-bit) */
  int colorhash_bits;  /* colorhash's binbits, 1..18; default 3 (42 bits) */
  uint64_t max_pixels; /* refuse larger images; default as decoding */
  uint64_t max_bytes;  /* refuse larger files; default 1 GiB */
} ferry_hash_options;

void ferry_hash_options_default(ferry_hash_options *options);

/* The hashes of one image. EXIF orientation is not applied (imagehash
 * does not apply it either): width/height are as stored. */
typedef struct ferry_hash_result {
  ferry_format format;
  int width, height;
  unsigned kinds; /* the hashes filled in */
  /* Compatible mode: 1 when the pixels are known to be Pillow's (every
   * JPEG, 8-bit PNG and WebP); 0 for 16-bit PNG, which ferry rounds and
   * Pillow truncates or clips. Fast mode: 0. */
  int exact;
  ferry_hash hash[FERRY_HASH_KIND_COUNT];
  ferry_signature signature; /* kinds & FERRY_HASH_SIGNATURE */
} ferry_hash_result;

/* A hashing context: scratch buffers reused from image to image. One per
 * thread; not thread-safe. */
typedef struct ferry_hasher ferry_hasher;

int ferry_hasher_new(const ferry_hash_options *options, ferry_hasher **hasher);
void ferry_hasher_free(ferry_hasher *hasher);

/* Hashes an image file / image bytes (`name` names it in errors). Errors
 * name the file and the reason, as decoding does. */
int ferry_hash_file(ferry_hasher *hasher, const char *path, ferry_hash_result *result);
int ferry_hash_memory(ferry_hasher *hasher, const void *data, size_t size, const char *name,
                      ferry_hash_result *result);
/* Hashes decoded 8-bit pixels (1 channel gray or 3 channels RGB) with the
 * compatible arithmetic, whatever the hasher's mode: imagehash's bits for
 * Image.fromarray(pixels). */
int ferry_hash_pixels(ferry_hasher *hasher, const ferry_image *image, ferry_hash_result *result);

/* What ferry_hash_files did besides hashing. */
typedef struct ferry_hash_files_report {
  size_t engine_files; /* files the GPU's JPEG engine decoded (fast mode) */
  char note[512];      /* why the GPU was not used although asked for, or "" */
} ferry_hash_files_report;

/* Where and how ferry_hash_files works. */
typedef struct ferry_hash_files_options {
  int threads; /* CPU threads; <= 0 (default): every core */
  int device;  /* -1 (default): the CPU alone; N >= 0: CUDA device N too */
  /* Called about 10 times a second from a thread of ferry's while files
   * are hashed, and once at the end from the calling thread: files done
   * (hashed or failed) of total. NULL: none. */
  void (*progress)(void *user, size_t done, size_t total);
  void *progress_user;
  /* Fast mode on a GPU: the JPEG engine starts only when the threads,
   * half a second in, would take more than this many seconds for the
   * rest (its start and close cost about a second of a core); 0..3600,
   * default 2.5; 0: the engine starts at once. */
  double engine_min_s;
} ferry_hash_files_options;

void ferry_hash_files_options_default(ferry_hash_files_options *options);

/* Hashes paths[0..n) with hash options `options` on every core (or
 * run->threads). run->device >= 0 adds that CUDA device: in compatible
 * mode the threads decode and the GPU hashes, with the CPU's bits; in fast
 * mode the GPU's JPEG engine decodes part of the JPEGs and the GPU hashes
 * them beside the threads (see ferry_index_options.device), or the threads
 * work alone and report->note says why. Per file: status[i] (FERRY_OK or
 * the error), errors[i] (a malloc'd message naming the file, free() it;
 * NULL when none), results[i] (the hashes when status[i] is FERRY_OK).
 * Returns FERRY_OK, or why compatible mode's GPU could not start (nothing
 * hashed). options, run and report may be NULL (defaults; no report). */
int ferry_hash_files(const char *const *paths, size_t n, const ferry_hash_options *options,
                     const ferry_hash_files_options *run, ferry_hash_result *results, int *status,
                     char **errors, ferry_hash_files_report *report);

/* "ahash", "dhash", "dhash_v", "phash", "whash", "colorhash". */
const char *ferry_hash_kind_name(ferry_hash_kind kind);
/* Parses a name above (also "average", "dhash_vertical", ...): FERRY_OK or
 * FERRY_EINVAL. */
int ferry_hash_kind_parse(const char *name, ferry_hash_kind *kind);

/* imagehash's str(hash): ceil(bits / 4) lowercase hex digits. Returns the
 * number of digits written (plus a NUL), or FERRY_EINVAL when `size` is too
 * small (65 bytes always suffice). */
int ferry_hash_to_hex(const ferry_hash *hash, char *out, size_t size);
/* Parses a hex string of a `bits`-bit hash (imagehash's hex_to_hash for
 * square hashes, hex_to_flathash for colorhash). */
int ferry_hash_from_hex(const char *hex, int bits, ferry_hash *hash);
/* The value as ceil(bits / 8) big-endian bytes (bytes.fromhex(str(hash))
 * for imagehash's 64- and 256-bit hashes). Returns the number of bytes, or
 * FERRY_EINVAL when `size` is too small (32 bytes always suffice). */
int ferry_hash_to_bytes(const ferry_hash *hash, uint8_t *out, size_t size);
/* Hamming distance (imagehash's h1 - h2); -1 when the sizes differ. */
int ferry_hash_distance(const ferry_hash *a, const ferry_hash *b);

/* -------------------------------------------------------- Hamming search */

/* A pair of codes within the threshold: i < j, indices into the input. */
typedef struct ferry_pair {
  uint32_t i, j;
  uint32_t distance;
} ferry_pair;

typedef struct ferry_neighbor {
  uint32_t index; /* UINT32_MAX when there are fewer than k others */
  uint32_t distance;
} ferry_neighbor;

typedef enum ferry_search_method {
  FERRY_SEARCH_AUTO = 0, /* the cheaper of the two for this n and threshold */
  FERRY_SEARCH_BRUTE,    /* every pair, SIMD popcount, cache-blocked */
  FERRY_SEARCH_MIH       /* multi-index hashing: exact, sub-quadratic */
} ferry_search_method;

#define FERRY_MAX_SEARCH_DEVICES 8 /* ferry_search_options.devices */

typedef struct ferry_search_options {
  int threshold;              /* pairs with distance <= threshold; default 8 */
  int threads;                /* 0 (default) = one per core */
  ferry_search_method method; /* default FERRY_SEARCH_AUTO */
  size_t max_pairs;           /* fail with FERRY_ETOO_LARGE past this; 0 = none */
  int device;                 /* -1 (default): the CPU; N >= 0: all-pairs brute force
                                 on CUDA device N (same pairs, same order; top-k
                                 with k <= 32; `method` and `threads` ignored);
                                 FERRY_DEVICE_OPENCL + N: the same on OpenCL device N */
  int robust;                 /* ferry_dupes_find: 1 (default) also joins entries whose
                                 signatures match turned, mirrored, cropped or letterboxed
                                 (catalogs with FERRY_HASH_SIGNATURE); 0: the hash alone.
                                 The other searches ignore it. */
  /* Several CUDA devices for one search: ndevices >= 1 shares the all-pairs
   * search (ferry_hamming_pairs, ferry_dupes_find) among devices[0 ..
   * ndevices - 1], each driven by a thread of its own that takes chunks of
   * the pair matrix's rows as it finishes the last, and merges their pairs:
   * the same pairs in the same order as one GPU or the CPU, max_pairs
   * counted over all. ferry_hamming_topk hands out blocks of query rows
   * the same way (the same neighbours as one GPU). A device may be listed
   * twice (two threads on one GPU). `device` is then
   * ignored; 0 (default): `device` alone. CUDA device numbers only;
   * FERRY_EINVAL past FERRY_MAX_SEARCH_DEVICES or for a negative number; a
   * failure on one device stops the others and names it ("cuda:1: ..."). */
  int ndevices;
  int devices[FERRY_MAX_SEARCH_DEVICES];
} ferry_search_options;

void ferry_search_options_default(ferry_search_options *options);

/* ferry_search_options.device = FERRY_DEVICE_OPENCL + N (N = 0 .. 65534)
 * runs the Hamming searches (ferry_hamming_pairs, ferry_hamming_topk,
 * ferry_dupes_find) on OpenCL device N: the devices of every platform the
 * OpenCL ICD loader lists, numbered in its order (`ferry doctor` lists
 * them). The OpenCL library (libOpenCL.so.1) is opened at run time; without
 * it, a driver or that device the search fails with FERRY_EUNSUPPORTED and
 * the reason. Values below FERRY_DEVICE_OPENCL keep their meaning (-1 the
 * CPU, N a CUDA device); the other device fields do not take OpenCL. */
#define FERRY_DEVICE_OPENCL 0x10000
#define FERRY_DEVICE_IS_OPENCL(d) ((d) >= FERRY_DEVICE_OPENCL && (d) < 2 * FERRY_DEVICE_OPENCL)
/* The first OpenCL GPU of any platform, else OpenCL device 0 (`--device
 * opencl` without a number): a CPU driver such as PoCL is often device 0. */
#define FERRY_DEVICE_OPENCL_ANY (FERRY_DEVICE_OPENCL + 0xFFFF)

/* Every pair of `n` codes within options->threshold. A code is `words`
 * 64-bit words (1: 64-bit hashes, 4: 256-bit), codes stored one after the
 * other. *pairs (free with ferry_pairs_free) is sorted by (i, j). Exact
 * whatever the method: all methods return the same pairs. */
int ferry_hamming_pairs(const uint64_t *codes, size_t n, int words,
                        const ferry_search_options *options, ferry_pair **pairs, size_t *count);
void ferry_pairs_free(ferry_pair *pairs);

/* The k nearest other codes of every code, nearest first (ties: lower
 * index first). out holds n * k neighbours. options->threshold is ignored. */
int ferry_hamming_topk(const uint64_t *codes, size_t n, int words, int k,
                       const ferry_search_options *options, ferry_neighbor *out);

/* The popcount kernel in use: "avx512", "avx2", "popcnt" or "scalar"
 * (chosen at run time from the CPU; FERRY_ISA=<name> in the environment
 * caps it, for tests and benchmarks). */
const char *ferry_search_isa(void);

/* The method the calling thread's last ferry_hamming_pairs used: "brute",
 * "mih", "cuda" (options->device a CUDA device), "opencl" (an OpenCL
 * device) ("none" before any). */
const char *ferry_search_last_method(void);

/* Union-find over the pairs: group_of[i] is the group of item i (0 ..
 * *groups - 1, numbered in order of their smallest member), or UINT32_MAX
 * for an item in no pair. */
int ferry_group_pairs(size_t n, const ferry_pair *pairs, size_t npairs, uint32_t *group_of,
                      size_t *groups);

/* --------------------------------------------------------- catalog index */

/* One file of a catalog (.fidx). */
typedef struct ferry_catalog_entry {
  const char *path;  /* absolute */
  uint64_t size;     /* bytes */
  int64_t mtime_ns;  /* modification time, ns since the epoch */
  int width, height; /* as stored; 0 when the file failed */
  ferry_format format;
  int status;        /* FERRY_OK, or the error the file gave */
  const char *error; /* the message when status != FERRY_OK, else "" */
  unsigned kinds;    /* hashes present */
  ferry_hash hash[FERRY_HASH_KIND_COUNT];
  /* kinds & FERRY_HASH_SIGNATURE: the signature (held by the catalog;
   * ferry_catalog_add copies it), else NULL */
  const ferry_signature *signature;
} ferry_catalog_entry;

typedef struct ferry_catalog ferry_catalog;

/* Reads a catalog file (checked end to end: a damaged file is refused with
 * FERRY_ECORRUPT, never half-read). */
int ferry_catalog_load(const char *path, ferry_catalog **catalog);
size_t ferry_catalog_size(const ferry_catalog *catalog);
/* Entries are sorted by path. */
const ferry_catalog_entry *ferry_catalog_get(const ferry_catalog *catalog, size_t index);
/* The hash settings the catalog was built with. */
void ferry_catalog_hash_options(const ferry_catalog *catalog, ferry_hash_options *options);
void ferry_catalog_free(ferry_catalog *catalog);
/* Drops from `catalog` (in memory; order kept) the entries whose file no
 * longer exists: lstat says ENOENT or ENOTDIR (any other error keeps the
 * entry: ferry cannot tell). *removed (may be NULL) gets how many. */
int ferry_catalog_drop_missing(ferry_catalog *catalog, size_t *removed);
/* Drops (in memory) the entries whose absolute path matches a shell
 * pattern (fnmatch without flags: a star also crosses slashes, so "*.png"
 * takes every PNG) or lies under a folder named by one; the file is
 * untouched. *removed (may be NULL) gets how many. FERRY_EINVAL for an
 * empty pattern. */
int ferry_catalog_drop_matching(ferry_catalog *catalog, const char *const *patterns, size_t n,
                                size_t *removed);
/* The same on the catalog file `index_path`: rewritten atomically (temporary
 * file, fsync, rename) when something was dropped, under the catalog's lock
 * (FERRY_ESTATE while another ferry updates it); on any error the file is
 * left as it was. */
int ferry_index_prune(const char *index_path, size_t *removed);

/* A catalog built in memory (no file) from hash results, for
 * ferry_dupes_find and ferry_catalog_export: what `ferry.find_duplicates`
 * does in Python. ferry_catalog_new makes an empty one whose entries are
 * hashed with `options` (NULL: ferry_hash_options_default; checked as
 * ferry_hasher_new does, FERRY_EINVAL with the reason).
 *
 * ferry_catalog_add copies one entry in (its strings too): a file that
 * hashed (status FERRY_OK, width and height > 0, `kinds` among the
 * options' kinds, each hash of the options' size: hash_size^2 bits,
 * colorhash 14 * colorhash_bits, no bit set past them; `error` ignored)
 * or one that failed (a FERRY_E* status, no hashes, `error` its message or
 * NULL). `size` (bytes) decides between keepers of equal resolution in
 * ferry_dupes_find. Refused with FERRY_EINVAL and a message naming the
 * path: an entry that breaks these rules, a path already in the catalog (a
 * path is one file, as in a .fidx); FERRY_ETOO_LARGE: a path or message
 * over 65,535 bytes, a catalog of 2^32 - 2 entries; nothing is added then.
 * Entries may come in any order: the catalog is sorted by path before it
 * is next read (ferry_catalog_get's indices are the sorted ones). Adding is
 * not thread-safe, and must not overlap any other use of the catalog;
 * indices, entries and a ferry_dupes taken before an add are stale after it.
 * A catalog from ferry_catalog_load can be added to as well. */
int ferry_catalog_new(const ferry_hash_options *options, ferry_catalog **catalog);
int ferry_catalog_add(ferry_catalog *catalog, const ferry_catalog_entry *entry);

/* Writes every entry as CSV (a header line, then path,size,mtime_ns,width,
 * height,format,status,error and one hex column per hash) or JSON (one
 * object with "options" and "entries"; strict UTF-8: a path that is not
 * UTF-8 has U+FFFD for each such byte and "path_b64", its exact bytes in
 * base64). `out_path` NULL writes to stdout. FERRY_ENOMEM or FERRY_EIO
 * when the output could not be made or written. */
int ferry_catalog_export(const ferry_catalog *catalog, const char *out_path, const char *format);

typedef struct ferry_index_progress {
  size_t total; /* files found */
  size_t done;  /* files finished (hashed, reused or failed) */
  size_t hashed, reused, failed;
  double elapsed_s;
} ferry_index_progress;

typedef struct ferry_index_options {
  ferry_hash_options hash; /* default: fast mode, every hash, size 16 */
  int threads;             /* 0 = one per core */
  int recursive;           /* default 1 */
  int all_files;           /* 0 (default): only .jpg .jpeg .jpe .jfif .png
                              .webp (any case); 1: every regular file, by
                              content; dot files and folders never */
  int retry_failed;        /* 1: hash files that failed before even if unchanged */
  double checkpoint_s;     /* journal sync interval; default 1 s */
  /* Called from the calling thread, about 10 times a second and at the end. */
  void (*progress)(void *user, const ferry_index_progress *progress);
  void *progress_user;
  /* Called once per file that fails, from the calling thread; NULL: "FILE:
   * reason" to the log (ferry_set_log). */
  void (*on_error)(void *user, const char *path, int status, const char *message);
  void *error_user;
  /* Where the hashes are computed: -1 (default) on the CPU threads; N >= 0:
   * CUDA device N. In compatible mode the threads read and decode each file
   * and count colorhash, the GPU hashes them in batches: the bits, the file
   * format and the incremental behaviour are those of the CPU in compatible
   * mode. In fast mode the GPU's JPEG engine decodes part of the JPEGs (to
   * luma) and the GPU hashes them while the threads hash the rest in fast
   * mode; the two paths agree to a few bits, which one takes a file depends
   * on timing. Without an engine, or with colorhash among the kinds, fast
   * mode runs on the CPU alone (a note to the log). FERRY_EUNSUPPORTED when
   * ferry was built without CUDA or the device cannot be used. */
  int device;
  /* 1: also drop the entries outside the roots whose file is gone (as
   * ferry_index_prune); those under the roots are always dropped. */
  int prune;
  /* A share of a run spread over several processes or machines (default
   * 0 of 1: every file). With world_size W > 1 this call hashes only the
   * files whose path relative to its root (the outermost root that holds
   * it; a root that is a file: its name) falls to `rank` by
   * ferry_index_rank_of, and the catalog records (rank, W, the canonical
   * roots) as a partial catalog for ferry_index_merge. The share depends
   * on the relative path alone: never on the walk's order or the machine.
   * An existing catalog is updated only by the same share (else
   * FERRY_EINVAL naming both: a partial catalog is a file of its own). */
  int rank;
  int world_size;
  /* Fast mode on a GPU: the JPEG engine starts only when the threads,
   * half a second in, would take more than this many seconds for the
   * rest; 0..3600, default 2.5; 0: the engine starts at once (as
   * ferry_hash_files_options.engine_min_s). */
  double engine_min_s;
} ferry_index_options;

void ferry_index_options_default(ferry_index_options *options);

typedef struct ferry_index_stats {
  size_t files;   /* entries under the roots after the update */
  size_t hashed;  /* hashed in this run */
  size_t reused;  /* unchanged (same size and mtime), kept from before */
  size_t resumed; /* taken from an interrupted run's journal */
  size_t failed;  /* files that could not be hashed (kept with the error) */
  size_t removed; /* entries under the roots whose file is gone */
  size_t kept;    /* entries outside the roots, left as they were */
  double seconds;
  size_t engine_files; /* of those hashed, decoded by the GPU's JPEG engine
                          (fast mode with options->device >= 0) */
  /* Folders or files under the roots that could not be read (no
   * permission, a path too long, out of file descriptors): each is
   * reported through on_error (status FERRY_EIO) and its old entries are
   * kept, never dropped as removed. `ferry hash` exits 3 then. */
  size_t unread;
  size_t unread_kept;   /* old entries kept because their folder could not be read */
  size_t skipped_moves; /* subfolders left out as `ferry dupes` move destinations
                           (they hold a ferry-moves.csv) */
  size_t moved;         /* files found under a new path whose hashes were taken
                           from a vanished entry of the same name, size and mtime
                           (the old entry is dropped) */
  size_t pruned;        /* entries outside the roots dropped by options->prune */
  size_t inexact;       /* compatible mode: of those hashed, files whose hashes are not
                           bit-exact with imagehash (16-bit PNG: ferry_hash_result.exact 0) */
  size_t other_ranks;   /* world_size > 1: files under the roots left to the other ranks */
} ferry_index_stats;

/* Creates or updates the catalog `index_path` for the files under `roots`
 * (directories or files): new and changed files are hashed on every core,
 * unchanged ones keep their hashes, vanished ones are dropped. A file new
 * to the catalog with the name, size and mtime of an entry whose file is
 * gone (a library moved or renamed to another folder) takes that entry's
 * hashes instead of being hashed, and the old entry goes. Crash-safe:
 * results are appended to INDEX.journal as they come (synced every
 * checkpoint_s), the new index is written to a temporary file, synced and
 * renamed over the old one; a killed run leaves the old index intact and
 * the next run resumes from the journal. Bad files never stop the run:
 * they are recorded with their error. Returns FERRY_OK even when some files
 * failed (see stats->failed). */
int ferry_index_update(const char *index_path, const char *const *roots, int nroots,
                       const ferry_index_options *options, ferry_index_stats *stats);

/* The rank (0 .. world_size - 1) a file falls to in a sharded run: the
 * CRC-32 (zlib's crc32) of its path relative to its root, as bytes, modulo
 * world_size (0 when world_size < 2). */
int ferry_index_rank_of(const char *relative_path, int world_size);

/* The share a catalog records: 1 for a partial catalog (ferry_index_update
 * with world_size > 1), with its rank, world size and canonical roots
 * (sorted; held by the catalog; any out-pointer may be NULL); 0 for a
 * whole one (rank 0, world size 1, no roots). */
int ferry_catalog_share(const ferry_catalog *catalog, int *rank, int *world_size,
                        const char *const **roots, int *nroots);

typedef struct ferry_merge_options {
  /* 1: a rank of a sharded run missing from the parts is an error
   * (FERRY_ESTATE naming it; nothing written). 0 (default): said through
   * on_missing and the rest written. */
  int strict;
  /* Called once per run of consecutive missing ranks, rank .. rank +
   * count - 1 (so at most once more than there are parts, whatever the
   * world size), with "rank R of W missing: its files are not in OUT" or
   * "ranks A..B of W missing (N ranks): their files are not in OUT". NULL:
   * those to the log (ferry_set_log), the first 8 runs, then one line
   * counting the rest. */
  void (*on_missing)(void *user, int rank, int count, int world_size, const char *message);
  void *user;
} ferry_merge_options;

typedef struct ferry_merge_stats {
  size_t entries;   /* in the merged catalog */
  size_t conflicts; /* paths in more than one part (the newer mtime kept, then the later part) */
  int world_size;   /* of the parts (1: whole catalogs) */
  int missing;      /* ranks 0 .. world_size - 1 no part holds */
} ferry_merge_stats;

/* Merges the catalogs `parts` into `out_path`: every path once; a path in
 * several parts keeps the entry with the newer mtime (equal: the later
 * part). The parts must share their hash settings, and either all be
 * whole catalogs or all partial ones of one run (the same world size and
 * roots, each rank at most once): anything else is FERRY_EINVAL naming
 * the two parts and what differs; so is a part holding an entry outside its
 * share (a canonical path under its roots that falls to its rank), named
 * with the first such entry. The result is a whole catalog (it
 * records no share; a later ferry_index_update over the roots hashes what
 * a missing rank left out), written atomically (temporary file, fsync,
 * rename) under out_path's lock (FERRY_ESTATE while another ferry updates
 * it); on any error out_path is left as it was. out_path may be one of
 * the parts, named as it is among them (an update in place); reached
 * through a link to a part it is refused (FERRY_EINVAL: no output over an
 * input). options NULL: not strict, missing ranks to the log. */
int ferry_index_merge(const char *out_path, const char *const *parts, int nparts,
                      const ferry_merge_options *options, ferry_merge_stats *stats);

/* ------------------------------------------------------------ duplicates */

/* Near-duplicate groups of a catalog for one hash kind and threshold. */
typedef struct ferry_dupes ferry_dupes;

int ferry_dupes_find(const ferry_catalog *catalog, ferry_hash_kind kind,
                     const ferry_search_options *options, ferry_dupes **dupes);
/* The default threshold for a hash kind and hash size (8 or 16), chosen on
 * the near-duplicate ground truth (docs/DEDUP.md). */
int ferry_dupes_default_threshold(ferry_hash_kind kind, int hash_size);
size_t ferry_dupes_group_count(const ferry_dupes *dupes);
/* Members of group g as catalog indices; members[0] is the keeper (see
 * ferry_dupes_keep), the others in path order. Returns the count. */
size_t ferry_dupes_group(const ferry_dupes *dupes, size_t g, const uint32_t **members);
/* Chooses each group's keeper again. `order`: criteria, comma-separated,
 * the first that differs decides, the first path breaks the last tie:
 *   original  a JPEG whose EXIF names the camera (Make or Model) before any
 *             other file (the first 128 KiB of each member are read); and
 *             between files of one size a JPEG before other formats: the
 *             camera's file, not a PNG made from it (larger, it would win
 *             on size)
 *   pixels    the larger picture      size    the larger file
 *   oldest / newest   the modification time   path   the first path
 * NULL or "": FERRY_KEEP_DEFAULT, what ferry_dupes_find applies. Files
 * under a `reference` folder (absolute, canonical: as the catalog's paths)
 * keep before all others and are never moved (ferry_dupes_is_reference).
 * FERRY_EINVAL names an unknown criterion or a relative folder. */
#define FERRY_KEEP_DEFAULT "original,pixels,size,oldest"
int ferry_dupes_keep(ferry_dupes *dupes, const char *order, const char *const *reference,
                     size_t nreference);
/* 1 when catalog entry `index` is under a reference folder of the last
 * ferry_dupes_keep. */
int ferry_dupes_is_reference(const ferry_dupes *dupes, uint32_t index);
/* Applies a decisions file, the review page's "Save decisions"
 * (`ferry dupes --decisions FILE`; its format: docs/DEDUP.md): groups
 * holding files marked not duplicates of each other are cut (each such
 * file leads a part, every other member joins the one nearest to it by the
 * hash; a part of one file is no group), a chosen keeper keeps before any
 * rule of ferry_dupes_keep, and chosen keepers and files marked to stay are
 * never moved (ferry_dupes_stays). A file whose size or time differs from
 * the catalog's makes the decisions stale: FERRY_EINVAL naming the file and
 * the decision, nothing changed (as for a malformed file); a file not in
 * the catalog is passed over (a warning). Call it after ferry_dupes_keep.
 * stats may be NULL. */
typedef struct ferry_decide_stats {
  size_t sets;          /* not_duplicates sets read */
  size_t keepers;       /* keepers chosen */
  size_t stays;         /* files to leave where they are */
  size_t passed_over;   /* files named that are not in the catalog */
  size_t groups_before; /* groups before the cuts (ferry_dupes_group_count: after) */
} ferry_decide_stats;
int ferry_dupes_decide(ferry_dupes *dupes, const char *path, ferry_decide_stats *stats);
/* 1 when catalog entry `index` is never moved: under a reference folder, or
 * kept or left in place by a decision (ferry_dupes_decide). */
int ferry_dupes_stays(const ferry_dupes *dupes, uint32_t index);
/* The pairs found between distinct hash values (each as the catalog index
 * of its first entry: entries with identical hashes are searched once and
 * stand for each other at distance 0), for distances, sorted. Listed only
 * while there are at most FERRY_DUPES_MAX_LISTED_PAIRS: beyond, groups are
 * built as the pairs stream from the search, in bounded memory, and this
 * returns 0 (ferry_dupes_pair_count still counts them). */
#define FERRY_DUPES_MAX_LISTED_PAIRS ((size_t)1 << 22)
size_t ferry_dupes_pairs(const ferry_dupes *dupes, const ferry_pair **pairs);
/* How many pairs of entries are within the threshold, identical hashes
 * included (k copies of one picture: k(k-1)/2), never all listed. */
uint64_t ferry_dupes_pair_count(const ferry_dupes *dupes);
/* How many joins the signatures made (copies turned, mirrored, cropped or
 * letterboxed: ferry_search_options.robust): groups merged beyond the
 * hash's pairs, which alone are counted and listed (ferry_dupes_pairs). */
size_t ferry_dupes_signature_joins(const ferry_dupes *dupes);
/* The Hamming distance of two catalog entries for the dupes' hash kind. */
int ferry_dupes_distance(const ferry_dupes *dupes, uint32_t a, uint32_t b);
/* Writes the groups as "csv", "json" or "html" (a self-contained page with
 * thumbnails side by side, distances, the keeper marked). NULL = stdout.
 * JSON names files as ferry_catalog_export does ("path_b64", "keeper_b64"). */
int ferry_dupes_write(const ferry_dupes *dupes, const char *format, const char *out_path);
void ferry_dupes_free(ferry_dupes *dupes);

/* ------------------------------------------------------------------ packs */

/* A pack is a directory of shards of preprocessed u8 HWC samples (see
 * src/pack/pack.h for the format) that the loader memory-maps: pass the
 * directory as ferry_loader_options.source. Loading a pack skips decoding;
 * crop = FERRY_CROP_CENTER means "as packed" there, FERRY_CROP_RANDOM
 * crops the packed samples again, other sizes are resampled.
 *
 * With store = FERRY_PACK_JPEG the shards hold small JPEGs instead, for
 * data of varied sizes and aspect ratios: each image decoded (upright),
 * resized so that its short side is min(width, height) (aspect kept, never
 * enlarged; `filter`, Pillow-exact) and re-encoded (4:2:0, `quality`). The
 * loader decodes these from memory like files: every crop, size, flip and
 * transform applies as to the original files (crop and crop_ratio are not
 * used when packing). Several times smaller than u8 shards; lossy. */
enum {
  FERRY_PACK_U8 = 0,
  FERRY_PACK_JPEG = 1,
  /* WebDataset shards (output/shard-NNNNNN.tar): every sample's file as it
   * is (KEY.EXT, not decoded, EXT the format of its bytes; size, crop and
   * quality unused) and its label (KEY.cls), KEY its index in the source;
   * for any WebDataset reader, and for ferry as a source
   * ("output/shard-{000000..N}.tar"). */
  FERRY_PACK_WDS = 2
};

typedef struct ferry_pack_options {
  const char *source;  /* directory or list file, as for the loader */
  const char *output;  /* the pack directory (created) */
  int width, height;   /* sample size; default 224 x 224 */
  ferry_crop crop;     /* FERRY_CROP_CENTER (default) or FERRY_CROP_NONE */
  float crop_ratio;    /* default 0.875 */
  ferry_filter filter; /* default FERRY_FILTER_TRIANGLE */
  int shard_size;      /* samples per shard; default 1024 */
  int workers;         /* 0 = one per core */
  ferry_on_error on_error;
  /* Called with samples done and total once the shards already complete
   * are known, then after each shard (may be NULL). */
  void (*progress)(void *user, int64_t done, int64_t total);
  void *progress_user;
  int store;   /* FERRY_PACK_U8 (default: u8 HWC tensors), FERRY_PACK_JPEG, FERRY_PACK_WDS */
  int quality; /* FERRY_PACK_JPEG: JPEG quality 1..100; default 90 */
  /* Called (serialised, from a worker thread) once per bad file left out of
   * the pack; NULL: "skipped <file>: <reason>" to the log (ferry_set_log). */
  void (*on_skip)(void *user, const char *path, int status, const char *msg);
  void *on_skip_user;
} ferry_pack_options;

void ferry_pack_options_default(ferry_pack_options *options);

/* Builds a pack, or resumes an interrupted one (shards already complete
 * are kept; a directory holding a pack of other settings is refused, and
 * so, before anything is made, are a directory neither empty nor a pack's,
 * the source itself or a directory inside it, and one holding a file the
 * source reads).
 * Crash-safe: shards and the MANIFEST are written to temporary names,
 * synced and renamed, so a reader never sees a half-written file. */
int ferry_pack_build(const ferry_pack_options *options);

/* Checks every shard's header, index and every sample's checksum. Returns
 * FERRY_OK, or FERRY_ECORRUPT with the last error naming the first damaged
 * shard and sample; *bad (may be NULL) gets the number of damaged samples. */
int ferry_pack_verify(const char *dir, int64_t *bad);

/* ==================================================================== */
/* Video: sampled frames of video files as batches.                     */
/* (src/video; `ferry video`) — begin                                   */
/* ==================================================================== */

/* What a video file's best video stream is. */
typedef struct ferry_video_info {
  char codec[16];                    /* "h264", "hevc", "vp9", "av1", ... */
  int width, height;                 /* stored frame size */
  int rotation;                      /* clockwise degrees (0, 90, 180, 270) that make
                                        stored frames upright (display matrix) */
  int upright_width, upright_height; /* size after rotation */
  int bit_depth;                     /* bits per sample: 8, 10, 12 */
  double fps;                        /* average frame rate; 0 when unknown */
  double start_s;                    /* first timestamp, seconds; 0 when unknown */
  double duration_s;                 /* 0 when unknown */
  int64_t frames;                    /* frames the container declares; 0 when unknown */
  int nvdec; /* 1: a GPU reader decodes on NVDEC; 0: libavcodec on the CPU (device -1, or
                a stream NVDEC does not take: then frames are decoded on the CPU and
                uploaded, and the reader still gives GPU batches) */
} ferry_video_info;

/* Opens a video file just to describe it. Errors name the file. */
int ferry_video_probe_file(const char *path, ferry_video_info *info);

typedef struct ferry_video_options {
  int width, height;   /* output size; 0 x 0 (default) = upright frame size */
  ferry_crop crop;     /* FERRY_CROP_NONE (default): the whole frame,
                          stretched; FERRY_CROP_CENTER: short side to the
                          output size, centre taken (crop_ratio 1) */
  ferry_filter filter; /* default FERRY_FILTER_TRIANGLE */
  /* Sampling. Timestamps are seconds of stream time (ffprobe's pts_time).
   * Frames with start_s <= t < end_s are considered (end_s <= 0: to the
   * end; start_s > 0 seeks); of those, every `stride`-th is kept (the first
   * one included), or, with rate > 0, one frame per 1/rate seconds (the
   * first at or after each point of a grid anchored at the first frame).
   * stride > 1 and rate > 0 exclude each other. */
  int stride;            /* default 1 */
  double rate;           /* default 0 (off) */
  double start_s, end_s; /* default 0, 0 */
  int batch_size;        /* frames per batch; default 8 */
  ferry_layout layout;   /* default FERRY_LAYOUT_CHW */
  ferry_dtype dtype;     /* default FERRY_U8 */
  int normalize;         /* as for the loader; default 0 */
  float mean[3], std[3]; /* default ImageNet */
  int ignore_rotation;   /* 1: keep frames as stored */
  int threads;           /* decoder threads; 0 = one per core */
  int device;            /* -1 (default): libavcodec decodes on the CPU,
                            batches in host memory. N >= 0: the GPU's
                            video engines (NVDEC) decode H.264, HEVC, VP9
                            (AV1 where the GPU has it) 4:2:0 8/10-bit on
                            CUDA device N; conversion, resize and store run
                            there too and batches are in its memory (valid
                            until the call after next; the consumer's work
                            on the default stream queued before that call is
                            waited for). FERRY_EUNSUPPORTED, naming the
                            reason, where NVDEC or the codec is missing.
                            `threads` does not apply; nearest filter not
                            supported */
  int strict;            /* 1: a frame the decoder flags as damaged (it
                            concealed errors in it) is an error
                            (FERRY_ECORRUPT naming the file, frame and
                            time) instead of a frame; libavcodec then
                            decodes with one thread, the only way every
                            such frame is flagged (libavcodec 5.1 with
                            frame threads flags a part of them). On a GPU
                            NVDEC's decode status flags them for H.264 and
                            HEVC; VP9/AV1 (no status) decode on the CPU
                            when strict. Default 0: such frames are
                            returned and counted (stats.damaged) */
  int cpu_decode;        /* device >= 0: 1 = decode with libavcodec on the
                            CPU even where NVDEC could, and upload the
                            frames (CPU decoders beside the engines: what
                            `ferry video --cpu-jobs` runs); default 0 */
  int nvdec_keep;        /* device >= 0: when this reader closes, at most
                            this many idle NVDEC decoders (its own among
                            them) stay in the process's pool for the next
                            file of the same size and codec (making one and
                            destroying it cost 40-270 ms: more than
                            decoding a short 1080p file); 0..64, default 8;
                            0: none kept */
} ferry_video_options;

void ferry_video_options_default(ferry_video_options *options);

typedef struct ferry_video_reader ferry_video_reader;

/* A batch of frames, owned by the reader: valid until the next
 * ferry_video_next() (GPU readers: the one after) or ferry_video_close().
 * `data` is [count, C, H, W] (CHW) or [count, H, W, C] (HWC) of `dtype`,
 * upright RGB, in host memory (device -1) or on CUDA device `device`. */
typedef struct ferry_video_batch {
  void *data;
  const double *timestamps;     /* count presentation times, seconds */
  const int64_t *frame_indices; /* count frame numbers, presentation order
                                   from 0 (after a seek: from timestamps) */
  int count;                    /* frames in this batch (the last may be short) */
  int index;                    /* batch number */
  int channels, height, width;
  ferry_layout layout;
  ferry_dtype dtype;
  size_t nbytes; /* bytes of frame data for `count` frames */
  int device;    /* -1: host memory */
} ferry_video_batch;

typedef struct ferry_video_stats {
  uint64_t decoded;       /* frames decoded */
  uint64_t kept;          /* frames sampled into batches */
  double decode_s;        /* demuxing + decoding */
  double convert_s;       /* YUV -> RGB of kept frames */
  double resize_s;        /* resize, rotation and store of kept frames */
  double open_s;          /* opening: container, decoder, buffers */
  uint64_t damaged;       /* frames flagged as decoded with errors (concealed)
                             or failed to decode: libavcodec's flags (with
                             several decoder threads a lower bound;
                             options.strict says why), NVDEC's decode status
                             (H.264, HEVC; not seen for VP9/AV1 there) */
  int64_t first_damaged;  /* frame number of the first of them; -1: none */
  double first_damaged_s; /* and its time */
  double wait_s;          /* of decode_s: waiting for the GPU's video engine
                             (NVDEC: pictures still decoding, mapping) */
} ferry_video_stats;

/* Opens a video file (container and codec found from the bytes by
 * libavformat). Errors name the file: FERRY_EIO (cannot open),
 * FERRY_ECORRUPT (no readable container or stream), FERRY_EUNSUPPORTED (no
 * decoder for the codec, or built without libavcodec). */
int ferry_video_open(const char *path, const ferry_video_options *options,
                     ferry_video_reader **reader);
void ferry_video_get_info(const ferry_video_reader *reader, ferry_video_info *info);
/* The next batch: FERRY_OK, FERRY_END after the last, or an error. A
 * truncated or damaged file gives every frame that decodes, in batches
 * (the last one short), and then the error (FERRY_ECORRUPT, naming the
 * file); later calls repeat it. */
int ferry_video_next(ferry_video_reader *reader, ferry_video_batch **batch);
/* The next sampled frame instead, upright 8-bit RGB at full size (not
 * resized), owned by the reader until the next call: FERRY_OK, FERRY_END or
 * an error as above. Do not mix with ferry_video_next() on one reader. */
int ferry_video_next_frame(ferry_video_reader *reader, ferry_image *frame, double *timestamp,
                           int64_t *frame_index);
/* Random access: frame k (presentation order from 0, as frame_indices
 * number them) as ferry_video_next_frame gives frames (upright 8-bit RGB,
 * full size, owned by the reader until the next call), *timestamp its time.
 * Any k in any order. Cost: a seek to the keyframe at or before frame k
 * through the container's index (libavformat), then decoding forward to it,
 * the non-reference frames before it skipped; no seek when frame k is ahead
 * of the last one and no keyframe lies between them. Errors name the file:
 * FERRY_EINVAL for k out of range (with the file's frame count);
 * FERRY_EUNSUPPORTED for a stream that cannot seek or one without a
 * constant frame rate (frame numbers come from timestamps). A GPU reader
 * (device >= 0) decodes on NVDEC and gives the frame in host memory all the
 * same (converted on the GPU, then copied). The sampling options (stride,
 * rate, range) do not apply; after this call the reader gives no more
 * batches or frames in order (FERRY_EINVAL). */
int ferry_video_frame_at(ferry_video_reader *reader, int64_t k, ferry_image *frame,
                         double *timestamp);
void ferry_video_get_stats(const ferry_video_reader *reader, ferry_video_stats *stats);
void ferry_video_close(ferry_video_reader *reader);

/* ==================================================================== */
/* Video — end                                                          */
/* ==================================================================== */

#ifdef __cplusplus
}
#endif
#endif /* FERRY_H */
