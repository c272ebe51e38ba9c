/* cmd_video.c — `ferry video FILE...`: sampled frames of videos as batches;
 * prints frames/s, can write the sampled frames as PNGs to look at. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char help[] =
    "usage: ferry video FILE... [options]\n"
    "\n"
    "Decodes video files (H.264, HEVC, VP9, AV1, ... through libavcodec), samples\n"
    "frames, resizes them upright (rotation metadata applied) into batches, and\n"
    "prints frames/s. A truncated or damaged file gives the frames that decode,\n"
    "then the error. With --stride, --rate or a time range, frames the sample does\n"
    "not keep cost what the codec allows: non-reference frames are not decoded,\n"
    "keyframes are jumped to (constant-rate streams; frames numbered from their\n"
    "timestamps).\n"
    "\n"
    "options:\n"
    "  --size N|WxH          output size (default: the frame size)\n"
    "  --crop none|center    whole frame stretched (default) or centre crop\n"
    "  --filter NAME         resize filter (triangle)\n"
    "  --stride N            keep every Nth frame (default 1)\n"
    "  --rate FPS            keep FPS frames per second instead\n"
    "  --start S, --end S    time range in seconds (stream time, as ffprobe)\n"
    "  --batch N             frames per batch (default 8)\n"
    "  --dtype u8|f16|f32, --layout chw|hwc, --normalize, --mean, --std\n"
    "  --threads N           decoder threads (default: one per core)\n"
    "  --ignore-rotation     keep frames as stored\n"
    "  --device cpu|cuda:N   cpu (default): libavcodec decodes, batches in host\n"
    "                        memory; cuda:N: the GPU's video engines (NVDEC) decode,\n"
    "                        convert, resize and store on GPU N\n"
    "  --gpu, --no-gpu       the same as --device cuda:0 and --device cpu\n"
    "  --jobs N              files decoded at once, one thread each (default 1;\n"
    "                        with cuda, 8 keeps the GPU's video engines busy)\n"
    "  --cpu-jobs N          with cuda:N, N more files at once decoded by libavcodec\n"
    "                        on the CPU beside the video engines (one decoder thread\n"
    "                        each unless --threads; default 0)\n"
    "  --save-frames DIR     write each sampled frame as DIR/NAME_FRAME.png\n"
    "  --timestamps          print each sampled frame's number and time\n"
    "  --frame K -o OUT      random access: frame K (presentation order from 0) of\n"
    "                        one file, upright at full size, as OUT's extension says\n"
    "                        (.png, .jpg, .jpeg, .ppm): a seek to the keyframe at or\n"
    "                        before it (the container's index), then decoding to it;\n"
    "                        CPU only, sampling options do not apply\n"
    "  --strict              a frame decoded with errors (damaged data the decoder\n"
    "                        concealed) ends the file with an error; the CPU\n"
    "                        decodes with one thread, so that every such frame is\n"
    "                        caught (without it such frames are kept and counted,\n"
    "                        on the CPU with several threads a lower bound; exit\n"
    "                        code 3). On a GPU NVDEC reports them for H.264 and\n"
    "                        HEVC; strict VP9/AV1 there decode on the CPU\n"
    "  --quiet               only the summary line (with -v, --verbose the stage\n"
    "                        line too: seconds in open, decode, waiting for NVDEC,\n"
    "                        convert, resize and close, summed over files)\n"
    "  --nvdec-keep N        idle NVDEC decoders kept for the next file of the same\n"
    "                        size and codec (0..64, default 8; 0: none)\n"
    "  --nvdec-caps          print what the GPU's video decoder (NVDEC) of the\n"
    "                        --device decodes, as its driver says, and exit\n"
    "\n"
    "A still image (JPEG, PNG, WebP, TIFF, BMP, HEIF, camera raw; sniffed from its\n"
    "bytes, whatever its name) is refused before anything is decoded: `ferry decode`\n"
    "reads those. Animations (GIF, animated PNG; animated WebP where libavcodec\n"
    "decodes it) are read as videos, and refused before any frame is decoded when a\n"
    "frame is over 178,956,970 pixels (the image decoders' limit) or frames x canvas\n"
    "over 2^25 pixels plus 4096 a byte of the file. A FIFO, device or folder is\n"
    "refused at once, never waited on.\n"
    "\nexit codes: 0 every file decoded, 1 every file failed, 2 bad command line (a\n"
    "still image among the files included), 3 some files failed or had frames\n"
    "decoded with errors (each named on stderr)\n";

enum {
  OPT_STRIDE = 256,
  OPT_RATE,
  OPT_START,
  OPT_END,
  OPT_BATCH,
  OPT_DTYPE,
  OPT_LAYOUT,
  OPT_NORM,
  OPT_MEAN,
  OPT_STD,
  OPT_THREADS,
  OPT_NOROT,
  OPT_DEVICE,
  OPT_SAVE,
  OPT_TS,
  OPT_QUIET,
  OPT_CAPS,
  OPT_CROP,
  OPT_FILTER,
  OPT_SIZE,
  OPT_JOBS,
  OPT_CPU_JOBS,
  OPT_STRICT,
  OPT_FRAME,
  OPT_GPU,
  OPT_NO_GPU,
  OPT_NVDEC_KEEP
};

typedef struct video_args {
  ferry_video_options o;
  const char *save_dir;
  int timestamps, quiet, want_device, caps, jobs, cpu_jobs;
  long long frame; /* --frame K; -1: none */
  const char *out; /* -o */
} video_args;

static int parse_seconds(const char *opt, const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (!*s || *end || !isfinite(v) || v < 0)
    return cli_usage_error("video", "%s needs seconds >= 0, got '%s'", opt, s), -1;
  *out = v;
  return 0;
}

static int parse_opt(int c, const char *arg, video_args *a) {
  ferry_video_options *o = &a->o;
  switch (c) {
  case OPT_SIZE: return cli_size("video", arg, &o->width, &o->height);
  case OPT_CROP: {
    ferry_crop crop;
    if (cli_crop("video", arg, &crop))
      return -1;
    if (crop == FERRY_CROP_RANDOM)
      return cli_usage_error("video", "--crop must be none or center"), -1;
    o->crop = crop;
    return 0;
  }
  case OPT_FILTER: return cli_filter("video", arg, &o->filter);
  case OPT_STRIDE: return cli_int("video", "--stride", arg, 1, 1 << 30, &o->stride);
  case OPT_RATE: return parse_seconds("--rate", arg, &o->rate);
  case OPT_START: return parse_seconds("--start", arg, &o->start_s);
  case OPT_END: return parse_seconds("--end", arg, &o->end_s);
  case OPT_BATCH: return cli_int("video", "--batch", arg, 1, 65536, &o->batch_size);
  case OPT_DTYPE: return cli_dtype("video", arg, &o->dtype);
  case OPT_LAYOUT: return cli_layout("video", arg, &o->layout);
  case OPT_NORM: o->normalize = 1; return 0;
  case OPT_MEAN: return cli_floats3("video", "--mean", arg, o->mean);
  case OPT_STD: return cli_floats3("video", "--std", arg, o->std);
  case OPT_THREADS: return cli_int("video", "--threads", arg, 0, 256, &o->threads);
  case OPT_NOROT: o->ignore_rotation = 1; return 0;
  case OPT_STRICT: o->strict = 1; return 0;
  case OPT_DEVICE:
    if (!strcmp(arg, "cpu"))
      return a->want_device = -1, 0;
    if (!strncmp(arg, "cuda", 4) && (!arg[4] || arg[4] == ':')) {
      a->want_device = 0;
      return arg[4] ? cli_int("video", "--device cuda:N", arg + 5, 0, 255, &a->want_device) : 0;
    }
    return cli_usage_error("video", "--device must be cpu or cuda:N, not '%s'", arg), -1;
  case OPT_GPU: a->want_device = 0; return 0;
  case OPT_NO_GPU: a->want_device = -1; return 0;
  case OPT_SAVE: a->save_dir = arg; return 0;
  case OPT_TS: a->timestamps = 1; return 0;
  case OPT_QUIET: a->quiet = 1; return 0;
  case OPT_CAPS: a->caps = 1; return 0;
  case OPT_JOBS: return cli_int("video", "--jobs", arg, 1, 256, &a->jobs);
  case OPT_CPU_JOBS: return cli_int("video", "--cpu-jobs", arg, 0, 256, &a->cpu_jobs);
  case OPT_NVDEC_KEEP:
    return cli_int("video", "--nvdec-keep", arg, 0, FY_NVDEC_KEEP_MAX, &o->nvdec_keep);
  case OPT_FRAME: {
    char *end;
    errno = 0;
    long long k = strtoll(arg, &end, 10);
    if (!*arg || *end || errno || k < 0)
      return cli_usage_error("video", "--frame needs a frame number >= 0, got '%s'", arg), -1;
    a->frame = k;
    return 0;
  }
  case 'o': a->out = arg; return 0;
  default: return -1;
  }
}

static int save_batch(const char *dir, const char *file, const ferry_video_batch *gb,
                      const ferry_video_options *o, uint8_t *rgb, fy_buf *host) {
  ferry_video_batch copy = *gb;
  const ferry_video_batch *b = gb;
  if (gb->device >= 0) { /* frames on the GPU: copy them back first */
    if (fy_buf_reserve(host, gb->nbytes) != FERRY_OK ||
        fy_gpu_download(gb->device, gb->data, host->p, gb->nbytes) != FERRY_OK) {
      fprintf(stderr, "ferry video: %s: cannot copy frames from the GPU: %s\n", file,
              ferry_last_error());
      return -1;
    }
    copy.data = host->p;
    b = &copy;
  }
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  for (int k = 0; k < b->count; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_%06lld.png", dir, base, (long long)b->frame_indices[k]);
    if (fy_out_guard(path, file) != FERRY_OK) { /* an animation named as its own frame */
      fprintf(stderr, "ferry video: %s\n", ferry_last_error());
      return -1;
    }
    size_t per = (size_t)b->width * b->height * 3 * ferry_dtype_size(b->dtype);
    cli_sample_to_rgb((const uint8_t *)b->data + (size_t)k * per, b->width, b->height, b->layout,
                      b->dtype, o->normalize, o->mean, o->std, rgb);
    ferry_image im = {rgb, b->width, b->height, 3, (size_t)b->width * 3};
    if (ferry_write_png(path, &im) != FERRY_OK) {
      fprintf(stderr, "ferry video: %s\n", ferry_last_error());
      return -1;
    }
  }
  return 0;
}

/* Prints NVDEC's answer for `device`; returns 1 when NVDEC answered. */
static int print_nvdec(int device) {
  fy_nvdec_cap caps[16];
  int n;
  char why[256];
  if (fy_nvdec_probe(device, caps, 16, &n, why, sizeof why) != FERRY_OK) {
    printf("NVDEC on cuda:%d: not available: %s\n", device, why);
    return 0;
  }
  printf("NVDEC on cuda:%d (4:2:0):\n", device);
  for (int i = 0; i < n; i++) {
    if (caps[i].error)
      printf("  %-5s %2d-bit: query failed (CUresult %d)\n", caps[i].codec, caps[i].bit_depth,
             caps[i].error);
    else if (!caps[i].supported)
      printf("  %-5s %2d-bit: no\n", caps[i].codec, caps[i].bit_depth);
    else
      printf("  %-5s %2d-bit: yes, up to %dx%d, %d engine%s\n", caps[i].codec, caps[i].bit_depth,
             caps[i].max_width, caps[i].max_height, caps[i].engines,
             caps[i].engines == 1 ? "" : "s");
  }
  return 1;
}

/* --frame K -o OUT: frame K of one file by random access, as an image. */
static int run_frame_at(const char *file, video_args *a, cli_image_kind kind) {
  ferry_video_reader *r;
  double t0 = fy_now();
  int st = ferry_video_open(file, &a->o, &r);
  if (st == FERRY_OK) {
    ferry_image im;
    double t;
    st = ferry_video_frame_at(r, a->frame, &im, &t);
    double dt = fy_now() - t0;
    if (st == FERRY_OK) {
      int rc = cli_write_image("video", a->out, kind, &im, CLI_JPEG_QUALITY);
      if (rc == CLI_OK && !a->quiet)
        printf("%s: frame %lld (t=%.6f s), %dx%d, in %.1f ms -> %s\n", file, a->frame, t, im.width,
               im.height, dt * 1000, a->out);
      ferry_video_close(r); /* the frame is the reader's */
      return rc;
    }
  }
  if (st != FERRY_OK)
    fprintf(stderr, "ferry video: %s\n", ferry_last_error());
  ferry_video_close(r);
  return st == FERRY_OK ? CLI_OK : st == FERRY_EINVAL ? CLI_USAGE : CLI_FAIL;
}

/* One file: returns FERRY_OK or the error (already printed). */
/* Where each file's time went, summed over files (thread-seconds). */
typedef struct stage_sums {
  double file_s, open_s, decode_s, wait_s, convert_s, resize_s, close_s;
} stage_sums;

static int run_file(const char *file, video_args *a, uint64_t *kept, uint64_t *decoded,
                    uint64_t *damaged, double *secs, stage_sums *sum) {
  ferry_video_reader *r;
  double t0 = fy_now();
  int st = ferry_video_open(file, &a->o, &r);
  if (st != FERRY_OK) {
    fprintf(stderr, "ferry video: %s\n", ferry_last_error());
    return st;
  }
  ferry_video_info info;
  ferry_video_get_info(r, &info);
  if (!a->quiet)
    printf("%s: %s %dx%d, %d-bit, rotation %d, %.3f fps, %.3f s, %lld frames declared; "
           "decoded by %s\n",
           file, info.codec, info.width, info.height, info.bit_depth, info.rotation, info.fps,
           info.duration_s, (long long)info.frames,
           info.nvdec         ? "NVDEC"
           : a->o.device >= 0 ? "libavcodec on the CPU (NVDEC unavailable or refuses this "
                                "stream), resized on the GPU"
                              : "libavcodec on the CPU");
  uint8_t *rgb = NULL;
  fy_buf host = {0}; /* a GPU batch copied back, for --save-frames */
  ferry_video_batch *b;
  int batches = 0, out_w = 0, out_h = 0;
  int said = 0; /* the error printed already */
  while ((st = ferry_video_next(r, &b)) == FERRY_OK) {
    batches++;
    out_w = b->width, out_h = b->height;
    if (a->timestamps)
      for (int k = 0; k < b->count; k++)
        printf("frame %lld t=%.6f\n", (long long)b->frame_indices[k], b->timestamps[k]);
    if (a->save_dir) {
      if (!rgb && !(rgb = malloc((size_t)b->width * b->height * 3))) {
        st = FERRY_ENOMEM;
        fprintf(stderr, "ferry video: %s: out of memory for --save-frames\n", file);
        said = 1;
        break;
      }
      if (save_batch(a->save_dir, file, b, &a->o, rgb, &host)) {
        st = FERRY_EIO;
        said = 1;
        break;
      }
    }
  }
  double dt = fy_now() - t0;
  if (st != FERRY_END && !said) /* the library's message names the file and the reason */
    fprintf(stderr, "ferry video: %s\n", ferry_last_error());
  ferry_video_stats s;
  ferry_video_get_stats(r, &s);
  if (!a->quiet)
    printf("%s: %llu frames sampled of %llu decoded in %d batches of %dx%d, %.2f s: "
           "%.1f decoded frames/s, %.1f sampled frames/s (open %.2f s, decode %.2f s of which "
           "waiting for NVDEC %.2f s, convert %.2f s, resize %.2f s)\n",
           file, (unsigned long long)s.kept, (unsigned long long)s.decoded, batches, out_w, out_h,
           dt, s.decoded / (dt > 0 ? dt : 1e-9), s.kept / (dt > 0 ? dt : 1e-9), s.open_s,
           s.decode_s, s.wait_s, s.convert_s, s.resize_s);
  if (s.damaged && st == FERRY_END) {
    fprintf(stderr,
            "ferry video: %s: %s%llu frame%s decoded with errors (damaged data the decoder "
            "concealed or could not decode), the first at frame %lld (%.3f s); --strict stops "
            "there\n",
            file, a->o.threads == 1 || info.nvdec ? "" : "at least ", (unsigned long long)s.damaged,
            s.damaged == 1 ? "" : "s", (long long)s.first_damaged, s.first_damaged_s);
  }
  *damaged += s.damaged;
  *kept += s.kept;
  *decoded += s.decoded;
  *secs += dt;
  free(rgb);
  fy_buf_free(&host);
  double c0 = fy_now();
  ferry_video_close(r);
  sum->close_s += fy_now() - c0;
  sum->file_s += fy_now() - t0;
  sum->open_s += s.open_s, sum->decode_s += s.decode_s, sum->wait_s += s.wait_s;
  sum->convert_s += s.convert_s, sum->resize_s += s.resize_s;
  return st == FERRY_END ? FERRY_OK : st;
}

/* Files shared out to --jobs threads (and --cpu-jobs threads, with their
 * own options). */
typedef struct jobs_state {
  video_args *a, *cpu_a;
  char **argv;
  int next, end;
  pthread_mutex_t mu;
  uint64_t kept, decoded;
  double secs;
  int bad;
  int damaged; /* files that finished with damaged frames */
  stage_sums sum;
} jobs_state;

static void *job_loop(jobs_state *js, video_args *a) {
  for (;;) {
    pthread_mutex_lock(&js->mu);
    int i = js->next < js->end ? js->next++ : -1;
    pthread_mutex_unlock(&js->mu);
    if (i < 0)
      return NULL;
    uint64_t kept = 0, decoded = 0, damaged = 0;
    double secs = 0;
    stage_sums sum = {0};
    int st = run_file(js->argv[i], a, &kept, &decoded, &damaged, &secs, &sum);
    pthread_mutex_lock(&js->mu);
    js->sum.file_s += sum.file_s, js->sum.open_s += sum.open_s, js->sum.close_s += sum.close_s;
    js->sum.decode_s += sum.decode_s, js->sum.wait_s += sum.wait_s;
    js->sum.convert_s += sum.convert_s, js->sum.resize_s += sum.resize_s;
    js->kept += kept;
    js->decoded += decoded;
    js->secs += secs;
    js->bad += st != FERRY_OK;
    js->damaged += st == FERRY_OK && damaged > 0;
    pthread_mutex_unlock(&js->mu);
  }
}

static void *job_main(void *arg) { return job_loop(arg, ((jobs_state *)arg)->a); }
static void *cpu_job_main(void *arg) { return job_loop(arg, ((jobs_state *)arg)->cpu_a); }

int cmd_video(int argc, char **argv) {
  static const struct option opts[] = {{"size", required_argument, 0, OPT_SIZE},
                                       {"crop", required_argument, 0, OPT_CROP},
                                       {"filter", required_argument, 0, OPT_FILTER},
                                       {"stride", required_argument, 0, OPT_STRIDE},
                                       {"rate", required_argument, 0, OPT_RATE},
                                       {"start", required_argument, 0, OPT_START},
                                       {"end", required_argument, 0, OPT_END},
                                       {"batch", required_argument, 0, OPT_BATCH},
                                       {"dtype", required_argument, 0, OPT_DTYPE},
                                       {"layout", required_argument, 0, OPT_LAYOUT},
                                       {"normalize", no_argument, 0, OPT_NORM},
                                       {"mean", required_argument, 0, OPT_MEAN},
                                       {"std", required_argument, 0, OPT_STD},
                                       {"threads", required_argument, 0, OPT_THREADS},
                                       {"ignore-rotation", no_argument, 0, OPT_NOROT},
                                       {"strict", no_argument, 0, OPT_STRICT},
                                       {"device", required_argument, 0, OPT_DEVICE},
                                       {"gpu", no_argument, 0, OPT_GPU},
                                       {"no-gpu", no_argument, 0, OPT_NO_GPU},
                                       {"save-frames", required_argument, 0, OPT_SAVE},
                                       {"timestamps", no_argument, 0, OPT_TS},
                                       {"quiet", no_argument, 0, OPT_QUIET},
                                       {"nvdec-caps", no_argument, 0, OPT_CAPS},
                                       {"jobs", required_argument, 0, OPT_JOBS},
                                       {"cpu-jobs", required_argument, 0, OPT_CPU_JOBS},
                                       {"nvdec-keep", required_argument, 0, OPT_NVDEC_KEEP},
                                       {"frame", required_argument, 0, OPT_FRAME},
                                       {"output", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  video_args a;
  memset(&a, 0, sizeof a);
  ferry_video_options_default(&a.o);
  a.want_device = -1;
  a.jobs = 1;
  a.frame = -1;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
    if (c == 'h') {
      fputs(help, stdout);
      return CLI_OK;
    }
    if (c == '?')
      return cli_usage_error("video", "unknown or incomplete option '%s'", argv[optind - 1]);
    if (parse_opt(c, optarg, &a))
      return CLI_USAGE;
  }
  if (a.caps)
    return print_nvdec(a.want_device < 0 ? 0 : a.want_device) ? CLI_OK : CLI_FAIL;
  if (optind >= argc)
    return cli_usage_error("video", "no video file given");
  if (a.o.stride > 1 && a.o.rate > 0)
    return cli_usage_error("video", "--stride and --rate exclude each other");
  if ((a.frame >= 0) != (a.out != NULL))
    return cli_usage_error("video", "--frame K and -o OUT go together");
  int stills = 0; /* the library's rule (src/video/still.c), as ferry.VideoReader's */
  for (int k = optind; k < argc; k++)
    if (fy_video_is_still(argv[k])) {
      fprintf(stderr, "ferry video: %s\n", ferry_last_error());
      stills++;
    }
  if (stills)
    return CLI_USAGE;
  if (a.frame >= 0) {
    cli_image_kind kind;
    if (argc - optind != 1)
      return cli_usage_error("video", "--frame takes one file");
    if (cli_image_kind_of("video", "-o", a.out, &kind))
      return CLI_USAGE;
    if (cli_refuse_overwrite("video", a.out, argv[optind]))
      return CLI_USAGE;
    return run_frame_at(argv[optind], &a, kind);
  }
  if (a.save_dir && mkdir(a.save_dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "ferry video: %s: cannot create: %s\n", a.save_dir, strerror(errno));
    return CLI_FAIL;
  }
  a.o.device = a.want_device;
  if (a.cpu_jobs && a.o.device < 0)
    return cli_usage_error("video", "--cpu-jobs goes with --device cuda:N");
  video_args cpu_a = a;
  cpu_a.o.cpu_decode = 1;
  if (!cpu_a.o.threads)
    cpu_a.o.threads = 1;
  jobs_state js = {.a = &a, .cpu_a = &cpu_a, .argv = argv, .next = optind, .end = argc};
  pthread_mutex_init(&js.mu, NULL);
  int files = argc - optind, nt = a.jobs < files ? a.jobs : files;
  int nc = a.cpu_jobs < files ? a.cpu_jobs : files;
  if (nt + nc > 256)
    nc = 256 - nt;
  double t0 = fy_now();
  pthread_t tid[256];
  int started = 0;
  for (int k = 0; k < nt + nc - 1 && started < nt + nc - 1; k++, started++)
    if (pthread_create(&tid[started], NULL, k < nc ? cpu_job_main : job_main, &js) != 0)
      break;
  job_main(&js);
  for (int i = 0; i < started; i++)
    pthread_join(tid[i], NULL);
  pthread_mutex_destroy(&js.mu);
  /* one file at a time: decoding time; several: wall time */
  double secs = nt + nc > 1 ? fy_now() - t0 : js.secs;
  char where[64];
  snprintf(where, sizeof where, "%s%s", a.o.device >= 0 ? "the GPU (NVDEC)" : "the CPU",
           nc ? " + CPU decoders" : "");
  printf("%d files (%d failed), %d at a time on %s: %llu frames sampled, %llu decoded, %.2f s: "
         "%.1f decoded frames/s, %.1f sampled frames/s\n",
         files, js.bad, nt + nc, where, (unsigned long long)js.kept, (unsigned long long)js.decoded,
         secs, js.decoded / (secs > 0 ? secs : 1e-9), js.kept / (secs > 0 ? secs : 1e-9));
  const stage_sums *u = &js.sum;
  if (!a.quiet || ferry_get_log_level() == FERRY_LOG_DEBUG) /* --verbose: also with --quiet */
    printf(
        "stages, seconds summed over files: %.2f in files = open %.2f + decode %.2f (waiting for "
        "NVDEC %.2f) + convert %.2f + resize %.2f + close %.2f + the rest %.2f\n",
        u->file_s, u->open_s, u->decode_s, u->wait_s, u->convert_s, u->resize_s, u->close_s,
        u->file_s - u->open_s - u->decode_s - u->convert_s - u->resize_s - u->close_s);
  int bad = js.bad;
  if (js.damaged)
    fprintf(stderr, "ferry video: %d file%s with frames decoded with errors (exit code 3)\n",
            js.damaged, js.damaged == 1 ? "" : "s");
  return bad == 0 ? (js.damaged ? CLI_PARTIAL : CLI_OK) : bad < files ? CLI_PARTIAL : CLI_FAIL;
}
