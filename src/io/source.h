/* source.h — the list of samples a loader reads: paths and labels from an
 * ImageFolder directory, a list file, or WebDataset shards (io/shards.c). */
#ifndef FY_SOURCE_H
#define FY_SOURCE_H

#include "core/internal.h"
#include "io/walk.h"

/* The largest label: num_classes = label + 1 must fit in an int. */
#define FY_MAX_LABEL (INT32_MAX - 1)

typedef struct fy_source {
  int64_t count;
  char *paths; /* all paths, NUL-separated */
  size_t paths_len, paths_cap;
  int64_t *offsets; /* count offsets into paths */
  int32_t *labels;  /* count labels, -1 when unlabelled */
  int64_t cap;
  int num_classes;
  char **class_names;                 /* num_classes names (ImageFolder) or NULL */
  size_t not_read[FY_NOT_READ_COUNT]; /* files of formats not read yet, seen */
  /* WebDataset shards (io/shards.c); NULL/0 for files. A sample's path is
   * then "SHARD:MEMBER" (for messages) and its bytes are member_len[i]
   * bytes at member_off[i] of shards[shard[i]]. */
  char **shards;
  uint64_t shards_id; /* process-unique, set with shards: the key of their open fds (shard_fd.c) */
  int32_t nshards;
  int32_t *shard;
  int64_t *member_off, *member_len;
  int64_t *sample_begin, *sample_end; /* all of the sample's members: their byte range */
  int64_t member_cap;
  /* a stream shard's bytes (pipe:, http(s), .tar.gz: io/shard_stream.c),
   * read whole when listed; NULL for a local .tar read by position */
  uint8_t **shard_mem;
  int64_t *shard_mem_len;
  /* how long a stream shard's command or server may send nothing before
   * it is stopped: the loader's stall_timeout_ms (0: 60 s, < 0: never) */
  int stream_stall_ms;
} fy_source;

/* Opens `path`: WebDataset shards (a name ending in .tar, brace patterns
 * such as "train-{000000..000146}.tar" expanded: io/shards.h), a directory (sorted class subfolders
 * give labels 0..K-1; image files directly inside an unlabelled folder get label -1) or a list file
 * of `path[,label]` lines (relative paths are relative to the list file's folder; blank lines and
 * '#' comments skipped). Errors name the path and, for list files, the line. */
int fy_source_open(fy_source *src, const char *path);
/* The same with stream shards' stall time-out (fy_source.stream_stall_ms). */
int fy_source_open_stall(fy_source *src, const char *path, int stall_ms);
/* The caller's paths (labels NULL: -1 each), or, when every path names a
 * .tar shard and no labels are given, those shards' samples. `what` names
 * the list in messages. */
int fy_source_from_paths(fy_source *src, const char *what, const char *const *paths,
                         const int32_t *labels, int64_t count);
void fy_source_free(fy_source *src);
/* Appends a sample (used to list a pack's samples). */
int fy_source_add(fy_source *src, const char *path, int32_t label);
/* Appends sample i of `from` (a file, or a shard's member: dst then takes
 * from's shard names, and must hold no other shards' members), under
 * `path` when not NULL. */
int fy_source_add_from(fy_source *dst, const fy_source *from, int64_t i, const char *path);
/* Makes src->shards hold n names (all NULL; nshards still 0) and gives the
 * source its shards' id (shards.c, add_from). */
int fy_source_alloc_shards(fy_source *src, size_t n);
/* Room for one more shard member's entry (shards.c, add_from). */
int fy_source_grow_members(fy_source *s);

/* Reads sample i's bytes (the file, or its member of a shard: through an fd
 * the calling thread keeps open, io/shard_fd.c) into buf: fy_read_file's
 * errors and limits. */
int fy_source_read(const fy_source *s, int64_t i, uint64_t max_bytes, fy_buf *buf, size_t *size);

static inline const char *fy_source_path(const fy_source *s, int64_t i) {
  return s->paths + s->offsets[i];
}

#endif
