/* pack_verify.c — every sample's checksum of a pack (ferry_pack_verify,
 * `ferry pack --verify`), read under the SIGBUS guard. */
#include "pack/pack.h"

#include <stdio.h>

/* One shard's checksums, under fy_bus_guard (the shard may shrink while it
 * is read). */
typedef struct verify_job {
  const fy_pack_shard *s;
  int64_t bad;
  char *first;
  size_t first_len;
} verify_job;

static void verify_shard(void *arg) {
  verify_job *j = arg;
  const fy_pack_shard *s = j->s;
  for (uint32_t k = 0; k < s->count; k++) {
    fy_pack_entry e;
    fy_pack_entry_get(s, k, &e);
    if (fy_crc32c(0, s->map + e.offset, e.length) == e.crc)
      continue;
    if (!j->bad++ && !j->first[0])
      snprintf(j->first, j->first_len, "%s: sample %u (%.*s): checksum mismatch", s->path, k,
               (int)e.path_len, s->strings + e.path_off);
  }
}

int fy_pack_verify_open(const fy_pack *p, int64_t *bad_out) {
  int64_t bad = 0;
  char first[1024] = "";
  for (int i = 0; i < p->nshards; i++) {
    verify_job j = {&p->shards[i], 0, first, sizeof first};
    if (fy_bus_guard(verify_shard, &j) != 0) { /* truncated while read */
      bad += j.bad + 1;
      if (!first[0])
        snprintf(first, sizeof first, "%s: the shard shrank while it was being read",
                 p->shards[i].path);
      continue;
    }
    bad += j.bad;
  }
  if (bad_out)
    *bad_out = bad;
  if (bad)
    return fy_error(FERRY_ECORRUPT, "%s%s", first, bad > 1 ? " (and more damaged samples)" : "");
  return FERRY_OK;
}

int ferry_pack_verify(const char *dir, int64_t *bad_out) {
  fy_pack p;
  if (bad_out)
    *bad_out = 0;
  int rc = fy_pack_open(&p, dir);
  if (rc)
    return rc;
  rc = fy_pack_verify_open(&p, bad_out);
  fy_pack_close(&p);
  return rc;
}
