/* shard_stream.h — WebDataset shards that cannot be read by position: a
 * `pipe:CMD` (the command's standard output), an http(s) URL (fetched by
 * the curl command, as webdataset's gopen does) and gzip-compressed shards
 * (.tar.gz, .tgz, or any stream that starts with gzip's magic bytes). Each is
 * read once, sequentially, into memory (decompressed as it arrives); the
 * listing and the members' reads then use those bytes (io/shards.c). */
#ifndef FY_SHARD_STREAM_H
#define FY_SHARD_STREAM_H

#include "core/internal.h"

/* 1 when `name` is read as a stream (pipe:, http://, https://, s3://, or a
 * compressed tar name), 0 for a plain local .tar read by position. */
int fy_shard_stream_is(const char *name);

/* The whole tar of stream shard `name`, decompressed, into *data (malloc'ed,
 * *len bytes; free() it). Errors name the shard and the reason: a command
 * that fails or exits non-zero, an HTTP error or a server that cannot be
 * reached, a gzip stream cut short or damaged, a compression not read
 * (.bz2, .xz, .zst, .lz4: with the pipe: to use), s3:// (with the pipe:);
 * a command or server that sends nothing for `stall_ms` (0: 60 s; < 0:
 * never) is stopped, FERRY_ETIMEOUT. The shard may hold at most `budget`
 * bytes (what is left of the loader's bound `total`, said in the error):
 * more is FERRY_ETOO_LARGE, named, before it is allocated. */
int fy_shard_stream_load(const char *name, int stall_ms, int64_t budget, int64_t total,
                         uint8_t **data, int64_t *len);
/* The bound on the bytes all of a loader's stream shards hold together:
 * half of the machine's physical memory. */
int64_t fy_shard_stream_budget(void);

#endif
