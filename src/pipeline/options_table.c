/* options_table.c — the loader's options, one row each: the one place an
 * option is added. Its field goes at the end of ferry_loader_options
 * (ferry.h) and its row at the end of this table; from the row come its
 * default (ferry_loader_options_default), its checks (ferry_loader_open,
 * ferry_loader_options_set), its `ferry load` flag and help line, its
 * Python keyword, and its lines in the type stubs and docs/OPTIONS.md
 * (scripts/gen_options.py; tests/python/test_options.py checks them).
 * Help lines: the meaning, short; one that names its default itself gets
 * no "(default X)" after it in `ferry load --help`. A BOOL option's help
 * says what on does, and "; off: ..." where the flag turns it off. */
#include "pipeline/options.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>

/* The field's offset, and a compile error when its type is not T. */
#define FIELD(f, T)                                                                                \
  .offset = offsetof(ferry_loader_options, f) +                                                    \
            0 * sizeof(char[_Generic(((ferry_loader_options *)0)->f, T : 1, default                \
                                     : -1)])
/* The same for an enum field, which must be int-sized. */
#define ENUM_FIELD(f)                                                                              \
  .offset = offsetof(ferry_loader_options, f) +                                                    \
            0 * sizeof(char[sizeof(((ferry_loader_options *)0)->f) == sizeof(int) ? 1 : -1])
/* Two float fields in a row (MIN, MAX). */
#define PAIR_FIELDS(a, b)                                                                          \
  FIELD(a, float) + 0 * sizeof(char[offsetof(ferry_loader_options, b) ==                           \
                                            offsetof(ferry_loader_options, a) + sizeof(float)      \
                                        ? 1                                                        \
                                        : -1])

#define INT(f, lo, hi) .type = FERRY_OPTION_INT, .count = 1, .min = (lo), .max = (hi), FIELD(f, int)
#define U64(f)                                                                                     \
  .type = FERRY_OPTION_U64, .count = 1, .min = 0, .max = 18446744073709551615.0, FIELD(f, uint64_t)
#define FLOAT(f, lo, hi)                                                                           \
  .type = FERRY_OPTION_FLOAT, .count = 1, .min = (lo), .max = (hi), FIELD(f, float)
#define FLOAT_PAIR(a, b, lo, hi)                                                                   \
  .type = FERRY_OPTION_FLOAT, .count = 2, .min = (lo), .max = (hi), PAIR_FIELDS(a, b)
#define FLOAT3(f)                                                                                  \
  .type = FERRY_OPTION_FLOAT, .count = 3, .min = -INFINITY, .max = INFINITY, FIELD(f, float *)
#define BOOL(f) .type = FERRY_OPTION_BOOL, .count = 1, .min = 0, .max = 1, FIELD(f, int)
#define CHOICE(f, names, alias)                                                                    \
  .type = FERRY_OPTION_CHOICE, .count = 1, .min = 0,                                               \
  .max = (double)(sizeof names / sizeof names[0] - 2), .choices = names, .aliases = alias,         \
  ENUM_FIELD(f)
#define DEVICE(f) .type = FERRY_OPTION_DEVICE, .count = 1, .min = -1, .max = 255, FIELD(f, int)

static const char *const crops[] = {"none", "center", "random", NULL};
static const char *const crop_aliases[] = {"centre", "center", NULL};
static const char *const filters[] = {"bilinear", "triangle", "area", "bicubic",
                                      "lanczos",  "nearest",  NULL};
static const char *const filter_aliases[] = {"box", "area", NULL};
static const char *const layouts[] = {"hwc", "chw", NULL};
static const char *const layout_aliases[] = {"nhwc", "hwc", "nchw", "chw", NULL};
static const char *const dtypes[] = {"u8", "f16", "f32", NULL};
static const char *const dtype_aliases[] = {"uint8",   "u8",  "float16", "f16", "half", "f16",
                                            "float32", "f32", "float",   "f32", NULL};
static const char *const on_errors[] = {"skip", "fail", NULL};
static const char *const numas[] = {"auto", "off", NULL};

const ferry_option fy_loader_option_table[] = {
    {.name = "batch_size",
     .flag = "--batch",
     INT(batch_size, 1, 1 << 20),
     .default_value = "256",
     .help = "batch size: images per batch"},
    {.name = "width",
     INT(width, 1, 16384),
     .default_value = "224",
     .help = "output width; ferry load --size W[xH]"},
    {.name = "height",
     INT(height, 1, 16384),
     .default_value = "224",
     .help = "output height; ferry load --size WxH"},
    {.name = "workers",
     .flag = "--workers",
     INT(workers, 0, 1024),
     .default_value = "0",
     .help = "decode threads (default 0: one per core this process may use, shared among "
             "torchrun's LOCAL_WORLD_SIZE processes; on a GPU with the JPEG engine, less its 4 "
             "feeding threads, and one core more on 8 or fewer)"},
    {.name = "prefetch",
     .flag = "--prefetch",
     INT(prefetch, 1, 64),
     .default_value = "0",
     .help = "batches in flight, the ring's length (default: 4, or 6 on a GPU with the JPEG "
             "engine)"},
    {.name = "crop",
     .flag = "--crop",
     CHOICE(crop, crops, crop_aliases),
     .default_value = "center",
     .help = "center: Resize + CenterCrop; random: RandomResizedCrop; none: the whole image"},
    {.name = "crop_ratio",
     .flag = "--crop-ratio",
     FLOAT(crop_ratio, 0, 1),
     .flags = FERRY_OPTION_MIN_OPEN,
     .default_value = "0.875",
     .help = "center crop: output / resized short side"},
    {.name = "scale",
     .flag = "--scale",
     FLOAT_PAIR(scale_min, scale_max, 0, 1),
     .flags = FERRY_OPTION_MIN_OPEN | FERRY_OPTION_ORDERED,
     .default_value = "0.08,1",
     .help = "random crop: range of the area kept"},
    {.name = "ratio",
     .flag = "--ratio",
     FLOAT_PAIR(ratio_min, ratio_max, 0, INFINITY),
     .flags = FERRY_OPTION_MIN_OPEN | FERRY_OPTION_MAX_OPEN | FERRY_OPTION_ORDERED,
     .default_value = "0.75,1.3333334",
     .help = "random crop: range of the aspect ratio, w/h"},
    {.name = "filter",
     .flag = "--filter",
     CHOICE(filter, filters, filter_aliases),
     .default_value = "triangle",
     .help = "resampling filter (triangle: Pillow's antialiased BILINEAR)"},
    {.name = "flip_prob",
     .flag = "--flip",
     FLOAT(flip_prob, 0, 1),
     .default_value = "0",
     .flag_value = "0.5",
     .help = "horizontal flip probability; --flip alone: 0.5"},
    {.name = "normalize",
     .flag = "--normalize",
     BOOL(normalize),
     .default_value = "0",
     .help = "(x/255 - mean) / std"},
    {.name = "mean",
     .flag = "--mean",
     FLOAT3(mean),
     .default_value = "0.485,0.456,0.406",
     .help = "per channel, 0..1 units (default ImageNet's)"},
    {.name = "std",
     .flag = "--std",
     FLOAT3(std),
     .default_value = "0.229,0.224,0.225",
     .help = "per channel, 0..1 units (default ImageNet's)"},
    {.name = "layout",
     .flag = "--layout",
     CHOICE(layout, layouts, layout_aliases),
     .default_value = "chw",
     .help = "chw: [N, C, H, W]; hwc: [N, H, W, C]"},
    {.name = "dtype",
     .flag = "--dtype",
     CHOICE(dtype, dtypes, dtype_aliases),
     .default_value = "u8",
     .help = "sample type; floats are x/255, or normalised"},
    {.name = "shuffle",
     .flag = "--no-shuffle",
     BOOL(shuffle),
     .default_value = "1",
     .help = "each epoch in its own order, from seed and epoch; off: the source's order"},
    {.name = "seed",
     .flag = "--seed",
     U64(seed),
     .default_value = "0",
     .help = "shuffle and augmentation seed"},
    {.name = "rank",
     .flag = "--rank",
     INT(rank, 0, INT_MAX),
     .default_value = "0",
     .help = "shard: this rank takes every world_size-th sample from rank"},
    {.name = "world_size",
     .flag = "--world-size",
     INT(world_size, 1, INT_MAX),
     .default_value = "1",
     .help = "shard: how many ranks share the source"},
    {.name = "drop_last",
     .flag = "--drop-last",
     BOOL(drop_last),
     .default_value = "0",
     .help = "equal shares per rank, no partial batch"},
    {.name = "on_error",
     .flag = "--on-error",
     CHOICE(on_error, on_errors, NULL),
     .default_value = "skip",
     .help = "a bad file: report it once and leave it out, its place in the batch taken by "
             "the next sample of the epoch's tail (skip), or stop the epoch (fail)"},
    {.name = "ignore_orientation",
     .flag = "--ignore-orientation",
     BOOL(ignore_orientation),
     .default_value = "0",
     .help = "do not apply EXIF orientation"},
    {.name = "max_pixels",
     .flag = "--max-pixels",
     U64(max_pixels),
     .default_value = "178956970",
     .help = "refuse larger images before decoding (0: no limit)"},
    {.name = "allow_dct_scaling",
     .flag = "--no-dct-scale",
     BOOL(allow_dct_scaling),
     .default_value = "1",
     .help = "decode JPEGs at 1/2, 1/4 or 1/8 scale where the output allows; off: JPEGs always "
             "at full resolution, and exactly"},
    {.name = "device",
     .flag = "--device",
     DEVICE(device),
     .default_value = "cpu",
     .help = "where batches live; on a GPU, its JPEG engine and the CPU workers decode together"},
    {.name = "hw_decode",
     .flag = "--no-hw-decode",
     BOOL(hw_decode),
     .default_value = "1",
     .help = "GPU: decode baseline JPEGs on its JPEG engine too; off: the CPU decodes, the GPU "
             "resizes, faster when the consumer trains a model on the GPU"},
    {.name = "device_memory",
     .flag = "--device-memory",
     U64(device_memory),
     .flags = FERRY_OPTION_MIB,
     .default_value = "2147483648",
     .help = "GPU: bound on decode scratch, all slots together"},
    {.name = "cache_bytes",
     .flag = "--cache-mb",
     U64(cache_bytes),
     .flags = FERRY_OPTION_MIB,
     .default_value = "0",
     .help = "keep transformed samples in RAM up to this size and serve later epochs from there; "
             "deterministic pipelines only (default 0: off)"},
    {.name = "exact_decode",
     .flag = "--exact-decode",
     BOOL(exact_decode),
     .default_value = "0",
     .help = "Pillow's pixels: no DCT scaling (whatever allow_dct_scaling says), Pillow's JPEG "
             "decoder settings and resampling arithmetic even where the image is downscaled; a "
             "centre crop is torchvision's Resize(floor(size / crop_ratio)) + CenterCrop(size) "
             "exactly"},
    {.name = "max_batch_bytes",
     .flag = "--max-batch-mb",
     U64(max_batch_bytes),
     .flags = FERRY_OPTION_MIB,
     .default_value = "0",
     .help = "bound on the batch ring, prefetch x batch (default 0: 4 GiB)"},
    {.name = "read_timeout_ms",
     .flag = "--read-timeout-ms",
     INT(read_timeout_ms, INT_MIN, INT_MAX),
     .default_value = "0",
     .help = "no effect since FIFOs and device files are refused at once (kept so that scripts "
             "setting it still run)"},
    {.name = "stall_timeout_ms",
     INT(stall_timeout_ms, INT_MIN, INT_MAX),
     .default_value = "0",
     .help = "fail, naming what each thread waits on, when no image finishes for this many ms "
             "(default 0: 60000; < 0: never; ferry load --stall-timeout SEC)"},
    {.name = "max_bytes",
     .flag = "--max-bytes",
     U64(max_bytes),
     .default_value = "1073741824",
     .help = "refuse larger files before reading them (0: no limit)"},
    {.name = "shuffle_buffer",
     .flag = "--shuffle-buffer",
     INT(shuffle_buffer, 0, 1 << 30),
     .default_value = "0",
     .help = "WebDataset shards: shuffle the shards, then samples within a window of this many "
             "(default 0: 1000), so that reads stay near-sequential"},
    {.name = "pin_memory",
     .flag = "--pin-memory",
     INT(pin_memory, -1, 1023),
     .default_value = "-1",
     .help = "CPU batches in page-locked memory registered with CUDA device N, for fast "
             "asynchronous copies to it (default -1: off; no CUDA: a warning, not pinned)"},
    {.name = "numa",
     .flag = "--numa",
     CHOICE(numa, numas, NULL),
     .default_value = "auto",
     .help = "GPU on a host of several NUMA nodes: auto runs the threads on the GPU's node's "
             "CPUs (a slice each where several GPUs there have a process); off: anywhere"},
    {.name = "epoch_ahead",
     .flag = "--no-epoch-ahead",
     BOOL(epoch_ahead),
     .default_value = "1",
     .help = "once an epoch's last batches have slots, fill the freed ones with the next "
             "epoch's first, so that it starts without a wait; off: idle between epochs"},
    {.name = "park_workers",
     .flag = "--park-workers",
     BOOL(park_workers),
     .default_value = "0",
     .help = "park the CPU workers a consumer slower than the loader does not need (no JPEG "
             "engine context decoding), freeing cores for it"},
};

const int fy_loader_option_table_count =
    (int)(sizeof fy_loader_option_table / sizeof fy_loader_option_table[0]);
