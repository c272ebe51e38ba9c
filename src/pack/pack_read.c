/* pack_read.c — opening a pack: the MANIFEST, then every shard mapped and
 * its header and index checked, so that damage is reported with the shard's
 * name before any batch is served. */
#include "pack/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

FILE *fy_pack_fopen(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EINVAL;
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

int fy_pack_is(const char *dir) {
  char path[4096];
  struct stat st;
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void fy_pack_entry_get(const fy_pack_shard *s, uint32_t k, fy_pack_entry *e) {
  const uint8_t *p = s->index + (size_t)k * 32;
  e->offset = get64(p);
  e->length = get64(p + 8);
  e->label = (int32_t)get32(p + 16);
  e->crc = get32(p + 20);
  e->path_off = get32(p + 24);
  e->path_len = get32(p + 28);
}

/* Maps a shard and checks what it says about itself. */
static int open_shard(fy_pack *p, fy_pack_shard *s, uint32_t want_count) {
  const char *path = s->path;
  /* O_NONBLOCK: a FIFO in a shard's place must not block the open */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fy_error(FERRY_EIO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    close(fd);
    return fy_error(FERRY_ECORRUPT, "%s: not a regular file (a shard must be one)", path);
  }
  if (fstat(fd, &st) != 0 || st.st_size < FY_PACK_HEADER) {
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
  if (get32(h + 60) != fy_crc32c(0, h, 60))
    return fy_error(FERRY_ECORRUPT, "%s: shard header checksum mismatch", path);
  if (get32(h + 8) != FY_PACK_VERSION)
    return fy_error(FERRY_EUNSUPPORTED, "%s: shard format version %u, this ferry reads %d", path,
                    get32(h + 8), FY_PACK_VERSION);
  uint32_t kind = get32(h + 12);
  if (kind != FY_PACK_KIND_U8 && kind != FY_PACK_KIND_JPEG)
    return fy_error(FERRY_EUNSUPPORTED, "%s: shard kind %u, this ferry reads 1 (u8) and 2 (jpeg)",
                    path, kind);
  if (p->kind == 0)
    p->kind = (int)kind; /* the first shard's; every other one must agree */
  if ((int)kind != p->kind)
    return fy_error(FERRY_ECORRUPT, "%s: shard kind %u differs from the first shard's (%d)", path,
                    kind, p->kind);
  if ((int)get32(h + 16) != p->height || (int)get32(h + 20) != p->width ||
      (int)get32(h + 24) != p->channels)
    return fy_error(FERRY_ECORRUPT, "%s: shard shape differs from the MANIFEST's", path);
  s->count = get32(h + 28);
  uint64_t index_off = get64(h + 32), end = get64(h + 40);
  if (s->count != want_count || end != s->size || index_off > end ||
      end - index_off < (uint64_t)s->count * 32 + 4)
    return fy_error(FERRY_ECORRUPT, "%s: truncated or inconsistent shard (%zu bytes)", path,
                    s->size);
  const uint8_t *ix = h + index_off;
  size_t ilen = (size_t)(end - index_off);
  if (get32(ix + ilen - 4) != fy_crc32c(0, ix, ilen - 4))
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

/* MANIFEST: "ferry-pack 1", "shape H W C", "shards N", then N lines
 * "shard-NNNNN.fpk COUNT". */
static int read_manifest(fy_pack *p, const char *dir, uint32_t **counts) {
  char path[4096];
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  FILE *f = fy_pack_fopen(path);
  if (!f && errno == EINVAL)
    return fy_error(FERRY_ECORRUPT, "%s: not a regular file", path);
  if (!f)
    return fy_error(FERRY_EIO, "%s: cannot open: %s", path, strerror(errno));
  int version = 0, n = 0;
  int ok = fscanf(f, "ferry-pack %d shape %d %d %d shards %d", &version, &p->height, &p->width,
                  &p->channels, &n) == 5;
  int rc = FERRY_OK;
  if (!ok)
    rc = fy_error(FERRY_ECORRUPT, "%s: not a ferry pack MANIFEST", path);
  else if (version != FY_PACK_VERSION)
    rc = fy_error(FERRY_EUNSUPPORTED, "%s: pack format version %d, this ferry reads %d", path,
                  version, FY_PACK_VERSION);
  else if (n < 0 || n > 10000000 || p->height < 1 || p->width < 1 || p->channels < 1 ||
           p->height > 65536 || p->width > 65536 || p->channels > 4)
    rc = fy_error(FERRY_ECORRUPT, "%s: implausible shape or shard count", path);
  if (rc == FERRY_OK) {
    p->shards = calloc((size_t)(n ? n : 1), sizeof *p->shards);
    *counts = calloc((size_t)(n ? n : 1), sizeof **counts);
    if (!p->shards || !*counts)
      rc = fy_error(FERRY_ENOMEM, "out of memory");
  }
  for (int i = 0; rc == FERRY_OK && i < n; i++) {
    char name[256];
    unsigned cnt;
    if (fscanf(f, "%255s %u", name, &cnt) != 2 || strchr(name, '/')) {
      rc = fy_error(FERRY_ECORRUPT, "%s: shard line %d unreadable", path, i + 1);
      break;
    }
    char sp[4352];
    snprintf(sp, sizeof sp, "%s/%s", dir, name);
    p->shards[i].path = strdup(sp);
    (*counts)[i] = cnt;
    p->nshards = i + 1;
    p->count += cnt;
  }
  fclose(f);
  return rc;
}

int fy_pack_open(fy_pack *p, const char *dir) {
  memset(p, 0, sizeof *p);
  uint32_t *counts = NULL;
  int rc = read_manifest(p, dir, &counts);
  for (int i = 0; rc == FERRY_OK && i < p->nshards; i++)
    rc = p->shards[i].path ? open_shard(p, &p->shards[i], counts[i])
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
