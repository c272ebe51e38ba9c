/* dupes_move.h — moving the non-keepers of `ferry dupes` aside, and putting
 * them back (`--undo`). */
#ifndef FERRY_DUPES_MOVE_H
#define FERRY_DUPES_MOVE_H

#include "dupes_log.h"
#include "ferry.h"
#include "tools_tier.h"

/* A run of moves into one destination. */
typedef struct mover {
  char *root; /* the destination, canonical */
  int rootfd; /* open (apply) */
  mlog log;   /* root/ferry-moves.csv, locked (apply) */
  fy_catalog_lock_t cat_lock;
  int apply, quiet, locked_catalog, log_bad;
  size_t moved, failed, same, inside_root, refs_kept, finished;
  size_t decided_kept; /* --decisions: chosen keepers and files to stay, not moved */
  int stopped;         /* the run failed before any move: no summary of moves */
} mover;

/* Opens a run into `dir`. An apply makes dir, takes the catalog's lock (the
 * one `ferry hash` holds: no update meanwhile, no second apply from this
 * catalog) and the destination's (its log, dupes_log.h) for the whole run,
 * before the catalog is read; a dry run takes none. CLI_OK, or CLI_FAIL with
 * the message printed (nothing was changed). */
int cli_mover_open(mover *mv, const char *dir, const char *catalog, int apply, int quiet);

/* Moves (apply) or lists (dry run) every group's non-keepers under the
 * destination, their absolute path mirrored below it; files that changed
 * since they were hashed, or whose destination exists, are left alone and
 * reported. A keeper is never inside the destination. */
void cli_move_dupes(mover *mv, const ferry_catalog *c, const ferry_dupes *d);

/* The same for the files a move list names (the HTML report's "Save the
 * move list": CSV with a header, path,keeper and/or path_b64,keeper_b64, a
 * UTF-8 byte order mark allowed; where both are given they must agree):
 * each must be in the catalog and in its keeper's group in this run, never
 * a reference file nor a keeper elsewhere in the list, its keeper outside
 * the destination; the others are refused, line by line (dupes_list.c).
 * CLI_OK, or CLI_USAGE (not a move list) / CLI_FAIL (unreadable). */
int cli_move_list(mover *mv, const ferry_catalog *c, const ferry_dupes *d, const char *list);

/* Entry e, a duplicate of `keeper` (canonical) / ke, moved or listed. */
void cli_mover_file(mover *mv, const ferry_catalog_entry *e, const char *keeper,
                    const ferry_catalog_entry *ke);

/* The summary, the locks released; the exit code (3 when some files were
 * not moved, 1 when the log could not be written). */
int cli_mover_close(mover *mv);

/* The path with its directory resolved (links, "..", "."), the last name
 * kept as it is (a link among duplicates is moved as a link). NULL when
 * the directory does not exist. */
char *cli_canonical(const char *path);

/* The one rule of where a keeper may be: not inside the destination
 * `root`, by its name (canonical) nor, through links, by its file. */
int cli_keeper_outside(const char *keeper, const char *root);

/* `ferry dupes --undo DIR [--run ID | --list-runs] [--apply]`: the files a
 * run moved into DIR put back (dupes_undo.c); a dry run unless apply. The
 * exit code. */
int cli_undo(const char *dir, const char *run, int list_runs, int apply, int quiet,
             const char *catalog);

#endif
