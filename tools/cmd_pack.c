/* cmd_pack.c — `ferry pack`: preprocess a source once into shards that the
 * loader streams without decoding; `--verify` checks every checksum. */
#include "cli.h"

#include <getopt.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char help[] =
    "usage: ferry pack SOURCE -o DIR [options]\n"
    "       ferry pack --verify DIR\n"
    "\n"
    "Decodes, crops and resizes every image of SOURCE (an ImageFolder directory or a\n"
    "list file) once, with all cores, into DIR: shards of u8 HWC samples that\n"
    "`ferry load DIR` (or any loader with DIR as its source) memory-maps and serves\n"
    "without decoding. Crash-safe: an interrupted pack resumes where it stopped when\n"
    "run again with the same settings; a reader never sees a half-written shard.\n"
    "With --store jpeg the shards hold small JPEGs instead (for images of varied\n"
    "sizes): each image upright, its short side resized to N (never enlarged) and\n"
    "re-encoded; the loader decodes them from memory with every crop and transform,\n"
    "as from files. Several times smaller than u8 shards; lossy.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR      the pack directory (required)\n"
    "  --size N|WxH          sample size (default 224); jpeg: the short side (N, or\n"
    "                        the smaller of W and H)\n"
    "  --store u8|jpeg|wds   u8 HWC tensors (default), re-encoded JPEGs, or WebDataset\n"
    "                        shards: DIR/shard-NNNNNN.tar with each file as it is,\n"
    "                        named by the format of its bytes (KEY.jpg, KEY.png, ...),\n"
    "                        and its label (KEY.cls), for any WebDataset reader and\n"
    "                        for `ferry load 'DIR/shard-{...}.tar'`\n"
    "  --quality N           --store jpeg: JPEG quality 1..100 (default 90)\n"
    "  --crop center|none    (default center: resize + centre crop, ratio 0.875;\n"
    "                        u8 only: jpeg packs keep the whole image)\n"
    "  --shard-size N        samples per shard (default 1024)\n"
    "  --workers N           decode threads (default: one per core)\n"
    "  --on-error skip|fail  bad files: leave out (default) or stop\n"
    "  --verify DIR          check every shard's header, index and sample checksums;\n"
    "                        names the shard and sample of any damage (exit code 1)\n"
    "  --quiet               no progress line\n"
    "\n"
    "DIR must be new, empty or a pack being resumed (every store), neither SOURCE\n"
    "nor inside it, and hold none of SOURCE's files; one ferry pack writes it at a\n"
    "time. exit codes: 0 success, 1 failure, 2 bad command line, 3 packed but\n"
    "some bad files were left out (named on stderr)\n";

typedef struct progress_state {
  int tty;
  struct timespec t0;
  long long skipped;
  int64_t total; /* the source's samples, as the pack's progress says (-1: not said) */
} progress_state;

static void on_progress(void *user, int64_t done, int64_t total) {
  progress_state *p = user;
  p->total = total;
  if (!p->tty)
    return;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  double s = (double)(t.tv_sec - p->t0.tv_sec) + (t.tv_nsec - p->t0.tv_nsec) * 1e-9;
  fprintf(stderr, "\r  packed %lld/%lld images  %.0f img/s ", (long long)done, (long long)total,
          s > 0 ? done / s : 0.0);
  fflush(stderr);
}

/* Bad files left out: said as the loader says them, and counted for the
 * exit code (3 when some were skipped, as load and hash). */
static void on_skip(void *user, const char *path, int status, const char *msg) {
  (void)status;
  progress_state *p = user;
  p->skipped++;
  fprintf(stderr, "%sferry: skipped %s\n", p->tty ? "\r\033[K" : "", msg && *msg ? msg : path);
}

static int verify(const char *dir) {
  int64_t bad = 0;
  if (ferry_pack_verify(dir, &bad) != FERRY_OK) {
    fprintf(stderr, "ferry pack: %s\n", ferry_last_error());
    if (bad)
      fprintf(stderr, "ferry pack: %lld damaged sample%s\n", (long long)bad, bad == 1 ? "" : "s");
    return CLI_FAIL;
  }
  printf("%s: every checksum matches\n", dir);
  return CLI_OK;
}

int cmd_pack(int argc, char **argv) {
  static const struct option opts[] = {
      {"output", required_argument, 0, 'o'},  {"size", required_argument, 0, 's'},
      {"crop", required_argument, 0, 'c'},    {"shard-size", required_argument, 0, 'n'},
      {"workers", required_argument, 0, 'j'}, {"on-error", required_argument, 0, 'e'},
      {"verify", required_argument, 0, 'v'},  {"quiet", no_argument, 0, 'q'},
      {"store", required_argument, 0, 't'},   {"quality", required_argument, 0, 'Q'},
      {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  ferry_pack_options o;
  ferry_pack_options_default(&o);
  int c, quiet = 0;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "o:s:j:qh", opts, NULL)) != -1) {
    switch (c) {
    case 'o': o.output = optarg; break;
    case 's':
      if (cli_size("pack", optarg, &o.width, &o.height))
        return CLI_USAGE;
      break;
    case 'c':
      if (cli_crop("pack", optarg, &o.crop))
        return CLI_USAGE;
      if (o.crop == FERRY_CROP_RANDOM)
        return cli_usage_error("pack", "--crop random is augmentation: crop when loading");
      break;
    case 'n':
      if (cli_int("pack", "--shard-size", optarg, 1, 1 << 20, &o.shard_size))
        return CLI_USAGE;
      break;
    case 'j':
      if (cli_int("pack", "--workers", optarg, 0, 1024, &o.workers))
        return CLI_USAGE;
      break;
    case 'e':
      if (strcmp(optarg, "skip") && strcmp(optarg, "fail"))
        return cli_usage_error("pack", "--on-error must be skip or fail");
      o.on_error = optarg[0] == 's' ? FERRY_ON_ERROR_SKIP : FERRY_ON_ERROR_FAIL;
      break;
    case 't':
      if (strcmp(optarg, "u8") && strcmp(optarg, "jpeg") && strcmp(optarg, "wds"))
        return cli_usage_error("pack", "--store must be u8, jpeg or wds");
      o.store = optarg[0] == 'j'   ? FERRY_PACK_JPEG
                : optarg[0] == 'w' ? FERRY_PACK_WDS
                                   : FERRY_PACK_U8;
      break;
    case 'Q':
      if (cli_int("pack", "--quality", optarg, 1, 100, &o.quality))
        return CLI_USAGE;
      break;
    case 'v': return verify(optarg);
    case 'q': quiet = 1; break;
    case 'h': fputs(help, stdout); return CLI_OK;
    default:
      return cli_usage_error("pack", "unknown option or missing value: '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage_error("pack", "needs exactly one SOURCE");
  if (!o.output)
    return cli_usage_error("pack", "needs -o DIR");
  o.source = argv[optind];
  progress_state ps = {!quiet && isatty(2), {0, 0}, 0, -1};
  clock_gettime(CLOCK_MONOTONIC, &ps.t0);
  o.progress = on_progress;
  o.progress_user = &ps;
  o.on_skip = on_skip;
  o.on_skip_user = &ps;
  int rc = ferry_pack_build(&o);
  if (ps.tty)
    fprintf(stderr, "\n");
  if (rc) {
    fprintf(stderr, "ferry pack: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  if (o.store == FERRY_PACK_WDS && ps.total > 0) { /* this pack's shards, named as a source */
    long long last = (ps.total + o.shard_size - 1) / o.shard_size - 1;
    printf("%s: packed %s as WebDataset shards: %s/shard-{000000..%06lld}.tar\n", o.output,
           o.source, o.output, last);
  } else if (o.store == FERRY_PACK_WDS)
    printf("%s: packed %s as WebDataset shards\n", o.output, o.source);
  else if (o.store == FERRY_PACK_JPEG)
    printf("%s: packed %s as JPEGs, short side %d, quality %d\n", o.output, o.source,
           o.width < o.height ? o.width : o.height, o.quality);
  else
    printf("%s: packed %s at %dx%d\n", o.output, o.source, o.width, o.height);
  if (ps.skipped)
    fprintf(stderr, "ferry pack: %lld bad files left out (named above)\n", ps.skipped);
  return ps.skipped ? CLI_PARTIAL : CLI_OK;
}
