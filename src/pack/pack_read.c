/* pack_read.c — opening a pack: the MANIFEST, then every shard mapped and
 * its header and index checked, so that damage is reported with the shard's
 * name before any batch is served. */
#include "core/user_file.h"
#include "pack/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *fy_pack_fopen(const char *path) {
  int fd;
  if (fy_open_regular(path, NULL, &fd) != FERRY_OK) { /* a FIFO never blocks the open */
    errno = access(path, F_OK) == 0 ? EINVAL : ENOENT;
    return NULL;
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int err = errno;
    close(fd);
    errno = err;
  }
  return f;
}

/* The recorded error again, as FERRY_ECORRUPT: a pack whose file is not a
 * regular file is a damaged pack. */
static int as_corrupt(void) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", ferry_last_error());
  return fy_error(FERRY_ECORRUPT, "%s", msg);
}

int fy_pack_is(const char *dir) {
  char path[4096];
  struct stat st;
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void fy_pack_entry_get(const fy_pack_shard *s, uint32_t k, fy_pack_entry *e) {
  const uint8_t *p = s->index + (size_t)k * 32;
  e->offset = fy_le64(p);
  e->length = fy_le64(p + 8);
  e->label = (int32_t)fy_le32(p + 16);
  e->crc = fy_le32(p + 20);
  e->path_off = fy_le32(p + 24);
  e->path_len = fy_le32(p + 28);
}

/* Maps a shard and checks what it says about itself. */
static int open_shard(fy_pack *p, fy_pack_shard *s, int number, uint32_t want_count) {
  const char *path = s->path;
  struct stat st;
  int fd, rc = fy_open_regular(path, &st, &fd); /* a FIFO in a shard's place: no wait */
  if (rc)
    return rc == FERRY_EINVAL ? as_corrupt() : rc;
  if (st.st_size < FY_PACK_HEADER) {
    close(fd);
    return fy_error(FERRY_ECORRUPT, "%s: not a ferry shard (too short)", path);
  }
  s->size = (size_t)st.st_size;
  void *m = mmap(NULL, s->size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED)
    return fy_error(FERRY_EIO, "%s: mmap failed: %s", path, strerror(errno));
  s->map = m;
  const uint8_t *h = m;
  if (memcmp(h, FY_PACK_MAGIC, 8) != 0)
    return fy_error(FERRY_ECORRUPT, "%s: not a ferry shard (bad magic)", path);
  if (fy_le32(h + 60) != fy_crc32c(0, h, 60))
    return fy_error(FERRY_ECORRUPT, "%s: shard header checksum mismatch", path);
  if (fy_le32(h + 8) != FY_PACK_VERSION)
    return fy_error(FERRY_EUNSUPPORTED, "%s: shard format version %u, this ferry reads %d", path,
                    fy_le32(h + 8), FY_PACK_VERSION);
  uint32_t kind = fy_le32(h + 12);
  if (kind != FY_PACK_KIND_U8 && kind != FY_PACK_KIND_JPEG)
    return fy_error(FERRY_EUNSUPPORTED, "%s: shard kind %u, this ferry reads 1 (u8) and 2 (jpeg)",
                    path, kind);
  if (p->kind == 0)
    p->kind = (int)kind; /* the first shard's; every other one must agree */
  if ((int)kind != p->kind)
    return fy_error(FERRY_ECORRUPT, "%s: shard kind %u differs from the first shard's (%d)", path,
                    kind, p->kind);
  if ((int)fy_le32(h + 16) != p->height || (int)fy_le32(h + 20) != p->width ||
      (int)fy_le32(h + 24) != p->channels)
    return fy_error(FERRY_ECORRUPT, "%s: shard shape differs from the MANIFEST's", path);
  uint64_t id = fy_le64(h + 48);
  uint32_t num = fy_le32(h + 56);
  if (p->id && id != p->id)
    return fy_error(FERRY_ECORRUPT,
                    "%s: a shard of another pack (its pack id %016llx, this pack's %016llx)", path,
                    (unsigned long long)id, (unsigned long long)p->id);
  if (p->id && num != (uint32_t)number)
    return fy_error(FERRY_ECORRUPT, "%s: holds shard %u of this pack, listed as shard %d", path,
                    num, number);
  s->count = fy_le32(h + 28);
  uint64_t index_off = fy_le64(h + 32), end = fy_le64(h + 40);
  if (s->count != want_count || end != s->size || index_off > end ||
      end - index_off < (uint64_t)s->count * 32 + 4)
    return fy_error(FERRY_ECORRUPT, "%s: truncated or inconsistent shard (%zu bytes)", path,
                    s->size);
  const uint8_t *ix = h + index_off;
  size_t ilen = (size_t)(end - index_off);
  if (fy_le32(ix + ilen - 4) != fy_crc32c(0, ix, ilen - 4))
    return fy_error(FERRY_ECORRUPT, "%s: index checksum mismatch", path);
  s->index = ix;
  s->strings = (const char *)ix + (size_t)s->count * 32;
  size_t sample = (size_t)p->height * p->width * p->channels,
         slen = ilen - 4 - (size_t)s->count * 32;
  for (uint32_t k = 0; k < s->count; k++) {
    fy_pack_entry e;
    fy_pack_entry_get(s, k, &e);
    /* offset > index_off first: offset + length must not wrap around */
    int len_ok = kind == FY_PACK_KIND_U8 ? e.length == sample : e.length > 0;
    if (!len_ok || e.offset < FY_PACK_HEADER || e.offset > index_off ||
        e.length > index_off - e.offset || (uint64_t)e.path_off + e.path_len > slen)
      return fy_error(FERRY_ECORRUPT, "%s: index entry %u out of bounds", path, k);
  }
  return FERRY_OK;
}

#define MANIFEST_MAX (1u << 30) /* 10 million shard lines fit */

/* The MANIFEST, whole (it is small: a line a shard). */
static int manifest_text(const char *path, char **out, size_t *len) {
  FILE *f = fy_pack_fopen(path);
  if (!f && errno == EINVAL)
    return fy_error(FERRY_ECORRUPT, "%s: not a regular file (a pack's files must be)", path);
  if (!f)
    return fy_error(FERRY_EIO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > MANIFEST_MAX) {
    fclose(f);
    return fy_error(FERRY_ECORRUPT, "%s: implausible size for a MANIFEST", path);
  }
  char *t = malloc((size_t)st.st_size + 1);
  if (!t) {
    fclose(f);
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  }
  size_t n = fread(t, 1, (size_t)st.st_size, f);
  fclose(f);
  t[n] = '\0';
  if (memchr(t, '\0', n)) {
    free(t);
    return fy_error(FERRY_ECORRUPT, "%s: not a ferry pack MANIFEST (binary data)", path);
  }
  *out = t;
  *len = n;
  return FERRY_OK;
}

/* Version 2 ends with "crc32c HEX" over every byte before that line;
 * cuts it off. */
static int manifest_checksum(char *t, size_t len, const char *path) {
  if (len < 2 || t[len - 1] != '\n')
    return fy_error(FERRY_ECORRUPT, "%s: MANIFEST truncated (no final line)", path);
  char *last = len >= 2 ? memrchr(t, '\n', len - 1) : NULL;
  last = last ? last + 1 : t;
  unsigned crc = 0;
  int end = 0;
  if (sscanf(last, "crc32c %8x\n%n", &crc, &end) != 1 || end <= 0 || last[end])
    return fy_error(FERRY_ECORRUPT, "%s: MANIFEST has no checksum line (truncated or edited)",
                    path);
  if (fy_crc32c(0, t, (size_t)(last - t)) != crc)
    return fy_error(FERRY_ECORRUPT, "%s: MANIFEST checksum mismatch (edited or damaged)", path);
  *last = '\0';
  return FERRY_OK;
}

/* MANIFEST (pack.h): "ferry-pack V", in version 2 "id HEX", "shape H W C",
 * "shards N", then N lines "shard-NNNNN.fpk COUNT"; version 2 names shard
 * i as shard-%05d of i, in order, and ends with its checksum. */
static int read_manifest(fy_pack *p, const char *dir, uint32_t **counts) {
  char path[4096];
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  char *t = NULL;
  size_t len = 0;
  int rc = manifest_text(path, &t, &len);
  if (rc)
    return rc;
  int version = 0, n = 0, at = 0;
  if (sscanf(t, "ferry-pack %d%n", &version, &at) != 1)
    rc = fy_error(FERRY_ECORRUPT, "%s: not a ferry pack MANIFEST", path);
  else if (version != 1 && version != FY_PACK_MANIFEST_VERSION)
    rc = fy_error(FERRY_EUNSUPPORTED, "%s: pack format version %d, this ferry reads 1 and %d", path,
                  version, FY_PACK_MANIFEST_VERSION);
  if (rc == FERRY_OK && version >= 2)
    rc = manifest_checksum(t, len, path);
  const char *q = t + at;
  if (rc == FERRY_OK && version >= 2) {
    unsigned long long id = 0;
    int k = 0;
    if (sscanf(q, " id %16llx%n", &id, &k) != 1)
      rc = fy_error(FERRY_ECORRUPT, "%s: MANIFEST has no pack id", path);
    p->id = id;
    q += k;
  }
  int k = 0;
  if (rc == FERRY_OK &&
      sscanf(q, " shape %d %d %d shards %d%n", &p->height, &p->width, &p->channels, &n, &k) != 4)
    rc = fy_error(FERRY_ECORRUPT, "%s: not a ferry pack MANIFEST", path);
  q += k;
  if (rc == FERRY_OK &&
      (n < 0 || n > 10000000 || p->height < 1 || p->width < 1 || p->channels < 1 ||
       p->height > 65536 || p->width > 65536 || p->channels > 4))
    rc = fy_error(FERRY_ECORRUPT, "%s: implausible shape or shard count", path);
  if (rc == FERRY_OK) {
    p->shards = calloc((size_t)(n ? n : 1), sizeof *p->shards);
    *counts = calloc((size_t)(n ? n : 1), sizeof **counts);
    if (!p->shards || !*counts)
      rc = fy_error(FERRY_ENOMEM, "out of memory");
  }
  for (int i = 0; rc == FERRY_OK && i < n; i++) {
    char name[256], want[32];
    unsigned cnt;
    if (sscanf(q, " %255s %u%n", name, &cnt, &k) != 2 || strchr(name, '/')) {
      rc = fy_error(FERRY_ECORRUPT, "%s: shard line %d unreadable", path, i + 1);
      break;
    }
    q += k;
    snprintf(want, sizeof want, FY_PACK_SHARD_NAME, i);
    if (version >= 2 && strcmp(name, want) != 0) {
      rc = fy_error(FERRY_ECORRUPT, "%s: shard line %d names %s where %s belongs", path, i + 1,
                    name, want);
      break;
    }
    char sp[4352];
    snprintf(sp, sizeof sp, "%s/%s", dir, name);
    p->shards[i].path = strdup(sp);
    (*counts)[i] = cnt;
    p->nshards = i + 1;
    p->count += cnt;
  }
  while (rc == FERRY_OK && (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r'))
    q++;
  if (rc == FERRY_OK && version >= 2 && *q)
    rc = fy_error(FERRY_ECORRUPT, "%s: more shard lines than the %d it announces", path, n);
  free(t);
  return rc;
}

int fy_pack_open(fy_pack *p, const char *dir) {
  memset(p, 0, sizeof *p);
  uint32_t *counts = NULL;
  int rc = read_manifest(p, dir, &counts);
  for (int i = 0; rc == FERRY_OK && i < p->nshards; i++)
    rc = p->shards[i].path ? open_shard(p, &p->shards[i], i, counts[i])
                           : fy_error(FERRY_ENOMEM, "out of memory");
  if (rc == FERRY_OK) {
    p->sample_shard = malloc(sizeof *p->sample_shard * (size_t)(p->count ? p->count : 1));
    p->sample_index = malloc(sizeof *p->sample_index * (size_t)(p->count ? p->count : 1));
    if (!p->sample_shard || !p->sample_index)
      rc = fy_error(FERRY_ENOMEM, "out of memory");
  }
  int64_t k = 0;
  for (int i = 0; rc == FERRY_OK && i < p->nshards; i++)
    for (uint32_t j = 0; j < p->shards[i].count; j++, k++) {
      p->sample_shard[k] = i;
      p->sample_index[k] = j;
    }
  free(counts);
  if (rc == FERRY_OK)
    p->dir = strdup(dir);
  if (rc)
    fy_pack_close(p);
  return rc;
}

void fy_pack_close(fy_pack *p) {
  for (int i = 0; p->shards && i < p->nshards; i++) {
    if (p->shards[i].map)
      munmap((void *)p->shards[i].map, p->shards[i].size);
    free(p->shards[i].path);
  }
  free(p->shards);
  free(p->sample_shard);
  free(p->sample_index);
  free(p->dir);
  memset(p, 0, sizeof *p);
}

const uint8_t *fy_pack_sample_len(const fy_pack *p, int64_t i, size_t *len, int32_t *label) {
  const fy_pack_shard *s = &p->shards[p->sample_shard[i]];
  fy_pack_entry e;
  fy_pack_entry_get(s, p->sample_index[i], &e);
  if (label)
    *label = e.label;
  if (len)
    *len = (size_t)e.length;
  return s->map + e.offset;
}

const uint8_t *fy_pack_sample(const fy_pack *p, int64_t i, int32_t *label) {
  return fy_pack_sample_len(p, i, NULL, label);
}

void fy_pack_sample_name(const fy_pack *p, int64_t i, char *buf, size_t len) {
  snprintf(buf, len, "%s sample %u", p->shards[p->sample_shard[i]].path, p->sample_index[i]);
}

int fy_pack_shard_state(const char *dir, int k, uint64_t id, uint32_t *count) {
  char path[4200];
  snprintf(path, sizeof path, "%s/" FY_PACK_SHARD_NAME, dir, k);
  FILE *f = fy_pack_fopen(path);
  if (!f)
    return FY_SHARD_MISSING;
  uint8_t h[FY_PACK_HEADER];
  int ok = fread(h, 1, sizeof h, f) == sizeof h && memcmp(h, FY_PACK_MAGIC, 8) == 0;
  fclose(f);
  if (!ok || fy_le32(h + 60) != fy_crc32c(0, h, 60))
    return FY_SHARD_MISSING;
  *count = fy_le32(h + 28);
  uint64_t hid = fy_le64(h + 48);
  if (hid != id || (id && fy_le32(h + 56) != (uint32_t)k))
    return FY_SHARD_FOREIGN;
  return FY_SHARD_DONE;
}

int fy_pack_foreign_shard(const char *dir, int k) {
  return fy_error(FERRY_ECORRUPT,
                  "%s/" FY_PACK_SHARD_NAME
                  ": belongs to another pack (its header names another pack id "
                  "or shard number); move it away and run ferry pack again",
                  dir, k);
}
