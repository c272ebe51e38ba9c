/* cmd_info.c — `ferry info FILE...`: what each header says. */
#include "cli.h"

#include <string.h>

static const char help[] =
    "usage: ferry info [--json] FILE...\n"
    "\n"
    "Prints format, size, channels, colour space, chroma subsampling,\n"
    "progressive/interlaced, arithmetic coding and EXIF orientation of each\n"
    "file, read from its header (the format is sniffed from the bytes).\n"
    "A file that cannot be read is reported with the reason; the exit code\n"
    "is then 1.\n";

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
    if (ferry_probe_file(argv[k], &info) != FERRY_OK) {
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
