/* cmd_load.c — `ferry load`: runs the pipeline and reports its speed. */
#include "cli.h"
#include "cli_npy.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: ferry load DIR|LIST|PACK|- [options]\n"
    "\n"
    "Runs the loading pipeline over an ImageFolder directory (sorted class\n"
    "sub-folders give labels), a list file (`path[,label]` lines; `-`: read from\n"
    "standard input, relative paths from the working directory) or a pack (`ferry\n"
    "pack`) and prints images/s, per-stage time and memory for each epoch.\n"
    "\n"
    "options (-b, -j, -c: --batch, --workers, --crop):\n"
    "  --size N|WxH          output size (default 224; a pack: its own size)\n";

/* After the loader's options (the library's registry: cli_options.c). */
static const char own_help[] =
    "  --stall-timeout SEC   fail, naming what each thread waits on, when no image\n"
    "                        finishes for SEC seconds (default 60; 0 = never)\n"
    "  --epochs N            (default 1)\n"
    "  --consume-ms MS       GPU: queue MS of stand-in work per batch and report how\n"
    "                        long the consumer waited on ferry\n"
    "  --save-grid OUT.png   write the first batch as a contact sheet (.png, .jpg,\n"
    "                        .jpeg or .ppm)\n"
    "  --save OUT.npy        every sample, in the source's order (no shuffle, one\n"
    "                        epoch, CPU), into one NumPy array [N, C, H, W] (or\n"
    "                        [N, H, W, C] with --layout hwc) and the labels into\n"
    "                        OUT.labels.npy (int64); np.load(OUT, mmap_mode='r') reads it\n"
    "  --gpu, --no-gpu       the same as --device cuda (GPU 0) and --device cpu\n"
    "  --json                the summary as one JSON object on stdout (messages stay\n"
    "                        on stderr)\n"
    "  --quiet               no progress line\n"
    "  --batch-sizes         print each epoch's batch sizes on stdout (`epoch 0\n"
    "                        batches: 8 8 8 7`): every one full but the last (not with --json)\n"
    "\n"
    "A flag with an optional value takes it as the next word too (`--flip 0.7`)\n"
    "when that word is such a value; else the word is the source (`--flip DIR`).\n";

enum {
  OPT_EPOCHS = 256,
  OPT_SAVE_GRID,
  OPT_CONSUME,
  OPT_STALL,
  OPT_GPU,
  OPT_NO_GPU,
  OPT_JSON,
  OPT_SAVE,
  OPT_BATCH_SIZES
};

/* The command's own flags; the loader's options follow (cli_loader_longopts). */
static const struct option own[] = {{"size", required_argument, 0, 's'},
                                    {"epochs", required_argument, 0, OPT_EPOCHS},
                                    {"save-grid", required_argument, 0, OPT_SAVE_GRID},
                                    {"save", required_argument, 0, OPT_SAVE},
                                    {"consume-ms", required_argument, 0, OPT_CONSUME},
                                    {"stall-timeout", required_argument, 0, OPT_STALL},
                                    {"gpu", no_argument, 0, OPT_GPU},
                                    {"no-gpu", no_argument, 0, OPT_NO_GPU},
                                    {"json", no_argument, 0, OPT_JSON},
                                    {"quiet", no_argument, 0, 'q'},
                                    {"batch-sizes", no_argument, 0, OPT_BATCH_SIZES},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};

/* --size N|WxH: the output width and height, checked as the registry says. */
static int parse_size(const char *cmd, const char *s, ferry_loader_options *o) {
  char w[32], h[32];
  size_t n = strcspn(s, "xX");
  if (n == 0 || n >= sizeof w || strlen(s + n) >= sizeof h)
    return cli_usage_error(cmd, "--size needs N or WxH, got '%s'", s), -1;
  snprintf(w, sizeof w, "%.*s", (int)n, s);
  snprintf(h, sizeof h, "%s", s[n] ? s + n + 1 : w);
  if (ferry_loader_options_set(o, "width", w) || ferry_loader_options_set(o, "height", h))
    return cli_usage_error(cmd, "--size %s: %s", s, ferry_last_error()), -1;
  return 0;
}

/* Parses one option; 0 ok, -1 usage error, 1 help printed. */
static int parse_opt(int c, const char *arg, cli_load_args *a, int *size_given) {
  ferry_loader_options *o = &a->o;
  const char *cmd = "load";
  switch (c) {
  case 's': return *size_given = 1, parse_size(cmd, arg, o);
  case 'b': return cli_loader_set(cmd, o, "--batch", arg);
  case 'j': return cli_loader_set(cmd, o, "--workers", arg);
  case 'c': return cli_loader_set(cmd, o, "--crop", arg);
  case OPT_EPOCHS: return cli_int(cmd, "--epochs", arg, 1, 1000000, &a->epochs);
  case OPT_SAVE_GRID: {
    cli_image_kind kind;
    if (cli_image_kind_of(cmd, "--save-grid", arg, &kind))
      return -1;
    a->save_grid = arg;
    return 0;
  }
  case OPT_SAVE:
    if (cli_npy_check_path(cmd, arg))
      return -1;
    a->save_npy = arg;
    return 0;
  case OPT_GPU: return cli_loader_set(cmd, o, "--device", "cuda");
  case OPT_NO_GPU: return cli_loader_set(cmd, o, "--device", "cpu");
  case OPT_JSON: a->json = 1; return 0;
  case OPT_STALL: {
    float sec;
    if (cli_float(cmd, "--stall-timeout", arg, 0, 86400, &sec))
      return -1;
    o->stall_timeout_ms = sec > 0 ? (int)(sec * 1e3f + 0.5f) : -1;
    if (sec > 0 && o->stall_timeout_ms < 1)
      o->stall_timeout_ms = 1;
    return 0;
  }
  case OPT_CONSUME: {
    float ms;
    if (cli_float(cmd, "--consume-ms", arg, 0, 10000, &ms))
      return -1;
    a->consume_ms = ms;
    return 0;
  }
  case 'q': a->quiet = 1; return 0;
  case OPT_BATCH_SIZES: a->batch_sizes = 1; return 0;
  case 'h':
    fputs(usage, stdout);
    cli_loader_help(stdout);
    fputs(own_help, stdout);
    return 1;
  default:
    if (c >= CLI_OPT_BASE)
      return cli_loader_flag(cmd, o, c, arg);
    return cli_usage_error(cmd, "unknown option"), -1;
  }
}

/* A pack's sample size, from its MANIFEST's "shape H W C" line (the format:
 * src/pack/pack.h); 0 when `dir` is no pack or says no shape. */
static int pack_shape(const char *dir, int *w, int *h) {
  char path[4096], line[256];
  if ((size_t)snprintf(path, sizeof path, "%s/MANIFEST", dir) >= sizeof path)
    return 0;
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
    return 0;
  FILE *f = fy_fopen_regular(path); /* a FIFO by now: no wait (the loader names it) */
  int found = 0, c;
  while (f && !found && fgets(line, sizeof line, f))
    found = sscanf(line, "shape %d %d %d", h, w, &c) == 3 && *h > 0 && *w > 0;
  if (f)
    fclose(f);
  return found;
}

int cmd_load(int argc, char **argv) {
  cli_load_args a;
  memset(&a, 0, sizeof a);
  ferry_loader_options_default(&a.o);
  a.epochs = 1;
  optind = 1;
  opterr = 0;
  struct option *longopts = cli_loader_longopts(own);
  if (!longopts) {
    fprintf(stderr, "ferry load: out of memory\n");
    return CLI_FAIL;
  }
  int c, r = 0, size_given = 0;
  while (!r && (c = getopt_long(argc, argv, "s:b:j:c:qh", longopts, NULL)) != -1) {
    const char *arg = optarg;
    if (c >= CLI_OPT_BASE && !arg) /* --flip 0.7: the value as the next word */
      arg = cli_loader_next_value(&a.o, c, argc, argv);
    r = c == '?'
            ? (cli_usage_error("load", "unknown option or missing value: '%s'", argv[optind - 1]),
               -1)
            : parse_opt(c, arg, &a, &size_given);
  }
  free(longopts);
  if (r)
    return r > 0 ? CLI_OK : CLI_USAGE;
  if (optind != argc - 1)
    return cli_usage_error("load", "needs exactly one DIR, LIST or PACK (or - for a list on "
                                   "standard input)");
  a.o.source = argv[optind];
  if (a.save_npy) {
    if (a.o.device >= 0)
      return cli_usage_error("load", "--save writes CPU batches: leave out --device/--gpu "
                                     "(on a GPU, ferry.load_tensor in Python)");
    if (a.epochs != 1)
      return cli_usage_error("load", "--save writes one epoch: leave out --epochs");
    a.o.shuffle = 0; /* the source's order */
  }
  int w, h;
  if (!size_given && pack_shape(a.o.source, &w, &h)) {
    /* a pack is loaded at its own size, never silently resampled to 224 */
    char ws[16], hs[16];
    snprintf(ws, sizeof ws, "%d", w);
    snprintf(hs, sizeof hs, "%d", h);
    if (cli_loader_set("load", &a.o, "width", ws) || cli_loader_set("load", &a.o, "height", hs))
      return CLI_USAGE;
    if (!a.quiet)
      fprintf(stderr,
              "ferry load: %s is a pack of %dx%d samples: loading them at that size "
              "(--size resamples them)\n",
              a.o.source, w, h);
  }
  char list[4096];
  if (!strcmp(a.o.source, "-")) {
    if (cli_stdin_list("load", list, sizeof list))
      return CLI_FAIL;
    a.o.source = list;
    a.source_name = "standard input";
    a.unlink_after = list;
  }
  return cli_run_loader("load", &a); /* which removes the temporary list once read */
}
