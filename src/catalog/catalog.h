/* catalog.h — internal interface of the catalog index (src/catalog).
 *
 * The .fidx file: a header (magic, version, the hash options), the entries
 * sorted by path, and a trailer with the count and a CRC-32 of everything
 * before it; a file that fails any check is refused whole. It is only ever
 * replaced by rename() of a fully written and synced temporary file.
 *
 * The journal (INDEX.journal) holds the results of a run in progress, one
 * CRC-protected record each, appended as files finish; a run that dies
 * leaves the index as it was plus a journal the next run resumes from. A
 * torn last record is simply ignored. */
#ifndef FY_CATALOG_H
#define FY_CATALOG_H

#include "core/internal.h"
#include "core/user_file.h" /* fy_path_under */
#include "io/walk.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

/* Strings of a catalog, in blocks that never move (entries point in). */
typedef struct fy_arena {
  char **blocks;
  size_t nblocks, used, cap; /* bytes used / capacity of the last block */
} fy_arena;

/* A copy of s in the arena, or NULL when out of memory. */
const char *fy_arena_strdup(fy_arena *a, const char *s, size_t len);
/* n bytes of the arena, 8-byte aligned, or NULL. */
void *fy_arena_alloc(fy_arena *a, size_t n);
void fy_arena_free(fy_arena *a);

struct ferry_catalog {
  ferry_hash_options options;
  ferry_catalog_entry *entries;
  size_t count, cap;
  fy_arena strings;
  /* ferry_catalog_add (the public one): the paths held, an open-addressing
   * set of arena strings (made at its first call; pathset_cap a power of
   * two, at most half full), and whether entries were added out of path
   * order: then the first reader sorts them (fy_catalog_ready, under mu). */
  const char **pathset;
  size_t pathset_cap;
  atomic_int unsorted;
  pthread_mutex_t mu;
  /* A partial catalog's share (ferry_index_options.rank/world_size):
   * share_world > 1, with the canonical roots sorted (malloc'd); whole
   * catalogs: 0 of 1, no roots. Saved as the header's SHRD block. */
  int share_rank, share_world;
  char **share_roots;
  int share_nroots;
};

/* An empty catalog with these options. */
ferry_catalog *fy_catalog_new(const ferry_hash_options *o);
/* Appends a copy of e (strings copied into the arena), unchecked: the
 * library's own catalogs (loads, journals, updates) sort themselves. */
int fy_catalog_add(ferry_catalog *c, const ferry_catalog_entry *e);
/* Sorts by path (bytewise). */
void fy_catalog_sort(ferry_catalog *c);
/* Sorts the entries if ferry_catalog_add left them out of path order: every
 * public reader of c->entries calls it first (safe from several threads;
 * not while entries are being added). */
void fy_catalog_ready(const ferry_catalog *c);

/* The largest world size of a sharded run (ferry_index_update refuses more;
 * a catalog recording more is damaged). */
#define FY_MAX_WORLD (1 << 20)

/* Records a share on c (copies and sorts the roots; world <= 1 clears it). */
int fy_catalog_set_share(ferry_catalog *c, int rank, int world, const char *const *roots,
                         int nroots);
/* Whether two catalogs record the same share (roots compared as sorted). */
int fy_share_same(const ferry_catalog *a, const ferry_catalog *b);
/* "rank R of W over ROOT, ROOT" or "a whole catalog" into buf. */
void fy_share_describe(const ferry_catalog *c, char *buf, size_t cap);
/* The share rule of a sharded run, for a file found under `roots` (the
 * canonical roots): ferry_index_rank_of of its path relative to the
 * outermost root that holds it (a root that is the file itself: its name);
 * -1 when no root holds it. */
int fy_share_rank(const char *path, const char *const *roots, int nroots, int world);
/* A partial catalog holds its own share only: every entry a canonical path
 * (absolute; no "//", ".", ".." or trailing "/": what ferry writes) that
 * fy_share_rank gives its rank. FERRY_OK (also for a whole catalog); else
 * FERRY_EINVAL naming `name` (its file), how many entries are foreign,
 * the first and why. */
int fy_share_check(const ferry_catalog *c, const char *name);

/* CRC-32 (IEEE: zlib's crc32) of n bytes, continuing from crc. */
uint32_t fy_crc32(uint32_t crc, const void *data, size_t n);

/* One entry as bytes: fy_record_size() bytes from fy_record_encode(). */
size_t fy_record_size(const ferry_catalog_entry *e);
void fy_record_encode(const ferry_catalog_entry *e, uint8_t *out);
/* Decodes a record of n bytes; strings point into `data` (not
 * NUL-terminated: the caller copies them), the signature (if any) is
 * decoded into *sig. FERRY_ECORRUPT if malformed. */
int fy_record_decode(const uint8_t *data, size_t n, ferry_catalog_entry *e, ferry_signature *sig,
                     size_t *path_len, size_t *err_len);

/* The hash options as 16 header bytes, and back; whether two option sets
 * give the same hashes. */
void fy_options_encode(const ferry_hash_options *o, uint8_t out[16]);
void fy_options_decode(const uint8_t in[16], ferry_hash_options *o);
int fy_options_same(const ferry_hash_options *a, const ferry_hash_options *b);

/* Writes the catalog to `path` atomically (temp file, fsync, rename, fsync
 * of the directory). */
int fy_catalog_save(const ferry_catalog *c, const char *path);

/* The journal of a run. */
typedef struct fy_journal {
  FILE *f;
  int fd;
  char *path;
  double last_sync;
} fy_journal;

/* Opens INDEX.journal for appending, starting it afresh (header with the
 * options) unless `keep` is set and it already holds these options. */
int fy_journal_open(fy_journal *j, const char *index_path, const ferry_hash_options *o, int keep);
/* CATALOG.journal (the journal, and the catalog's lock) opened read-write,
 * made if absent, never through a symbolic link (O_NOFOLLOW): an fd, or -1
 * with errno; fy_journal_open_error records why, naming `path` and `what`. */
int fy_journal_open_fd(const char *path);
int fy_journal_open_error(const char *path, const char *what);
int fy_journal_append(fy_journal *j, const ferry_catalog_entry *e);
/* fflush + fdatasync. */
int fy_journal_sync(fy_journal *j);
void fy_journal_close(fy_journal *j);
/* Reads a journal's valid records into a catalog (NULL when there is no
 * journal or it is for other options). */
int fy_journal_load(const char *index_path, const ferry_hash_options *o, ferry_catalog **out);
/* Deletes the journal and syncs its directory. */
void fy_journal_remove(const char *index_path);

/* Removes the temporaries a killed fy_catalog_save of `path` left
 * (exactly PATH.tmp<pid>); call with the catalog's lock held, when no
 * other save of it can be running. Returns how many. */
int fy_catalog_remove_stale(const char *path);

/* fsync of the directory that holds `path`. */
int fy_sync_dir(const char *path);

/* A found file. */
typedef struct fy_found {
  char *path;
  uint64_t size;
  int64_t mtime_ns;
  uint64_t dev, ino; /* the file's identity: one name kept per file */
} fy_found;

typedef struct fy_found_list {
  fy_found *v;
  size_t n, cap;
  /* what the walk could not read ("PATH" and "PATH: reason"), and the
   * folders it left out as `ferry dupes` move destinations */
  char **unread, **unread_why;
  size_t nunread, unread_cap;
  size_t skipped_moves;
  /* other names of files kept: symbolic links to files, second hard links */
  size_t skipped_links;
  /* files left out as formats ferry does not read yet (io/walk.h) */
  size_t not_read[FY_NOT_READ_COUNT];
} fy_found_list;

/* Walks the roots (directories, recursively if asked, or files), keeping
 * image files (by extension unless all_files). Paths are absolute; the
 * list is sorted and has no duplicates. Roots that cannot be read are an
 * error naming them; a folder or file below them that cannot be read (no
 * permission, a path too long, out of file descriptors) is listed in
 * out->unread, with the reason, and the walk goes on. One directory is
 * open at a time, whatever the depth. Subfolders holding a
 * ferry-moves.csv (where `ferry dupes --move-dupes-to` put copies) are
 * left out and counted. *canon receives the canonical roots (free each
 * and the array). */
int fy_scan(const char *const *roots, int nroots, int recursive, int all_files, fy_found_list *out,
            char ***canon);
void fy_found_free(fy_found_list *l);

/* 1 when `path` no longer exists (lstat: ENOENT or ENOTDIR); any other
 * error is not taken as gone. */
int fy_file_gone(const char *path);

/* The catalog's lock without a run's journal: the same flock on
 * INDEX.journal that ferry_index_update holds (created empty if missing,
 * and then removed on unlock). */
typedef struct fy_catalog_lock_t {
  int fd, created;
  char *path;
} fy_catalog_lock_t;
int fy_catalog_lock(const char *index_path, fy_catalog_lock_t *lock);
void fy_catalog_unlock(fy_catalog_lock_t *lock);

/* Entries of a catalog by (name, size, mtime), to recognise moved files
 * (moved.c). */
typedef struct fy_moved_key {
  uint64_t size;
  int64_t mtime_ns;
  const char *name; /* the last part of the path */
  size_t i;         /* the entry */
} fy_moved_key;
typedef struct fy_moved {
  const ferry_catalog *cat;
  fy_moved_key *keys;
  uint8_t *taken;
  size_t n;
} fy_moved;
int fy_moved_init(fy_moved *m, const ferry_catalog *c);
/* The entry (status OK) with this name, size and mtime whose file is gone
 * and that no other file took, marked taken; NULL if none. */
const ferry_catalog_entry *fy_moved_find(fy_moved *m, const char *path, uint64_t size,
                                         int64_t mtime_ns);
/* Whether entry i of the catalog was taken by a moved file. */
int fy_moved_taken(const fy_moved *m, size_t i);
void fy_moved_free(fy_moved *m);

/* The undo log `ferry dupes --move-dupes-to DIR` keeps in DIR; a folder
 * holding one is a move destination, which the catalog walk leaves out. */
#define FY_MOVES_LOG "ferry-moves.csv"
/* The mark of a review page's thumbnail folder (report_html.c): the walk
 * leaves such a folder out (a page written into the library never has its
 * thumbnails hashed as pictures), and the page writes only into a folder
 * that holds it. */
#define FY_THUMBS_MARK "ferry-thumbnails.txt"

#endif
