/* cmd_load.c — `ferry load`: runs the pipeline and reports its speed. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
    "usage: ferry load DIR|LIST [options]\n"
    "\n"
    "Runs the loading pipeline over an ImageFolder directory (sorted class\n"
    "sub-folders give labels) or a list file (`path[,label]` lines) and prints\n"
    "images/s, per-stage time and memory for each epoch.\n"
    "\n"
    "options:\n"
    "  --size N|WxH          output size (default 224)\n"
    "  --batch N             batch size (default 256)\n"
    "  --workers N           decode threads (default: one per core)\n"
    "  --prefetch N          batches in flight (default 4; 6 on a GPU with the JPEG engine)\n"
    "  --crop center|random|none   (default center; random = RandomResizedCrop)\n"
    "  --crop-ratio R        center crop: output / resized short side (0.875)\n"
    "  --scale MIN,MAX       random crop area range (0.08,1)\n"
    "  --flip [P]            horizontal flip with probability P (0.5 when given alone)\n"
    "  --filter NAME         bilinear|triangle|area|bicubic|lanczos|nearest (triangle)\n"
    "  --dtype u8|f16|f32    (default u8)\n"
    "  --layout chw|hwc      (default chw)\n"
    "  --normalize           (x/255 - mean) / std\n"
    "  --mean R,G,B --std R,G,B    (default ImageNet)\n"
    "  --epochs N            (default 1)\n"
    "  --seed N              shuffle and augmentation seed (default 0)\n"
    "  --no-shuffle\n"
    "  --rank R --world-size W     shard across ranks\n"
    "  --drop-last           equal shares per rank, no partial batch\n"
    "  --on-error skip|fail  bad files: report once and leave out (default), or stop\n"
    "  --no-dct-scale        always decode JPEG at full resolution (and exactly)\n"
    "  --exact-decode        Pillow's JPEG decoder settings and resampling arithmetic\n"
    "                        even where the image is downscaled afterwards\n"
    "  --ignore-orientation  do not apply EXIF orientation\n"
    "  --device cpu|cuda:N   where batches live (default cpu); on a GPU, its JPEG\n"
    "                        engine and the CPU workers decode together\n"
    "  --no-hw-decode        GPU: leave the JPEG engine out (CPU decodes, GPU resizes);\n"
    "                        faster when the consumer trains a model on the GPU\n"
    "  --device-memory MiB   GPU: bound on decode scratch (default 2048)\n"
    "  --consume-ms MS       GPU: queue MS of stand-in work per batch and report how\n"
    "                        long the consumer waited on ferry\n"
    "  --cache-mb N          keep transformed samples in RAM (up to N MiB) and serve\n"
    "                        later epochs from there (deterministic pipelines only)\n"
    "  --max-batch-mb N      bound on the batch ring, prefetch x batch (default 4096)\n"
    "  --read-timeout-ms MS  give up on a FIFO or device file after MS (default\n"
    "                        30000; -1 = wait for ever)\n"
    "  --stall-timeout SEC   fail, naming what each thread waits on, when no image\n"
    "                        finishes for SEC seconds (default 60; 0 = never)\n"
    "  --save-grid OUT.png   write the first batch as a contact sheet\n"
    "  --quiet               no progress line\n";

enum {
  OPT_CROP_RATIO = 256,
  OPT_SCALE,
  OPT_FILTER,
  OPT_DTYPE,
  OPT_LAYOUT,
  OPT_NORMALIZE,
  OPT_MEAN,
  OPT_STD,
  OPT_EPOCHS,
  OPT_SEED,
  OPT_NO_SHUFFLE,
  OPT_RANK,
  OPT_WORLD,
  OPT_DROP_LAST,
  OPT_ON_ERROR,
  OPT_NO_DCT,
  OPT_EXACT,
  OPT_IGNORE_ORIENT,
  OPT_SAVE_GRID,
  OPT_PREFETCH,
  OPT_FLIP,
  OPT_DEVICE,
  OPT_NO_HW,
  OPT_DEVMEM,
  OPT_CONSUME,
  OPT_CACHE,
  OPT_MAX_BATCH,
  OPT_TIMEOUT,
  OPT_STALL
};

static const struct option longopts[] = {{"size", required_argument, 0, 's'},
                                         {"batch", required_argument, 0, 'b'},
                                         {"workers", required_argument, 0, 'j'},
                                         {"prefetch", required_argument, 0, OPT_PREFETCH},
                                         {"crop", required_argument, 0, 'c'},
                                         {"crop-ratio", required_argument, 0, OPT_CROP_RATIO},
                                         {"scale", required_argument, 0, OPT_SCALE},
                                         {"flip", optional_argument, 0, OPT_FLIP},
                                         {"filter", required_argument, 0, OPT_FILTER},
                                         {"dtype", required_argument, 0, OPT_DTYPE},
                                         {"layout", required_argument, 0, OPT_LAYOUT},
                                         {"normalize", no_argument, 0, OPT_NORMALIZE},
                                         {"mean", required_argument, 0, OPT_MEAN},
                                         {"std", required_argument, 0, OPT_STD},
                                         {"epochs", required_argument, 0, OPT_EPOCHS},
                                         {"seed", required_argument, 0, OPT_SEED},
                                         {"no-shuffle", no_argument, 0, OPT_NO_SHUFFLE},
                                         {"rank", required_argument, 0, OPT_RANK},
                                         {"world-size", required_argument, 0, OPT_WORLD},
                                         {"drop-last", no_argument, 0, OPT_DROP_LAST},
                                         {"on-error", required_argument, 0, OPT_ON_ERROR},
                                         {"no-dct-scale", no_argument, 0, OPT_NO_DCT},
                                         {"exact-decode", no_argument, 0, OPT_EXACT},
                                         {"ignore-orientation", no_argument, 0, OPT_IGNORE_ORIENT},
                                         {"save-grid", required_argument, 0, OPT_SAVE_GRID},
                                         {"device", required_argument, 0, OPT_DEVICE},
                                         {"no-hw-decode", no_argument, 0, OPT_NO_HW},
                                         {"device-memory", required_argument, 0, OPT_DEVMEM},
                                         {"consume-ms", required_argument, 0, OPT_CONSUME},
                                         {"cache-mb", required_argument, 0, OPT_CACHE},
                                         {"max-batch-mb", required_argument, 0, OPT_MAX_BATCH},
                                         {"read-timeout-ms", required_argument, 0, OPT_TIMEOUT},
                                         {"stall-timeout", required_argument, 0, OPT_STALL},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};

static int parse_scale(const char *s, ferry_loader_options *o) {
  float v[2];
  char *end;
  v[0] = strtof(s, &end);
  if (*end != ',')
    return cli_usage_error("load", "--scale needs MIN,MAX, got '%s'", s), -1;
  v[1] = strtof(end + 1, &end);
  if (*end || !(v[0] > 0 && v[0] <= v[1] && v[1] <= 1))
    return cli_usage_error("load", "--scale needs 0 < MIN <= MAX <= 1, got '%s'", s), -1;
  o->scale_min = v[0];
  o->scale_max = v[1];
  return 0;
}

/* Parses one option; 0 ok, -1 usage error, 1 help printed. */
static int parse_opt(int c, const char *arg, cli_load_args *a) {
  ferry_loader_options *o = &a->o;
  const char *cmd = "load";
  int v;
  switch (c) {
  case 's': return cli_size(cmd, arg, &o->width, &o->height);
  case 'b': return cli_int(cmd, "--batch", arg, 1, 1 << 20, &o->batch_size);
  case 'j': return cli_int(cmd, "--workers", arg, 0, 1024, &o->workers);
  case OPT_PREFETCH: return cli_int(cmd, "--prefetch", arg, 1, 64, &o->prefetch);
  case 'c': return cli_crop(cmd, arg, &o->crop);
  case OPT_CROP_RATIO: return cli_float(cmd, "--crop-ratio", arg, 0.01, 1, &o->crop_ratio);
  case OPT_SCALE: return parse_scale(arg, o);
  case OPT_FLIP:
    o->flip_prob = 0.5f;
    return arg ? cli_float(cmd, "--flip", arg, 0, 1, &o->flip_prob) : 0;
  case OPT_FILTER: return cli_filter(cmd, arg, &o->filter);
  case OPT_DTYPE: return cli_dtype(cmd, arg, &o->dtype);
  case OPT_LAYOUT: return cli_layout(cmd, arg, &o->layout);
  case OPT_NORMALIZE: o->normalize = 1; return 0;
  case OPT_MEAN: return cli_floats3(cmd, "--mean", arg, o->mean);
  case OPT_STD: return cli_floats3(cmd, "--std", arg, o->std);
  case OPT_EPOCHS: return cli_int(cmd, "--epochs", arg, 1, 1000000, &a->epochs);
  case OPT_SEED:
    if (cli_int(cmd, "--seed", arg, 0, 2147483647, &v))
      return -1;
    o->seed = (uint64_t)v;
    return 0;
  case OPT_NO_SHUFFLE: o->shuffle = 0; return 0;
  case OPT_RANK: return cli_int(cmd, "--rank", arg, 0, 1 << 20, &o->rank);
  case OPT_WORLD: return cli_int(cmd, "--world-size", arg, 1, 1 << 20, &o->world_size);
  case OPT_DROP_LAST: o->drop_last = 1; return 0;
  case OPT_ON_ERROR:
    if (!strcmp(arg, "skip") || !strcmp(arg, "fail")) {
      o->on_error = arg[0] == 's' ? FERRY_ON_ERROR_SKIP : FERRY_ON_ERROR_FAIL;
      return 0;
    }
    return cli_usage_error(cmd, "--on-error must be skip or fail, not '%s'", arg), -1;
  case OPT_NO_DCT: o->allow_dct_scaling = 0; return 0;
  case OPT_EXACT: o->exact_decode = 1; return 0;
  case OPT_IGNORE_ORIENT: o->ignore_orientation = 1; return 0;
  case OPT_SAVE_GRID: a->save_grid = arg; return 0;
  case OPT_DEVICE:
    if (!strcmp(arg, "cpu")) {
      o->device = -1;
      return 0;
    }
    if (!strncmp(arg, "cuda", 4) && (arg[4] == '\0' || arg[4] == ':')) {
      o->device = 0;
      return arg[4] ? cli_int(cmd, "--device cuda:N", arg + 5, 0, 255, &o->device) : 0;
    }
    return cli_usage_error(cmd, "--device must be cpu or cuda:N, not '%s'", arg), -1;
  case OPT_CACHE:
    if (cli_int(cmd, "--cache-mb", arg, 1, 1 << 30, &v))
      return -1;
    o->cache_bytes = (uint64_t)v << 20;
    return 0;
  case OPT_MAX_BATCH:
    if (cli_int(cmd, "--max-batch-mb", arg, 1, 1 << 30, &v))
      return -1;
    o->max_batch_bytes = (uint64_t)v << 20;
    return 0;
  case OPT_TIMEOUT: return cli_int(cmd, "--read-timeout-ms", arg, -1, 1 << 30, &o->read_timeout_ms);
  case OPT_STALL: {
    float sec;
    if (cli_float(cmd, "--stall-timeout", arg, 0, 86400, &sec))
      return -1;
    o->stall_timeout_ms = sec > 0 ? (int)(sec * 1e3f + 0.5f) : -1;
    if (sec > 0 && o->stall_timeout_ms < 1)
      o->stall_timeout_ms = 1;
    return 0;
  }
  case OPT_NO_HW: o->hw_decode = 0; return 0;
  case OPT_DEVMEM:
    if (cli_int(cmd, "--device-memory", arg, 64, 1 << 20, &v))
      return -1;
    o->device_memory = (uint64_t)v << 20;
    return 0;
  case OPT_CONSUME: {
    float ms;
    if (cli_float(cmd, "--consume-ms", arg, 0, 10000, &ms))
      return -1;
    a->consume_ms = ms;
    return 0;
  }
  case 'q': a->quiet = 1; return 0;
  case 'h': fputs(help, stdout); return 1;
  default: return cli_usage_error(cmd, "unknown option"), -1;
  }
}

int cmd_load(int argc, char **argv) {
  cli_load_args a;
  memset(&a, 0, sizeof a);
  ferry_loader_options_default(&a.o);
  a.epochs = 1;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "s:b:j:c:qh", longopts, NULL)) != -1) {
    if (c == '?')
      return cli_usage_error("load", "unknown option or missing value: '%s'", argv[optind - 1]);
    int r = parse_opt(c, optarg, &a);
    if (r)
      return r > 0 ? CLI_OK : CLI_USAGE;
  }
  if (optind != argc - 1)
    return cli_usage_error("load", "needs exactly one DIR or LIST");
  a.o.source = argv[optind];
  return cli_run_loader("load", &a);
}
