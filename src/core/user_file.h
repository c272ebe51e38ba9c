/* user_file.h — the two rules for the paths a user gives ferry (user_file.c),
 * each in one place:
 *
 * Inputs are regular files. Every reader of a user's path (images, list
 * files, shards, packs, catalogs, videos, move lists, the keeper's checks,
 * thumbnails) opens it with fy_open_regular: O_NONBLOCK, so that open() of a
 * FIFO never waits for a writer; fstat; a FIFO, device, socket or folder
 * refused at once, by name and kind; then blocking reads again.
 *
 * No output over an input. Every command that writes a file by name checks
 * it with fy_out_guard against each of its inputs before it writes anything:
 * the output may be neither the input itself (the same device and inode,
 * through links, hard links included) nor, when the input is a folder that
 * is walked, anywhere inside it. */
#ifndef FY_USER_FILE_H
#define FY_USER_FILE_H

#include <stdio.h>
#include <sys/stat.h>

/* "a FIFO", "a character device", "a block device", "a socket", "a folder",
 * "a symbolic link", "a regular file" or "an unknown kind of file". */
const char *fy_file_kind(mode_t mode);

/* Opens `path` for reading if it is a regular file (through links): FERRY_OK
 * with the fd in *fd, its stat in *st when st is non-NULL. Else *fd is -1
 * and the error is recorded, naming the file: FERRY_EIO "PATH: cannot open:
 * REASON", or FERRY_EINVAL "PATH: a FIFO, not a regular file (refused: ferry
 * reads files only)". */
int fy_open_regular(const char *path, struct stat *st, int *fd);

/* The same rule for `name` relative to the folder fd `dir` (AT_FDCWD: as
 * open()), opened with `flags` (O_RDONLY, or O_RDWR | O_CREAT | O_APPEND,
 * with O_NOFOLLOW where a link must not be followed; mode 0644 when
 * created); messages name `shown` (NULL: name). On failure errno is open()'s
 * (ELOOP: a link under O_NOFOLLOW, ENOENT), or EINVAL for a file that is
 * not regular. */
int fy_openat_regular(int dir, const char *name, const char *shown, int flags, struct stat *st,
                      int *fd);

/* The same as a stdio stream ("rb"); NULL with the error recorded. */
FILE *fy_fopen_regular(const char *path);

/* 1 when `path` is `root` or below it, by their names (both absolute and
 * canonical; a root ending in '/' holds what starts with it). */
int fy_path_under(const char *path, const char *root);

/* FERRY_OK when writing `out` cannot replace or land inside `input`; else
 * FERRY_EINVAL with the message "OUT: is the input INPUT ..." or "OUT:
 * inside the input folder INPUT ...". `out` need not exist (nor its
 * folders: the nearest existing one is resolved); an `out` that is a
 * device, FIFO or socket (written into, never replaced) passes. An output
 * folder (`ferry pack -o DIR`) is checked alike: DIR may be neither the
 * input folder nor inside it. `input` that does not exist passes (its
 * reader names it). */
int fy_out_guard(const char *out, const char *input);

#endif
