/* cmd_info.c — `ferry info FILE...`: what each header says; a video's
 * stream and NVDEC's verdict (fy_video_describe). */
#include "cli.h"

#include <string.h>

static const char help[] =
    "usage: ferry info [--json] FILE...\n"
    "\n"
    "Prints format, size, channels, colour space, chroma subsampling,\n"
    "progressive/interlaced, arithmetic coding and EXIF orientation of each\n"
    "file, read from its header (the format is sniffed from the bytes).\n"
    "A file that cannot be read is reported with the reason; the exit code\n"
    "is then 1.\n"
    "\n"
    "A video (any file that is not an image and that libavformat reads)\n"
    "is described too: container, codec, size, chroma, bit depth, frame\n"
    "rate, frames and duration the container declares, rotation, and\n"
    "whether NVDEC takes it (codec, 4:2:0, depth; the GPU's size limits:\n"
    "ferry video --nvdec-caps). With --json: one line per file as for\n"
    "images, \"format\": \"video\".\n";

/* One file's findings as one line of JSON (the name: cli_json_path). */
static int print_json(const char *path, const ferry_info *i) {
  cli_json j;
  cli_json_begin(&j, stdout);
  cli_json_path(&j, "file", path);
  cli_json_str(&j, "format", ferry_format_name(i->format));
  cli_json_int(&j, "width", i->width);
  cli_json_int(&j, "height", i->height);
  cli_json_int(&j, "channels", i->channels);
  cli_json_int(&j, "bit_depth", i->bit_depth);
  cli_json_str(&j, "colorspace", i->colorspace);
  cli_json_str(&j, "subsampling", i->subsampling);
  cli_json_bool(&j, "progressive", i->progressive);
  cli_json_bool(&j, "arithmetic", i->arithmetic);
  cli_json_int(&j, "orientation", i->orientation);
  cli_json_bool(&j, "alpha", i->has_alpha);
  return cli_json_end(&j);
}

static void print_info(const char *path, const ferry_info *i) {
  printf("%s: %s %dx%d, %d channel%s, %d-bit %s", path, ferry_format_name(i->format), i->width,
         i->height, i->channels, i->channels == 1 ? "" : "s", i->bit_depth, i->colorspace);
  if (i->subsampling[0])
    printf(", %s", i->subsampling);
  if (i->format == FERRY_FORMAT_JPEG)
    printf(", %s", i->progressive ? "progressive" : "baseline");
  else if (i->progressive)
    printf(", interlaced");
  if (i->arithmetic)
    printf(", arithmetic coding");
  if (i->format == FERRY_FORMAT_WEBP)
    printf(", %s", i->lossless ? "lossless" : "lossy");
  if (i->has_alpha)
    printf(", alpha");
  printf(", orientation %d\n", i->orientation);
}

static int print_video_json(const char *path, const fy_video_desc *d) {
  const ferry_video_info *v = &d->info;
  cli_json j;
  cli_json_begin(&j, stdout);
  cli_json_path(&j, "file", path);
  cli_json_str(&j, "format", "video");
  cli_json_str(&j, "container", d->container);
  cli_json_str(&j, "codec", v->codec);
  cli_json_int(&j, "width", v->width);
  cli_json_int(&j, "height", v->height);
  cli_json_int(&j, "bit_depth", v->bit_depth);
  cli_json_str(&j, "subsampling", d->chroma);
  cli_json_num(&j, "fps", v->fps);
  cli_json_int(&j, "frames", v->frames);
  cli_json_num(&j, "duration_s", v->duration_s);
  cli_json_int(&j, "rotation", v->rotation);
  cli_json_int(&j, "upright_width", v->upright_width);
  cli_json_int(&j, "upright_height", v->upright_height);
  cli_json_bool(&j, "nvdec", d->nvdec);
  cli_json_str(&j, "nvdec_why", d->nvdec_why);
  return cli_json_end(&j);
}

static void print_video(const char *path, const fy_video_desc *d) {
  const ferry_video_info *v = &d->info;
  printf("%s: video (%s) %s %dx%d, %d-bit %s, %.3f fps, %lld frames, %.3f s, rotation %d", path,
         d->container, v->codec, v->width, v->height, v->bit_depth, d->chroma, v->fps,
         (long long)v->frames, v->duration_s, v->rotation);
  if (v->rotation)
    printf(" (upright %dx%d)", v->upright_width, v->upright_height);
  printf(", NVDEC: %s (%s)\n", d->nvdec ? "yes" : "no", d->nvdec_why);
}

/* A file the image probe does not know: a video, or both reasons. */
static int info_video(const char *path, int json) {
  char image_why[512];
  snprintf(image_why, sizeof image_why, "%s", ferry_last_error());
  fy_video_desc d;
  if (fy_video_describe(path, &d) != FERRY_OK) {
    const char *m = ferry_last_error();
    size_t n = strlen(path);
    if (!strncmp(m, path, n) && m[n] == ':')
      m += n + 1 + (m[n + 1] == ' ');
    fprintf(stderr, "ferry info: %s; not a readable video either: %s\n", image_why, m);
    return CLI_FAIL;
  }
  if (json)
    return print_video_json(path, &d);
  print_video(path, &d);
  return CLI_OK;
}

int cmd_info(int argc, char **argv) {
  int json = 0, first = 1, failed = 0, files = 0;
  for (int k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(help, stdout);
      return CLI_OK;
    }
    if (!strcmp(argv[k], "--json"))
      json = 1;
    else if (argv[k][0] == '-' && argv[k][1])
      return cli_usage_error("info", "unknown option '%s'", argv[k]);
  }
  for (int k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "--json"))
      continue;
    files++;
    ferry_info info;
    int st = ferry_probe_file(argv[k], &info);
    if (st == FERRY_EUNSUPPORTED && info.format == FERRY_FORMAT_UNKNOWN) {
      failed |= info_video(argv[k], json) != CLI_OK;
      continue;
    }
    if (st != FERRY_OK) {
      fprintf(stderr, "ferry info: %s\n", ferry_last_error());
      failed = 1;
      continue;
    }
    if (json)
      failed |= print_json(argv[k], &info) != CLI_OK;
    else
      print_info(argv[k], &info);
    first = 0;
  }
  (void)first;
  if (!files)
    return cli_usage_error("info", "needs at least one FILE");
  return failed ? CLI_FAIL : CLI_OK;
}
