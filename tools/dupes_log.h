/* dupes_log.h — the undo log of `ferry dupes` moves, DIR/ferry-moves.csv
 * (dupes_log.c): CSV with the header from,to,run, one row per file moved
 * (run: the apply's id, "2026-12-01T10:22:33Z-12345", the UTC time it began
 * and its pid) and one per file put back by `--undo` (from: where it was in
 * DIR, to: where it went back, run: "undo:" and the id of the run it
 * undoes). A log of an older ferry (from,to) reads as one run, "unmarked",
 * and is rewritten with the run column the first time it is locked. The log
 * is the destination's lock: an apply or undo holds an exclusive fcntl lock
 * on it (another one is refused at once, naming the holder's pid) and opens
 * it once (a POSIX lock goes with the first close of any fd of the file). */
#ifndef FERRY_DUPES_LOG_H
#define FERRY_DUPES_LOG_H

#include <stddef.h>

#define MLOG_UNMARKED "unmarked"
#define MLOG_UNDO "undo:"

typedef struct mlog_row {
  char *from, *to, *run;
  int undo;   /* a row that put a file back (run "undo:ID") */
  int undone; /* a move that a later undo row put back */
} mlog_row;

typedef struct mlog {
  int fd;
  char *path; /* ROOT/ferry-moves.csv */
  mlog_row *rows;
  size_t n, cap;
  size_t *chain, *bucket, nbucket; /* moves by their `to`: the latest first (dupes_log.c) */
  char run[64];                    /* this process's run id */
} mlog;

/* Opens the log of the destination `root` (open as rootfd) and reads it
 * whole. `lock`: made (with its header) when missing, locked, upgraded from
 * an older log; else read as it is (missing: `missing_ok`, else an error).
 * 0, or -1 with the message printed (a symbolic link, FIFO or anything not
 * a log refused by name; "another apply is running (pid N)"). */
int mlog_open(mlog *l, int rootfd, const char *root, int lock, int missing_ok);

/* Appends a row, written whole and synced before it returns; kept in l->rows
 * too. 0, or -1 with the message printed. */
int mlog_append(mlog *l, const char *from, const char *to, const char *run);

/* 1 when the log lists the move from -> to and no undo has put it back. */
int mlog_has_move(const mlog *l, const char *from, const char *to);

void mlog_close(mlog *l);

#endif
