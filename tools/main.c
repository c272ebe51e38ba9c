/* main.c — the `ferry` command: dispatch to subcommands. */
#include "cli.h"

#include <errno.h>
#include <string.h>

static const char usage[] =
    "usage: ferry <command> [options]\n"
    "\n"
    "ferry moves images from storage into training and inference, fast.\n"
    "\n"
    "commands:\n"
    "  load DIR|LIST    run the loading pipeline; prints images/s and per-stage time\n"
    "  info FILE...     format, size, subsampling, progressive, orientation\n"
    "  decode FILE -o OUT   decode (optionally crop/resize) and write a PNG, JPEG\n"
    "                   or PPM (by OUT's extension); FILE - reads standard input\n"
    "  demo             the README's main job on the bundled sample\n"
    "  hash PATH... [-o CATALOG.fidx]   perceptual hashes (imagehash's), catalog\n"
    "                   (moved files keep their hashes; --prune: drop vanished ones;\n"
    "                   --rank R --world-size W: one share, a partial catalog)\n"
    "  index export|info|prune CATALOG  a catalog as CSV/JSON, a summary, or\n"
    "                   the catalog without the entries of vanished files\n"
    "  index merge OUT PART...  partial catalogs (or whole ones) into one\n"
    "  dupes CATALOG    near-duplicate groups: CSV, JSON or HTML report (vanished\n"
    "                   files left out); a folder? `ferry hash DIR -o DIR.fidx` first\n"
    "  doctor           GPUs, JPEG engine, NVDEC, and which backends ferry will use\n"
    "  pack SRC -o DIR  preprocess once into shards that load without decoding\n"
    "  video FILE...    sampled video frames as batches; prints frames/s\n"
    "\n"
    "`ferry help <command>` or `ferry <command> --help` shows a command's options.\n"
    "-v, --verbose (any command, anywhere before a `--`): the library's debug lines\n"
    "too, on stderr (\"ferry: debug: ...\"), and FFmpeg's own log for video files.\n"
    "\n"
    "exit codes: 0 success, 1 failure (the message names the file and reason),\n"
    "            2 bad command line, 3 finished but some files were skipped\n";

static int run(int argc, char **argv);

/* Output that did not reach stdout (a full disk, a closed pipe) is a
 * failure named on stderr, never exit 0 with the data lost. */
static int stdout_written(int rc) {
  errno = 0;
  int flushed = fflush(stdout) == 0;
  if (flushed && !ferror(stdout))
    return rc;
  int e = errno;
  fprintf(stderr, "ferry: writing standard output failed%s%s: what it holds is incomplete\n",
          e ? ": " : "", e ? strerror(e) : "");
  return rc == CLI_OK || rc == CLI_PARTIAL ? CLI_FAIL : rc;
}

/* The library's messages (skipped files, fallbacks, debug lines): stderr,
 * one line each, so that data on stdout stays parseable. */
static void print_log(void *user, ferry_log_level level, const char *msg) {
  (void)user;
  fprintf(stderr, "ferry: %s%s\n", level == FERRY_LOG_DEBUG ? "debug: " : "", msg);
}

int main(int argc, char **argv) {
  /* Reports and skip warnings interleave in the order they happen, also in
   * a log file. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  ferry_set_log(print_log, NULL);
  return stdout_written(run(argc, argv));
}

static const struct {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the command's name */
} commands[] = {{"load", cmd_load},   {"info", cmd_info},     {"hash", cmd_hash},
                {"index", cmd_index}, {"dupes", cmd_dupes},   {"decode", cmd_decode},
                {"demo", cmd_demo},   {"doctor", cmd_doctor}, {"pack", cmd_pack},
                {"video", cmd_video}};

static int unknown(const char *cmd) {
  fprintf(stderr, "ferry: unknown command '%s'\n\n%s", cmd, usage);
  return CLI_USAGE;
}

static int dispatch(int argc, char **argv) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[0], commands[i].name))
      return commands[i].run(argc, argv);
  return unknown(argv[0]);
}

/* Takes -v / --verbose out of argv (up to a "--", after which every word
 * is the command's): the log level debug, for every command, in one place. */
static int take_verbose(int argc, char **argv) {
  int n = 1, i = 1;
  for (; i < argc && strcmp(argv[i], "--"); i++)
    if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
      ferry_set_log_level(FERRY_LOG_DEBUG);
    else
      argv[n++] = argv[i];
  while (i < argc)
    argv[n++] = argv[i++];
  argv[n] = NULL;
  return n;
}

static int run(int argc, char **argv) {
  argc = take_verbose(argc, argv);
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      (!strcmp(argv[1], "help") && (argc == 2 || !strcmp(argv[2], "help")))) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_USAGE : CLI_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("ferry %s\n", ferry_version());
    return CLI_OK;
  }
  if (!strcmp(argv[1], "help")) { /* ferry help CMD: the same as ferry CMD --help */
    if (argc > 3) {
      fprintf(stderr, "ferry help: one command at a time ('%s' is one too many)\n", argv[3]);
      return CLI_USAGE;
    }
    char help[] = "--help";
    char *args[] = {argv[2], help, NULL};
    return dispatch(2, args);
  }
  return dispatch(argc - 1, argv + 1);
}
