/* journal.c — INDEX.journal: a run's results as they come, so that a run
 * that is killed loses nothing it had finished.
 *
 *   "FERRYJNL", u32 version, 16 bytes of hash options, u32 CRC of those 28
 *   then records: u32 length, the record (record.c), u32 CRC of both.
 *
 * Readers stop at the first record that is short or fails its CRC (the
 * torn end of a killed run). */
#include "catalog/catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[8] = {'F', 'E', 'R', 'R', 'Y', 'J', 'N', 'L'};
#define HEAD 32

static char *journal_path(const char *index_path) {
  size_t n = strlen(index_path) + 9;
  char *p = malloc(n);
  if (p)
    snprintf(p, n, "%s.journal", index_path);
  return p;
}

static void header(const ferry_hash_options *o, uint8_t h[HEAD]) {
  memcpy(h, magic, 8);
  h[8] = 1, h[9] = h[10] = h[11] = 0;
  fy_options_encode(o, h + 12);
  uint32_t crc = fy_crc32(0, h, 28);
  for (int i = 0; i < 4; i++)
    h[28 + i] = (uint8_t)(crc >> (8 * i));
}

int fy_journal_load(const char *index_path, const ferry_hash_options *o, ferry_catalog **out) {
  *out = NULL;
  char *path = journal_path(index_path);
  if (!path)
    return fy_error(FERRY_ENOMEM, "out of memory");
  fy_buf buf = {0};
  size_t n;
  struct stat st;
  int rc = stat(path, &st) == 0 ? fy_read_file(path, 0, &buf, &n) : FERRY_EIO;
  free(path);
  if (rc) { /* no journal: nothing to resume */
    fy_buf_free(&buf);
    fy_error_clear();
    return FERRY_OK;
  }
  const uint8_t *d = buf.p;
  uint8_t want[HEAD];
  header(o, want);
  if (n < HEAD || memcmp(d, want, HEAD)) { /* another ferry's, or other options */
    fy_buf_free(&buf);
    return FERRY_OK;
  }
  ferry_catalog *c = fy_catalog_new(o);
  if (!c) {
    fy_buf_free(&buf);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  size_t at = HEAD;
  while (at + 8 <= n) {
    size_t len =
        (size_t)d[at] | (size_t)d[at + 1] << 8 | (size_t)d[at + 2] << 16 | (size_t)d[at + 3] << 24;
    if (len > n - at - 8)
      break;
    uint32_t crc = (uint32_t)d[at + 4 + len] | (uint32_t)d[at + 5 + len] << 8 |
                   (uint32_t)d[at + 6 + len] << 16 | (uint32_t)d[at + 7 + len] << 24;
    if (fy_crc32(0, d + at, 4 + len) != crc)
      break;
    ferry_catalog_entry e;
    ferry_signature sig;
    size_t pl, el;
    if (fy_record_decode(d + at + 4, len, &e, &sig, &pl, &el) != FERRY_OK)
      break;
    char *p = strndup(e.path, pl), *m = strndup(e.error, el);
    e.path = p;
    e.error = m;
    rc = p && m ? fy_catalog_add(c, &e) : FERRY_ENOMEM;
    free(p);
    free(m);
    if (rc) {
      ferry_catalog_free(c);
      fy_buf_free(&buf);
      return fy_error(rc, "out of memory reading the journal");
    }
    at += 8 + len;
  }
  fy_buf_free(&buf);
  *out = c;
  return FERRY_OK;
}

int fy_journal_open_fd(const char *path) {
  /* ferry's own file: never a link followed to a user's file, which the
   * journal's repair would truncate */
  return open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
}

int fy_journal_open_error(const char *path, const char *what) {
  if (errno == ELOOP)
    return fy_error(FERRY_EINVAL,
                    "%s: a symbolic link in place of %s (ferry's own file, never written through "
                    "a link: remove it)",
                    path, what);
  return fy_error(FERRY_EIO, "%s: cannot open %s: %s", path, what, strerror(errno));
}

int fy_journal_open(fy_journal *j, const char *index_path, const ferry_hash_options *o, int keep) {
  memset(j, 0, sizeof *j);
  j->fd = -1;
  j->path = journal_path(index_path);
  if (!j->path)
    return fy_error(FERRY_ENOMEM, "out of memory");
  uint8_t h[HEAD], have[HEAD];
  header(o, h);
  /* Lock before looking inside: another ferry updating the same index
   * must not see its journal truncated under it. */
  int fd = fy_journal_open_fd(j->path);
  if (fd < 0) {
    int rc = fy_journal_open_error(j->path, "the journal");
    free(j->path);
    j->path = NULL;
    return rc;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int rc = fy_error(FERRY_ESTATE, "%s: another ferry is updating this catalog", index_path);
    close(fd);
    free(j->path);
    j->path = NULL;
    return rc;
  }
  if (!keep || pread(fd, have, HEAD, 0) != HEAD || memcmp(have, h, HEAD)) {
    if (ftruncate(fd, 0) != 0 || pwrite(fd, h, HEAD, 0) != HEAD) {
      int rc = fy_error(FERRY_EIO, "%s: cannot write the journal: %s", j->path, strerror(errno));
      close(fd);
      free(j->path);
      j->path = NULL;
      return rc;
    }
    fsync(fd);
    fy_sync_dir(j->path);
  }
  /* Append after the last whole record: a torn tail is cut off so that new
   * records are readable after it. */
  off_t end = lseek(fd, 0, SEEK_END), at = HEAD;
  uint8_t lenb[4];
  while (at + 8 <= end && pread(fd, lenb, 4, at) == 4) {
    off_t len = (off_t)lenb[0] | (off_t)lenb[1] << 8 | (off_t)lenb[2] << 16 | (off_t)lenb[3] << 24;
    if (len > end - at - 8)
      break;
    uint8_t *rec = malloc((size_t)len + 8);
    int ok = rec && pread(fd, rec, (size_t)len + 8, at) == len + 8;
    uint32_t crc = ok ? (uint32_t)rec[4 + len] | (uint32_t)rec[5 + len] << 8 |
                            (uint32_t)rec[6 + len] << 16 | (uint32_t)rec[7 + len] << 24
                      : 0;
    ok = ok && fy_crc32(0, rec, (size_t)len + 4) == crc;
    free(rec);
    if (!ok)
      break;
    at += len + 8;
  }
  if (at < end && ftruncate(fd, at) != 0) {
    close(fd);
    return fy_error(FERRY_EIO, "%s: cannot repair the journal", j->path);
  }
  lseek(fd, at, SEEK_SET);
  j->fd = fd;
  j->f = fdopen(fd, "ab");
  if (!j->f) {
    close(fd);
    return fy_error(FERRY_EIO, "%s: cannot append to the journal", j->path);
  }
  j->last_sync = fy_now();
  return FERRY_OK;
}

int fy_journal_append(fy_journal *j, const ferry_catalog_entry *e) {
  size_t len = fy_record_size(e);
  uint8_t stack[1024], *rec = len + 8 <= sizeof stack ? stack : malloc(len + 8);
  if (!rec)
    return fy_error(FERRY_ENOMEM, "out of memory");
  for (int i = 0; i < 4; i++)
    rec[i] = (uint8_t)(len >> (8 * i));
  fy_record_encode(e, rec + 4);
  uint32_t crc = fy_crc32(0, rec, len + 4);
  for (int i = 0; i < 4; i++)
    rec[4 + len + i] = (uint8_t)(crc >> (8 * i));
  size_t w, ok;
  if (fy_fail_bytes_due(FY_FAULT_WRITE, len + 8, &ok)) {
    /* injected (tests): the disk fills up inside this record */
    w = fwrite(rec, 1, ok, j->f);
    errno = ENOSPC;
  } else {
    w = fwrite(rec, 1, len + 8, j->f);
  }
  if (rec != stack)
    free(rec);
  return w == len + 8
             ? FERRY_OK
             : fy_error(FERRY_EIO, "%s: cannot write the journal: %s", j->path, strerror(errno));
}

int fy_journal_sync(fy_journal *j) {
  j->last_sync = fy_now();
  if (fflush(j->f) != 0 || fdatasync(j->fd) != 0)
    return fy_error(FERRY_EIO, "%s: cannot sync the journal: %s", j->path, strerror(errno));
  return FERRY_OK;
}

void fy_journal_close(fy_journal *j) {
  if (j->f)
    fclose(j->f);
  free(j->path);
  memset(j, 0, sizeof *j);
  j->fd = -1;
}

void fy_journal_remove(const char *index_path) {
  char *path = journal_path(index_path);
  if (path && unlink(path) == 0)
    fy_sync_dir(path);
  free(path);
}
