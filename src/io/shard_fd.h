/* shard_fd.h — a shard member's bytes read through an fd the reading
 * thread keeps open (io/shard_fd.c says why and what bounds them). */
#ifndef FY_SHARD_FD_H
#define FY_SHARD_FD_H

#include "core/internal.h"

/* A new process-unique id for one source's shards (never 0, never given
 * twice): the key of their open fds, with the shard's index. */
uint64_t fy_shard_fd_new_id(void);

/* Reads `len` bytes at `off` of shard number `shard` (at `path`) of the
 * source `id` into buf: fy_read_range_check's limits first (nothing opened
 * or allocated past them), then the calling thread's open fd of that shard,
 * opened when it has none ("PATH: cannot open: REASON"), and
 * fy_read_range_fd's errors, which name `name` (the member). */
int fy_shard_fd_read(uint64_t id, int32_t shard, const char *path, const char *name, uint64_t off,
                     uint64_t len, uint64_t max_bytes, fy_buf *buf, size_t *size);

/* Source `id` is being freed: closes the calling thread's fds of it now,
 * other threads' at their next shard read (or their exit). */
void fy_shard_fd_forget(uint64_t id);

#endif
