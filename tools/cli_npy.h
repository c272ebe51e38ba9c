/* cli_npy.h — `ferry load --save OUT.npy` (cli_npy.c). */
#ifndef FERRY_CLI_NPY_H
#define FERRY_CLI_NPY_H

#include "cli.h"

typedef struct cli_npy cli_npy;

/* CLI_USAGE (said) unless path ends in .npy. */
int cli_npy_check_path(const char *cmd, const char *path);
/* OUT.labels.npy for OUT.npy (a checked path); NULL when out of memory.
 * Caller frees. */
char *cli_npy_labels_path(const char *path);
/* Starts OUT.npy and OUT.labels.npy (temporary names until closed) for
 * `samples` samples shaped as the options say, once the file system is
 * seen to have room for both; NULL (said on stderr) on failure. */
cli_npy *cli_npy_open(const char *cmd, const char *path, const ferry_loader_options *o,
                      int64_t samples);
/* Appends a host batch; -1 after a write error (reported by close). */
int cli_npy_write(cli_npy *w, const ferry_batch *b);
/* Writes the headers with the count, renames both into place: CLI_OK, or
 * CLI_FAIL (said; nothing left under either name). Frees w. */
int cli_npy_close(const char *cmd, cli_npy *w);
/* Drops both temporaries and frees w (NULL: nothing). */
void cli_npy_abort(cli_npy *w);

#endif
