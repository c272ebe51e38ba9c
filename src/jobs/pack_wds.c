/* pack_wds.c — `ferry pack --store wds`: any source as WebDataset shards,
 * OUT/shard-NNNNNN.tar, each sample as KEY.EXT (the file's bytes, not
 * decoded; EXT the format those bytes have, whatever the file's name) and
 * KEY.cls (its label, when it has one), KEY the sample's index in the source
 * (nine digits). POSIX ustar members; a shard is written under its exact
 * temporary name (shard-NNNNNN.tar.tmp, removed by the next run), synced and
 * renamed, so a reader never sees half of one. The folder, PLAN and lock are
 * the u8 pack's (pack_build.c); a run resumes: a shard already there, a
 * complete tar of this pack's keys, is kept. */
#include "codec/codec.h"
#include "core/user_file.h"
#include "io/shards.h"
#include "io/source.h"
#include "jobs/jobs.h"
#include "pack/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* A ustar header for a regular member `name` of `size` bytes (mode 0644,
 * owner 0, time 0: the same source gives the same shards). */
static void ustar_header(uint8_t h[512], const char *name, uint64_t size) {
  memset(h, 0, 512);
  snprintf((char *)h, 100, "%s", name);
  memcpy(h + 100, "0000644", 8);
  memcpy(h + 108, "0000000", 8);
  memcpy(h + 116, "0000000", 8);
  snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
  memcpy(h + 136, "00000000000", 12);
  h[156] = '0';
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++)
    sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum & 0777777);
  h[155] = ' ';
}

typedef struct wout {
  FILE *f;
  const char *path;
  int err;
} wout;

static void put(wout *w, const void *p, size_t n) {
  if (!w->err && n && fwrite(p, 1, n, w->f) != n)
    w->err = errno ? errno : EIO;
}

static void member(wout *w, const char *name, const void *data, size_t n) {
  uint8_t h[512];
  static const uint8_t zeros[512];
  ustar_header(h, name, n);
  put(w, h, 512);
  put(w, data, n);
  put(w, zeros, (512 - n % 512) % 512);
}

/* A camera raw's extension: the file's own when it names a raw format
 * (the kinds share magic numbers with TIFF), else what its bytes tell. */
static const char *raw_ext(const char *path, const uint8_t *d, size_t n) {
  static const char *const raws[] = {"dng", "cr2", "cr3", "nef", "arw", "orf", "rw2", "raf", "pef"};
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  for (size_t i = 0; dot && (!slash || dot > slash) && i < sizeof raws / sizeof *raws; i++)
    if (!strcasecmp(dot + 1, raws[i]))
      return raws[i];
  if (n >= 15 && !memcmp(d, "FUJIFILMCCD-RAW", 15))
    return "raf";
  if (n >= 12 && !memcmp(d + 4, "ftypcrx ", 8))
    return "cr3";
  if (n >= 10 && d[8] == 'C' && d[9] == 'R')
    return "cr2";
  if (!memcmp(d, "IIRO", 4) || !memcmp(d, "IIRS", 4) || !memcmp(d, "MMOR", 4))
    return "orf";
  if (!memcmp(d, "IIU", 4))
    return "rw2";
  return "dng"; /* TIFF-shaped (DNG, NEF, ARW, PEF): ferry reads each by its bytes */
}

/* The member's extension: the format of the file's bytes (the sniffer's),
 * so that every WebDataset reader decodes it by its name; NULL when the
 * bytes are no image ferry reads. */
static const char *member_ext(const char *path, const uint8_t *d, size_t n) {
  switch (fy_sniff(d, n)) {
  case FERRY_FORMAT_JPEG: return "jpg";
  case FERRY_FORMAT_PNG: return "png";
  case FERRY_FORMAT_WEBP: return "webp";
  case FERRY_FORMAT_GIF: return "gif";
  case FERRY_FORMAT_BMP: return "bmp";
  case FERRY_FORMAT_TIFF: return "tif";
  case FERRY_FORMAT_HEIF: return !memcmp(d + 8, "avi", 3) ? "avif" : "heic";
  case FERRY_FORMAT_RAW: return raw_ext(path, d, n);
  default: return NULL;
  }
}

/* A bad file: left out (named) or, under on_error fail, the end of the run. */
static int bad_file(const ferry_pack_options *o, const char *name, int st, int64_t *skipped) {
  if (o->on_error == FERRY_ON_ERROR_FAIL)
    return st;
  (*skipped)++;
  if (o->on_skip)
    o->on_skip(o->on_skip_user, name, st, ferry_last_error());
  else
    fy_log(FERRY_LOG_WARNING, "skipped %s", ferry_last_error());
  return FERRY_OK;
}

static int write_shard(const ferry_pack_options *o, const fy_source *src, int k, fy_buf *buf,
                       int64_t *skipped) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/" FY_WDS_SHARD_NAME, o->output, k);
  snprintf(tmp, sizeof tmp, "%s.tmp", path); /* fy_pack_is_temp's exact name */
  wout w = {fopen(tmp, "wb"), tmp, 0};
  if (!w.f)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  int rc = FERRY_OK;
  int64_t a = (int64_t)k * o->shard_size, b = a + o->shard_size;
  for (int64_t i = a; i < b && i < src->count && rc == FERRY_OK && !w.err; i++) {
    size_t n = 0;
    const char *name = fy_source_path(src, i);
    int st = fy_source_read(src, i, 1ull << 30, buf, &n);
    const char *ext = st ? NULL : member_ext(name, buf->p, n);
    if (!st && !ext)
      st = fy_error(FERRY_EUNSUPPORTED,
                    "%s: not an image ferry reads (no format it knows in "
                    "its first bytes)",
                    name);
    if (st) {
      rc = bad_file(o, name, st, skipped);
      continue;
    }
    char mname[64], label[16];
    snprintf(mname, sizeof mname, "%09lld.%s", (long long)i, ext);
    member(&w, mname, buf->p, n);
    if (src->labels[i] >= 0) {
      int ln = snprintf(label, sizeof label, "%d", (int)src->labels[i]);
      snprintf(mname, sizeof mname, "%09lld.cls", (long long)i);
      member(&w, mname, label, (size_t)ln);
    }
  }
  static const uint8_t end[1024];
  put(&w, end, sizeof end);
  if (!w.err && (fflush(w.f) != 0 || fsync(fileno(w.f)) != 0))
    w.err = errno ? errno : EIO;
  if (fclose(w.f) != 0 && !w.err)
    w.err = errno ? errno : EIO;
  if (rc == FERRY_OK && w.err)
    rc = fy_error(FERRY_EIO, "%s: write failed: %s", tmp, strerror(w.err));
  if (rc == FERRY_OK)
    rc = fy_pack_commit(tmp, path, o->output);
  if (rc)
    unlink(tmp);
  return rc;
}

/* Whether shard k is there and complete (*done): a tar whose members all
 * belong to shard k's samples (keys a..b-1, as write_shard names them), up
 * to its end blocks. An error names a file of that name that is not this
 * pack's shard (never overwritten). */
static int shard_state(const ferry_pack_options *o, int k, char *done) {
  char path[4096];
  snprintf(path, sizeof path, "%s/" FY_WDS_SHARD_NAME, o->output, k);
  struct stat st;
  *done = 0;
  if (lstat(path, &st) != 0 && errno == ENOENT)
    return FERRY_OK;
  int fd;
  int rc = fy_open_regular(path, &st, &fd);
  if (rc)
    return rc;
  int64_t a = (int64_t)k * o->shard_size, b = a + o->shard_size, at = 0;
  int ok = 0;
  uint8_t block[512];
  fy_tar_header h;
  while (at + 512 <= (int64_t)st.st_size && pread(fd, block, 512, at) == 512) {
    int kind = fy_tar_parse_header(block, &h);
    if (kind != 0) {
      ok = kind == 1;
      break;
    }
    char *end;
    long long key = strtoll(h.name, &end, 10);
    if (h.type != '0' || end != h.name + 9 || *end != '.' || key < a || key >= b ||
        h.size > (uint64_t)st.st_size - (uint64_t)at - 512)
      break;
    at += 512 + (int64_t)((h.size + 511) / 512 * 512);
  }
  close(fd);
  if (!ok)
    return fy_error(FERRY_EINVAL,
                    "%s: not a complete shard of this pack (its members are not this shard's "
                    "samples, or it is cut short): remove it or choose another directory",
                    path);
  *done = 1;
  return FERRY_OK;
}

int fy_pack_build_wds(const ferry_pack_options *o, const fy_source *src) {
  int nshards = (int)((src->count + o->shard_size - 1) / o->shard_size);
  char *done = calloc((size_t)(nshards ? nshards : 1), 1);
  if (!done)
    return fy_error(FERRY_ENOMEM, "out of memory");
  int64_t samples = 0;
  int rc = FERRY_OK;
  for (int k = 0; k < nshards && rc == FERRY_OK; k++) {
    rc = shard_state(o, k, &done[k]);
    samples += done[k] ? o->shard_size : 0;
  }
  if (rc == FERRY_OK && o->progress) /* the work known: what is there already, the total */
    o->progress(o->progress_user, samples < src->count ? samples : src->count, src->count);
  fy_buf buf = {0};
  int64_t skipped = 0;
  for (int k = 0; k < nshards && rc == FERRY_OK; k++) {
    if (done[k])
      continue;
    rc = write_shard(o, src, k, &buf, &skipped);
    samples += o->shard_size;
    if (rc == FERRY_OK && o->progress)
      o->progress(o->progress_user, samples < src->count ? samples : src->count, src->count);
  }
  fy_buf_free(&buf);
  free(done);
  if (rc == FERRY_OK && skipped == src->count)
    rc = fy_error(FERRY_EEMPTY, "%s: no file of the source could be read", o->source);
  return rc;
}
