/* pack_write.c — writing one shard so that a crash at any point leaves
 * either no shard or a complete one: a temporary file, fsync, rename,
 * fsync of the directory; and the pack directory's small files (PLAN,
 * MANIFEST) the same way, and the temporaries an interrupted build leaves. */
#include "pack/pack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static int write_all(int fd, const void *buf, size_t n, const char *path) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return fy_error(FERRY_EIO, "%s: write failed: %s", path, strerror(errno));
    p += k;
    n -= (size_t)k;
  }
  return FERRY_OK;
}

/* fsync of the directory makes the rename itself durable. */
static int sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return fy_error(FERRY_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
  int rc = fsync(fd) == 0 ? FERRY_OK : fy_error(FERRY_EIO, "%s: fsync: %s", dir, strerror(errno));
  close(fd);
  return rc;
}

int fy_pack_commit(const char *tmp, const char *final, const char *dir) {
  if (rename(tmp, final) != 0)
    return fy_error(FERRY_EIO, "%s: rename to %s failed: %s", tmp, final, strerror(errno));
  return sync_dir(dir);
}

/* Builds the index + strings + crc block. */
static uint8_t *build_index(int count, const uint64_t *off, const uint8_t *const *samples,
                            const size_t *lens, const int32_t *labels, const char *const *paths,
                            size_t *len) {
  size_t strings = 0;
  for (int i = 0; i < count; i++)
    strings += strlen(paths[i]);
  size_t n = (size_t)count * 32 + strings + 4;
  uint8_t *b = calloc(1, n);
  if (!b)
    return NULL;
  uint8_t *s = b + (size_t)count * 32;
  uint32_t soff = 0;
  for (int i = 0; i < count; i++) {
    uint8_t *e = b + (size_t)i * 32;
    uint32_t pl = (uint32_t)strlen(paths[i]);
    put64(e, off[i]);
    put64(e + 8, lens[i]);
    put32(e + 16, (uint32_t)labels[i]);
    put32(e + 20, fy_crc32c(0, samples[i], lens[i]));
    put32(e + 24, soff);
    put32(e + 28, pl);
    memcpy(s + soff, paths[i], pl);
    soff += pl;
  }
  put32(b + n - 4, fy_crc32c(0, b, n - 4));
  *len = n;
  return b;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

uint64_t fy_pack_new_id(void) {
  uint64_t id = 0;
  if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id || id == 0) {
    struct timespec ts; /* no entropy source: still distinct per run */
    clock_gettime(CLOCK_REALTIME, &ts);
    id = ((uint64_t)ts.tv_sec * 1000000007u) ^ ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)getpid();
  }
  return id ? id : 1;
}

int fy_pack_write_shard_var(const char *dir, uint64_t id, int shard, int kind, int h, int w, int c,
                            int count, const uint8_t *const *samples, const size_t *lens,
                            const int32_t *labels, const char *const *paths) {
  char tmp[4200], final[4096];
  snprintf(final, sizeof final, "%s/" FY_PACK_SHARD_NAME, dir, shard);
  snprintf(tmp, sizeof tmp, "%s.tmp", final);
  uint64_t *off = malloc(sizeof *off * (size_t)(count ? count : 1));
  if (!off)
    return fy_error(FERRY_ENOMEM, "%s: out of memory", final);
  uint64_t pos = FY_PACK_HEADER;
  for (int i = 0; i < count; i++) {
    off[i] = pos;
    pos += align64(lens[i]);
  }
  uint64_t index_off = pos;
  size_t ilen = 0;
  uint8_t *index = build_index(count, off, samples, lens, labels, paths, &ilen);
  free(off);
  if (!index)
    return fy_error(FERRY_ENOMEM, "%s: out of memory", final);
  uint8_t hdr[FY_PACK_HEADER] = {0};
  memcpy(hdr, FY_PACK_MAGIC, 8);
  put32(hdr + 8, FY_PACK_VERSION);
  put32(hdr + 12, (uint32_t)kind);
  put32(hdr + 16, (uint32_t)h);
  put32(hdr + 20, (uint32_t)w);
  put32(hdr + 24, (uint32_t)c);
  put32(hdr + 28, (uint32_t)count);
  put64(hdr + 32, index_off);
  put64(hdr + 40, index_off + ilen);
  put64(hdr + 48, id);
  put32(hdr + 56, (uint32_t)shard);
  put32(hdr + 60, fy_crc32c(0, hdr, 60));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    free(index);
    return fy_error(FERRY_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  }
  static const uint8_t zeros[64];
  int rc = write_all(fd, hdr, sizeof hdr, tmp);
  for (int i = 0; rc == FERRY_OK && i < count; i++) {
    rc = write_all(fd, samples[i], lens[i], tmp);
    if (rc == FERRY_OK && align64(lens[i]) > lens[i])
      rc = write_all(fd, zeros, align64(lens[i]) - lens[i], tmp);
  }
  if (rc == FERRY_OK)
    rc = write_all(fd, index, ilen, tmp);
  free(index);
  if (rc == FERRY_OK && fsync(fd) != 0)
    rc = fy_error(FERRY_EIO, "%s: fsync: %s", tmp, strerror(errno));
  if (close(fd) != 0 && rc == FERRY_OK)
    rc = fy_error(FERRY_EIO, "%s: close: %s", tmp, strerror(errno));
  if (rc == FERRY_OK)
    rc = fy_pack_commit(tmp, final, dir);
  if (rc)
    unlink(tmp);
  return rc;
}

int fy_pack_write_shard(const char *dir, uint64_t id, int shard, int h, int w, int c, int count,
                        const uint8_t *data, const int32_t *labels, const char *const *paths) {
  size_t sample = (size_t)h * w * c;
  const uint8_t **samples = malloc(sizeof *samples * (size_t)(count ? count : 1));
  size_t *lens = malloc(sizeof *lens * (size_t)(count ? count : 1));
  int rc = samples && lens ? FERRY_OK : fy_error(FERRY_ENOMEM, "%s: out of memory", dir);
  for (int i = 0; rc == FERRY_OK && i < count; i++) {
    samples[i] = data + (size_t)i * sample;
    lens[i] = sample;
  }
  if (rc == FERRY_OK)
    rc = fy_pack_write_shard_var(dir, id, shard, FY_PACK_KIND_U8, h, w, c, count, samples, lens,
                                 labels, paths);
  free(samples);
  free(lens);
  return rc;
}

int fy_pack_write_small(const char *dir, const char *name, const char *text) {
  char tmp[4200], final[4200];
  snprintf(final, sizeof final, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  int ok = fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok) {
    unlink(tmp);
    return fy_error(FERRY_EIO, "%s: write failed: %s", tmp, strerror(errno));
  }
  return fy_pack_commit(tmp, final, dir);
}

int fy_pack_is_temp(const char *name) {
  if (!strcmp(name, ".PLAN.tmp") || !strcmp(name, ".MANIFEST.tmp"))
    return 1;
  if (strncmp(name, "shard-", 6) != 0)
    return 0;
  const char *p = name + 6;
  size_t digits = strspn(p, "0123456789");
  return (digits >= 5 && !strcmp(p + digits, ".fpk.tmp")) ||
         (digits >= 6 && !strcmp(p + digits, ".tar.tmp")); /* --store wds */
}

void fy_pack_remove_temps(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4200];
  while (d && (e = readdir(d)) != NULL) {
    if (fy_pack_is_temp(e->d_name)) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path); /* an interrupted write: never renamed, never read */
    }
  }
  if (d)
    closedir(d);
}

int fy_pack_write_manifest(const char *dir, const char *source, int h, int w, int nshards,
                           uint64_t id) {
  size_t cap = 160 + (size_t)nshards * 40;
  char *t = malloc(cap);
  if (!t)
    return fy_error(FERRY_ENOMEM, "out of memory");
  size_t k = (size_t)snprintf(t, cap, "ferry-pack %d\nid %016llx\nshape %d %d 3\nshards %d\n",
                              FY_PACK_MANIFEST_VERSION, (unsigned long long)id, h, w, nshards);
  uint64_t total = 0;
  int rc = FERRY_OK;
  for (int i = 0; i < nshards && rc == FERRY_OK; i++) {
    uint32_t c = 0;
    int st = fy_pack_shard_state(dir, i, id, &c);
    if (st == FY_SHARD_MISSING)
      rc = fy_error(FERRY_ECORRUPT, "%s: shard %d missing after packing", dir, i);
    else if (st == FY_SHARD_FOREIGN)
      rc = fy_pack_foreign_shard(dir, i);
    total += c;
    k += (size_t)snprintf(t + k, cap - k, FY_PACK_SHARD_NAME " %u\n", i, c);
  }
  if (rc == FERRY_OK && total == 0)
    rc = fy_error(FERRY_EEMPTY, "%s: no image of %s could be packed", dir, source);
  if (rc == FERRY_OK) {
    snprintf(t + k, cap - k, "crc32c %08x\n", fy_crc32c(0, t, k));
    rc = fy_pack_write_small(dir, "MANIFEST", t);
  }
  free(t);
  return rc;
}
