/* out_file.h — where an output file ferry writes by name goes (out_file.c):
 * the one rule for ferry_write_png, fy_write_jpeg and the ferry command's
 * PPM. An existing device, FIFO or socket (/dev/stdout, /dev/null, a pipe)
 * is written into as it is, never replaced; anything else is written under
 * a temporary name beside it and renamed over it once complete, so that a
 * failed write never leaves half a file in place of an existing one. */
#ifndef FY_OUT_FILE_H
#define FY_OUT_FILE_H

#include <stdio.h>

typedef struct fy_out_file {
  FILE *f;          /* where the bytes go */
  int direct;       /* 1: the path itself (a device, FIFO or socket) */
  const char *path; /* the output's name (the caller's string) */
  char tmp[4096];   /* the temporary name, when not direct */
} fy_out_file;

/* 1 when `path` names an existing file that is written into rather than
 * replaced: anything but a regular file or a folder. */
int fy_out_in_place(const char *path);

/* Opens the output for `path`. FERRY_OK; else *o holds nothing open and the
 * error (FERRY_EINVAL: path too long; FERRY_EIO: "NAME: cannot create:
 * REASON") is recorded. */
int fy_out_open(fy_out_file *o, const char *path);

/* Ends the output: flushes and closes it and, when `err` is 0 and that
 * went well, renames the temporary over the path. `err` is the errno of the
 * caller's own failure, 0 if its writes went well. On any failure the
 * temporary is removed (the path keeps what it had). Returns 0, or the errno
 * of the first failure (`err` itself when non-zero; EIO when none was set).
 * Records no message: the writer names its format in its own. */
int fy_out_close(fy_out_file *o, int err);

#endif
