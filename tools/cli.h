/* cli.h — shared pieces of the `ferry` command's subcommands. */
#ifndef FERRY_CLI_H
#define FERRY_CLI_H

#include "ferry.h"
#include "tools_tier.h"

#include <stdint.h>
#include <stdio.h>

/* Exit codes, documented in `ferry --help`. */
enum {
  CLI_OK = 0,     /* everything worked */
  CLI_FAIL = 1,   /* a file or run failed (the message says which and why) */
  CLI_USAGE = 2,  /* bad command line */
  CLI_PARTIAL = 3 /* finished, but some inputs were bad and skipped */
};

int cmd_load(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_hash(int argc, char **argv);  /* perceptual hashes, catalogs */
int cmd_index(int argc, char **argv); /* catalog export / info */
int cmd_dupes(int argc, char **argv); /* near-duplicate groups */
int cmd_doctor(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_video(int argc, char **argv); /* video frames as batches */

/* Prints "ferry <cmd>: <message>" to stderr and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...);

/* CLI_USAGE, with a message, when the output file `out` already exists as
 * the same file as `in` (the same device and inode: also through a symbolic
 * or hard link), which writing it would destroy; else CLI_OK. */
int cli_refuse_overwrite(const char *cmd, const char *out, const char *in);

/* Parsers for option values; each returns 0 on success, else prints a
 * usage error naming the option and returns -1. */
int cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out);
int cli_float(const char *cmd, const char *opt, const char *s, double lo, double hi, float *out);
int cli_size(const char *cmd, const char *s, int *w, int *h); /* "224" or "320x240" */
int cli_dtype(const char *cmd, const char *s, ferry_dtype *out);
int cli_layout(const char *cmd, const char *s, ferry_layout *out);
int cli_crop(const char *cmd, const char *s, ferry_crop *out);
int cli_filter(const char *cmd, const char *s, ferry_filter *out);
int cli_floats3(const char *cmd, const char *opt, const char *s, float out[3]);

/* The loader's options as flags, from the library's registry
 * (ferry_loader_option*; cli_options.c). */
struct option;
enum { CLI_OPT_BASE = 1000 }; /* getopt val of registry option i: CLI_OPT_BASE + i */
/* getopt_long's table: the command's own flags (`extra`, up to its zero
 * row, vals below CLI_OPT_BASE), then every registry option's flag, then
 * the zero row. malloc'd; NULL when out of memory. */
struct option *cli_loader_longopts(const struct option *extra);
/* Sets the registry option that getopt's `val` stands for from the flag's
 * argument (NULL: none). 0, or -1 with the library's message printed as a
 * usage error ("ferry load: --batch needs an integer in 1..1048576, ..."). */
int cli_loader_flag(const char *cmd, ferry_loader_options *o, int val, const char *arg);
/* The same by the option's name or flag (ferry_loader_options_set). */
int cli_loader_set(const char *cmd, ferry_loader_options *o, const char *name, const char *arg);
/* The help lines of every registry option that has a flag. */
void cli_loader_help(FILE *out);

/* Sample `sample` of a batch (width x height, layout, dtype) back to u8
 * HWC RGB (width*height*3 bytes) for a PNG: float samples are scaled from
 * 0..1, undoing normalize's mean and std; u8 samples are copied as stored
 * (cli_image.c). */
void cli_sample_to_rgb(const void *sample, int width, int height, ferry_layout layout,
                       ferry_dtype dtype, int normalize, const float mean[3], const float std[3],
                       uint8_t *rgb);

/* Peak resident memory of this process, in MiB. */
double cli_peak_rss_mib(void);

/* Options shared by `load` and `demo`, parsed into loader options. */
typedef struct cli_load_args {
  ferry_loader_options o;
  int epochs;
  int quiet;
  const char *save_grid; /* write the first batch as a PNG contact sheet */
  double consume_ms;     /* GPU: stand-in consumer work per batch */
  void *consumer_stream; /* its CUDA stream (NULL: legacy default) */
} cli_load_args;

/* Runs the loader for args->epochs epochs, printing images/s, per-stage
 * time and memory per epoch. Returns a CLI exit code. */
int cli_run_loader(const char *cmd, cli_load_args *args);

#endif
