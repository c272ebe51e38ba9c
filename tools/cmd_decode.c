/* cmd_decode.c — `ferry decode FILE -o OUT.png`: look at what ferry sees. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: ferry decode FILE -o OUT.png [options]\n"
    "\n"
    "Decodes FILE (JPEG, PNG, WebP, TIFF or GIF, sniffed from its bytes), upright per its\n"
    "EXIF orientation, and writes it as PNG.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT.png    where to write (required)\n"
    "  --crop X,Y,W,H          decode only this region (upright coordinates)\n"
    "  --size N|WxH            resize the result (JPEG decodes at a reduced DCT\n"
    "                          scale when that is enough)\n"
    "  --filter NAME           resize filter (triangle)\n"
    "  --gray                  one channel (Pillow's convert(\"L\") weights)\n"
    "  --ignore-orientation    keep the stored orientation\n"
    "  --max-pixels N          refuse larger images (default 178956970)\n";

static int parse_rect(const char *s, ferry_rect *r) {
  return sscanf(s, "%d,%d,%d,%d", &r->x, &r->y, &r->width, &r->height) == 4 && r->x >= 0 &&
                 r->y >= 0 && r->width > 0 && r->height > 0
             ? 0
             : -1;
}

static int resize_and_write(const char *out, ferry_image *im, int w, int h, ferry_filter f) {
  if (w > 0) {
    ferry_image r;
    if (ferry_resize(im, NULL, &r, w, h, f) != FERRY_OK)
      return -1;
    ferry_image_free(im);
    *im = r;
  }
  return ferry_write_png(out, im) == FERRY_OK ? 0 : -1;
}

int cmd_decode(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                       {"crop", required_argument, 0, 'c'},
                                       {"size", required_argument, 0, 's'},
                                       {"filter", required_argument, 0, 'f'},
                                       {"gray", no_argument, 0, 'g'},
                                       {"ignore-orientation", no_argument, 0, 'i'},
                                       {"max-pixels", required_argument, 0, 'm'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  const char *out = NULL;
  int w = 0, h = 0, c;
  ferry_filter filter = FERRY_FILTER_TRIANGLE;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'c':
      if (parse_rect(optarg, &o.crop))
        return cli_usage_error("decode", "--crop needs X,Y,W,H, got '%s'", optarg);
      break;
    case 's':
      if (cli_size("decode", optarg, &w, &h))
        return CLI_USAGE;
      break;
    case 'f':
      if (cli_filter("decode", optarg, &filter))
        return CLI_USAGE;
      break;
    case 'g': o.channels = 1; break;
    case 'i': o.ignore_orientation = 1; break;
    case 'm': {
      char *end;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (*end || !*optarg)
        return cli_usage_error("decode", "--max-pixels needs a number, got '%s'", optarg);
      o.max_pixels = v;
      break;
    }
    case 'h': fputs(help, stdout); return CLI_OK;
    default:
      return cli_usage_error("decode", "unknown option or missing value: '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage_error("decode", "needs exactly one FILE");
  if (!out)
    return cli_usage_error("decode", "needs -o OUT.png");
  if (cli_refuse_overwrite("decode", out, argv[optind]))
    return CLI_USAGE;
  o.min_width = w;
  o.min_height = h;
  ferry_image im;
  if (ferry_decode_file(argv[optind], &o, &im) != FERRY_OK ||
      resize_and_write(out, &im, w, h, filter) != 0) {
    fprintf(stderr, "ferry decode: %s\n", ferry_last_error());
    ferry_image_free(&im);
    return CLI_FAIL;
  }
  printf("%s: %dx%d, %d channel%s -> %s\n", argv[optind], im.width, im.height, im.channels,
         im.channels == 1 ? "" : "s", out);
  ferry_image_free(&im);
  return CLI_OK;
}
