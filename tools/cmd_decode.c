/* cmd_decode.c — `ferry decode FILE -o OUT`: look at what ferry sees. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: ferry decode FILE -o OUT [options]\n"
    "\n"
    "Decodes FILE (JPEG, PNG, WebP, TIFF, GIF, HEIF, BMP or camera raw, sniffed\n"
    "from its bytes; - reads it from standard input), upright per its EXIF\n"
    "orientation, and writes it in the format OUT's extension names: .png, .jpg or\n"
    ".jpeg (JPEG), .ppm (binary PPM; grey as PGM data). Another extension is\n"
    "refused before anything is decoded or written.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT        where to write (required)\n"
    "  --quality N             JPEG quality 1..100 (default 95)\n"
    "  --crop X,Y,W,H          decode only this region (upright coordinates)\n"
    "  --size N|WxH            resize the result to NxN or WxH (JPEG decodes at a\n"
    "                          reduced DCT scale when that is enough); N on an\n"
    "                          image that is not square changes its aspect ratio,\n"
    "                          which is said on stderr\n"
    "  --keep-aspect           with --size: keep the aspect ratio: N is the short\n"
    "                          side (torchvision's Resize(N)), WxH the box the\n"
    "                          image is fitted into\n"
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

/* The size of what is decoded, upright, before any resizing: the crop, or
 * the image (its header); 0 when the header cannot be read (the decode
 * then says why). */
static int source_size(const char *path, const uint8_t *data, size_t n,
                       const ferry_decode_options *o, int *w, int *h) {
  ferry_info info;
  if ((data ? ferry_probe(data, n, &info) : ferry_probe_file(path, &info)) != FERRY_OK)
    return 0;
  int turned = !o->ignore_orientation && info.orientation >= 5 && info.orientation <= 8;
  *w = turned ? info.height : info.width;
  *h = turned ? info.width : info.height;
  if (o->crop.width > 0 && o->crop.height > 0) {
    int cw = *w - o->crop.x, ch = *h - o->crop.y;
    *w = o->crop.width < cw ? o->crop.width : cw;
    *h = o->crop.height < ch ? o->crop.height : ch;
  }
  return *w > 0 && *h > 0;
}

/* --keep-aspect: N is the short side; WxH the box the image fits into. */
static void keep_aspect(int sw, int sh, int square, int *w, int *h) {
  double s = square ? (double)*w / (sw < sh ? sw : sh)
                    : ((double)*w / sw < (double)*h / sh ? (double)*w / sw : (double)*h / sh);
  *w = (int)(sw * s + 0.5);
  *h = (int)(sh * s + 0.5);
  *w = *w < 1 ? 1 : *w > 16384 ? 16384 : *w;
  *h = *h < 1 ? 1 : *h > 16384 ? 16384 : *h;
}

/* The aspect ratio is kept when either side, scaled as the other, would
 * land within a pixel of what it is. */
static int aspect_kept(int sw, int sh, int w, int h) {
  long long d = (long long)w * sh - (long long)h * sw;
  if (d < 0)
    d = -d;
  return d <= (sw < sh ? sw : sh);
}

int cmd_decode(int argc, char **argv) {
  enum { OPT_QUALITY = 256, OPT_KEEP };
  static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                       {"crop", required_argument, 0, 'c'},
                                       {"size", required_argument, 0, 's'},
                                       {"filter", required_argument, 0, 'f'},
                                       {"gray", no_argument, 0, 'g'},
                                       {"ignore-orientation", no_argument, 0, 'i'},
                                       {"max-pixels", required_argument, 0, 'm'},
                                       {"quality", required_argument, 0, OPT_QUALITY},
                                       {"keep-aspect", no_argument, 0, OPT_KEEP},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  const char *out = NULL, *size_text = NULL;
  int w = 0, h = 0, c, quality = -1, keep = 0;
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
      size_text = optarg;
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
    case OPT_QUALITY:
      if (cli_int("decode", "--quality", optarg, 1, 100, &quality))
        return CLI_USAGE;
      break;
    case OPT_KEEP: keep = 1; break;
    case 'h': fputs(help, stdout); return CLI_OK;
    default:
      return cli_usage_error("decode", "unknown option or missing value: '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage_error("decode", "needs exactly one FILE (or - for standard input)");
  if (!out)
    return cli_usage_error("decode", "needs -o OUT (" CLI_IMAGE_EXTENSIONS ")");
  cli_image_kind kind;
  if (cli_image_kind_of("decode", "-o", out, &kind))
    return CLI_USAGE;
  if (quality >= 0 && kind != CLI_IMAGE_JPEG)
    return cli_usage_error("decode", "--quality is for a JPEG output (.jpg, .jpeg), not %s", out);
  if (keep && !w)
    return cli_usage_error("decode", "--keep-aspect goes with --size");
  const char *in = argv[optind];
  int from_stdin = !strcmp(in, "-");
  if (!from_stdin && cli_refuse_overwrite("decode", out, in))
    return CLI_USAGE;
  uint8_t *data = NULL;
  size_t n = 0;
  if (from_stdin && cli_read_stdin("decode", o.max_bytes, &data, &n))
    return CLI_FAIL;
  const char *name = from_stdin ? "standard input" : in;
  int square = size_text && !strpbrk(size_text, "xX"), sw = 0, sh = 0;
  int known = (keep || square) && source_size(in, data, n, &o, &sw, &sh);
  if (keep && known)
    keep_aspect(sw, sh, square, &w, &h);
  else if (keep && square) /* unknown until decoded: at least N on each side */
    o.min_width = o.min_height = w;
  if (!keep || known) {
    o.min_width = w;
    o.min_height = h;
  }
  ferry_image im = {0};
  int rc = from_stdin ? ferry_decode(data, n, name, &o, &im) : ferry_decode_file(in, &o, &im);
  free(data);
  if (rc != FERRY_OK) {
    fprintf(stderr, "ferry decode: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  if (keep && !known) /* the header said nothing before: the decoded image's own ratio */
    keep_aspect(im.width, im.height, square, &w, &h);
  if (w > 0) {
    if (square && !keep && known && !aspect_kept(sw, sh, w, h))
      fprintf(stderr,
              "ferry decode: %s: %dx%d resized to %dx%d: aspect ratio not kept (use --size WxH "
              "or --keep-aspect)\n",
              name, sw, sh, w, h);
    ferry_image r;
    if (ferry_resize(&im, NULL, &r, w, h, filter) != FERRY_OK) {
      fprintf(stderr, "ferry decode: %s: %s\n", name, ferry_last_error());
      ferry_image_free(&im);
      return CLI_FAIL;
    }
    ferry_image_free(&im);
    im = r;
  }
  rc = cli_write_image("decode", out, kind, &im, quality >= 0 ? quality : CLI_JPEG_QUALITY);
  if (rc == CLI_OK)
    printf("%s: %dx%d, %d channel%s -> %s\n", name, im.width, im.height, im.channels,
           im.channels == 1 ? "" : "s", out);
  ferry_image_free(&im);
  return rc;
}
