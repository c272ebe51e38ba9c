/* dupes_fs.h — the file operations of `ferry dupes` moves and undo
 * (dupes_fs.c), each in one place: folders below a move destination made and
 * opened level by level without following links; a file moved without ever
 * replacing another, across file systems through a temporary name that a
 * kill -9 cannot leave under the final name. */
#ifndef FERRY_DUPES_FS_H
#define FERRY_DUPES_FS_H

#include <stddef.h>

/* A name in an open folder; `shown` is its whole path, for messages. */
typedef struct dfs_at {
  int dir;
  const char *name;
  const char *shown;
} dfs_at;

/* The folder holding `rel` (names below the open folder `root`, '/'-
 * separated, the last one a file's): each level opened with O_NOFOLLOW |
 * O_DIRECTORY, made first (0755) when `make`. Its fd (>= 0) and *leaf (the
 * last name, inside rel); else -1 and `why` says which level and why ("ROOT/
 * tmp: a symbolic link inside the move destination: not followed"). */
int dfs_open_below(int root, const char *root_shown, const char *rel, int make, const char **leaf,
                   char *why, size_t n);

/* The temporary name of a copy to `name` in its folder (".NAME.ferry-part",
 * or ".ferry-part-HEX" of the name when that would be too long): written in
 * `out` (NAME_MAX + 1 bytes). A partial copy by that exact name is an
 * interrupted run's, removed by the next move to `name`. */
void dfs_part_name(const char *name, char *out);

enum { DFS_OK = 0, DFS_EXISTS = 1, DFS_FAIL = -1 };

/* Moves src to dst, never replacing anything at dst (DFS_EXISTS: nothing
 * done): a rename where both are on one file system; else a copy to dst's
 * temporary name (dfs_part_name), synced with the source's mode and times,
 * renamed into place, the folder synced. Then done(arg) records the move
 * (the undo log): when it fails the move is taken back (the rename undone,
 * or the copy removed) and the source stays. Only then is a copied source
 * removed. `follow`: a source that is a symbolic link is copied through
 * (a library's file) rather than refused (a file inside a destination).
 * DFS_FAIL with `why`: the reason, naming the file. */
int dfs_move(dfs_at src, dfs_at dst, int follow, int (*done)(void *), void *arg, char *why,
             size_t n);

/* 1 when a and b are regular files (not through links) of the same bytes. */
int dfs_same_bytes(dfs_at a, dfs_at b);

/* Removes a, a name the caller has just recorded as moved: 0, or -1 with
 * `why`. */
int dfs_remove(dfs_at a, char *why, size_t n);

#endif
