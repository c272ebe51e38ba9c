/* dupes_move.h — moving the non-keepers of `ferry dupes` aside. */
#ifndef FERRY_DUPES_MOVE_H
#define FERRY_DUPES_MOVE_H

#include "ferry.h"

/* Moves (apply) or lists (dry run) every group's non-keepers under `dir`,
 * their absolute path mirrored below it; files that changed since they were
 * hashed, or whose destination exists, are left alone and reported.
 * Returns a CLI exit code (3 when some files were not moved). */
int cli_move_dupes(const ferry_catalog *c, const ferry_dupes *d, const char *dir, int apply,
                   int quiet);

/* The same for the files a move list names (the HTML report's "Save the
 * move list": CSV with a header, path,keeper and/or path_b64,keeper_b64):
 * each must be in the catalog and in its keeper's group in this run, never
 * a reference file nor a keeper elsewhere in the list; the others are
 * refused, line by line. */
int cli_move_list(const ferry_catalog *c, const ferry_dupes *d, const char *list, const char *dir,
                  int apply, int quiet);

#endif
