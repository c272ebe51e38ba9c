/* shards.h — WebDataset shards as a loader source: tar files whose members
 * are grouped into samples by key (the member's name up to the first dot of
 * its base name), the image taken from the jpg/jpeg/png/webp member (then
 * any other extension ferry reads), the label from cls/label/txt/json.
 * Only the headers of each shard are read when the source opens (plus the
 * label members, a few bytes each); a sample's image is read later as one
 * byte range of its shard (fy_source_read). */
#ifndef FY_SHARDS_H
#define FY_SHARDS_H

#include "io/source.h"

/* Most shards one source may name (a brace pattern included). */
#define FY_MAX_SHARDS 1000000

/* 1 when `spec` names shards: it ends in ".tar" (after brace expansion),
 * possibly with a brace pattern such as "train-{000000..000146}.tar", or in
 * a compressed tar's name, or is a "pipe:" command or an s3:// URL. */
int fy_shards_spec(const char *spec);

/* Expands "{a..b}" (numbers, zero-padded to the wider bound when either
 * has leading zeros) and "{x,y,z}" in `spec`, left to right (the last group
 * turning fastest), into a NULL-terminated array of malloc'ed names (free
 * with fy_shards_free_names). Errors name the pattern: unbalanced or nested
 * braces, a group that is neither a range nor a list, more than
 * FY_MAX_SHARDS names (counted before any name is made); on an error
 * *names is NULL and *n 0. */
int fy_shards_expand(const char *spec, char ***names, size_t *n);
/* The same with a limit of `max` names (the fuzz target's). */
int fy_shards_expand_max(const char *spec, size_t max, char ***names, size_t *n);
void fy_shards_free_names(char **names, size_t n);

/* Lists the samples of `n` shards into src (src zeroed by the caller; on an
 * error it is freed). `what` names the source in messages (the spec as the
 * user gave it). A stream shard (pipe:, http(s), .tar.gz: io/shard_stream.h)
 * is read whole into memory (src->shard_mem) and its members served from
 * there. */
int fy_shards_open(fy_source *src, const char *what, char *const *shards, size_t n);

/* Member KEY.<field> of sample i's (webdataset's field: "txt", "json",
 * "b.txt" for "KEY.b.txt"; case not told apart) into buf: *found 1 and
 * *size its bytes, or *found 0 when the sample has none. The sample's
 * members are read again (one read of its range; in memory for a stream
 * shard). EUNSUPPORTED for a source that is not shards. */
int fy_shards_field(const fy_source *src, int64_t i, const char *field, fy_buf *buf, size_t *size,
                    int *found);

/* The tar header at `block` (512 bytes): what kind of member it is. Exposed
 * for the unit test and the fuzz target. */
typedef struct fy_tar_header {
  char name[4096]; /* prefix/name joined */
  uint64_t size;
  char type; /* '0' file, 'x' pax, 'g' global pax, 'L' GNU long name, ... */
} fy_tar_header;
/* 0: a header (checksum checked); 1: an all-zero block (the end); -1: not a
 * tar header (bad checksum or size field). */
int fy_tar_parse_header(const uint8_t block[512], fy_tar_header *h);

#endif
