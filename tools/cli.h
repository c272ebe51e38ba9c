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

/* CLI_USAGE, with a message, when writing the output `out` would replace
 * or land inside the input `in` (fy_out_guard, core/user_file.h: the same
 * device and inode, through symbolic or hard links; inside an input
 * folder); else CLI_OK. */
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
/* --device of the hashing and search commands: cpu (-1), cuda (0), cuda:N,
 * opencl (FERRY_DEVICE_OPENCL_ANY) or opencl:N (FERRY_DEVICE_OPENCL + N);
 * fy_hash_device_name (tools_tier.h) names such a value back. */
int cli_device(const char *cmd, const char *s, int *device);

/* The loader's options as flags, from the library's registry
 * (ferry_loader_option*; cli_options.c). */
struct option;
enum { CLI_OPT_BASE = 1000 }; /* getopt val of registry option i: CLI_OPT_BASE + i */
/* getopt_long's table: the command's own flags (`extra`, up to its zero
 * row, vals below CLI_OPT_BASE), then every registry option's flag, then
 * the zero row. malloc'd; NULL when out of memory. */
struct option *cli_loader_longopts(const struct option *extra);
/* A registry flag with an optional value given as the next word
 * (`--flip 0.7`; getopt_long takes only `--flip=0.7`): when getopt gave
 * `val` no value and argv[optind] is a value the option takes (set on a
 * copy of `o`, which stays as it is), optind moves past it and the word
 * is returned; else NULL (`--flip DIR`: the flag alone, DIR an operand). */
const char *cli_loader_next_value(const ferry_loader_options *o, int val, int argc, char **argv);
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

/* Image outputs (cli_write.c): the writer is picked from the output's
 * extension: .png, .jpg/.jpeg (JPEG, `quality`), .ppm (binary PPM; PGM
 * data for grey). An existing device or pipe (/dev/null, /dev/stdout, a
 * FIFO) without one of those extensions gets PNG, and is written as it is,
 * never replaced. */
typedef enum cli_image_kind { CLI_IMAGE_PNG = 0, CLI_IMAGE_JPEG, CLI_IMAGE_PPM } cli_image_kind;
#define CLI_IMAGE_EXTENSIONS ".png, .jpg, .jpeg or .ppm"
#define CLI_JPEG_QUALITY 95 /* --quality's default */
/* The writer for `path` into *kind; CLI_USAGE (with a message naming the
 * file and the extensions accepted, for `opt`, such as "-o") when no writer
 * fits, else CLI_OK. Called before any work: nothing is written then. */
int cli_image_kind_of(const char *cmd, const char *opt, const char *path, cli_image_kind *kind);
/* Writes `im` as `kind`; CLI_OK, or CLI_FAIL with "ferry CMD: PATH: reason"
 * printed. A regular file is replaced only once complete. */
int cli_write_image(const char *cmd, const char *path, cli_image_kind kind, const ferry_image *im,
                    int quality);

/* `-` for standard input (cli_stdin.c). */
/* All of stdin (at most `max` bytes) into *data (malloc'd) and *n; CLI_OK,
 * or CLI_FAIL with the reason printed. */
int cli_read_stdin(const char *cmd, uint64_t max, uint8_t **data, size_t *n);
/* The lines of stdin (a list of paths, one a line; empty lines skipped, a
 * CR before the newline dropped) into *paths (malloc'd strings, *n of
 * them; free with cli_free_lines). CLI_OK, or CLI_FAIL with the reason. */
int cli_stdin_lines(const char *cmd, char ***paths, size_t *n);
void cli_free_lines(char **paths, size_t n);
/* A list file (`path[,label]` lines) read from stdin, copied to a temporary
 * file whose relative paths are made absolute from the working directory
 * (the loader reads a list's relative paths from the list's folder): its
 * name into `out` (cap bytes). CLI_OK, or CLI_FAIL with the reason. The
 * caller unlinks it. */
int cli_stdin_list(const char *cmd, char *out, size_t cap);

/* A JSON object on stdout, for --json summaries (cli_json.c): a jansson
 * tree built by these calls, written once by cli_json_end. A NULL key adds
 * an array element. Out of memory on the way is remembered and answered
 * by cli_json_end. */
typedef struct cli_json {
  FILE *f;
  int depth;
  int failed;        /* a member could not be added */
  json_t *level[16]; /* the open object or array at each depth (borrowed) */
} cli_json;
void cli_json_begin(cli_json *j, FILE *f); /* { */
/* Writes the object and a newline: CLI_OK, or CLI_FAIL with the reason on
 * stderr (nothing on f). */
int cli_json_end(cli_json *j);
void cli_json_drop(cli_json *j); /* the object let go, nothing written (a failed run) */
void cli_json_str(cli_json *j, const char *key, const char *v); /* NULL: null */
/* A file name: as cli_json_str, and `<key>_b64` (its bytes in base64) when
 * it is not UTF-8 (catalog/json.c's fy_json_set_path). Object members only. */
void cli_json_path(cli_json *j, const char *key, const char *path);
void cli_json_int(cli_json *j, const char *key, long long v);
void cli_json_num(cli_json *j, const char *key, double v); /* not finite: null */
void cli_json_bool(cli_json *j, const char *key, int v);
void cli_json_null(cli_json *j, const char *key);
void cli_json_object(cli_json *j, const char *key); /* opens {, up to cli_json_close */
void cli_json_array(cli_json *j, const char *key);  /* opens [ */
void cli_json_close(cli_json *j);                   /* the last { or [ opened */

/* Peak resident memory of this process, in MiB. */
double cli_peak_rss_mib(void);

/* Options shared by `load` and `demo`, parsed into loader options. */
typedef struct cli_load_args {
  ferry_loader_options o;
  int epochs;
  int quiet;
  int json;                 /* --json: the summary as one JSON object on stdout */
  const char *source_name;  /* how messages name the source (NULL: o.source) */
  const char *unlink_after; /* a temporary list (`ferry load -`): removed once read */
  const char *save_grid;    /* write the first batch as a PNG contact sheet */
  const char *save_npy;     /* --save OUT.npy: every batch of the epoch, and the labels */
  struct cli_npy *npy;      /* its writer while the epoch runs */
  double consume_ms;        /* GPU: stand-in consumer work per batch (legacy default stream) */
  int batch_sizes;          /* --batch-sizes: each epoch's batch sizes on stdout */
} cli_load_args;

/* Runs the loader for args->epochs epochs, printing images/s, per-stage
 * time and memory per epoch. Returns a CLI exit code. */
int cli_run_loader(const char *cmd, cli_load_args *args);

#endif
