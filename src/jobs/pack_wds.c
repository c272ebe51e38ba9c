/* pack_wds.c — `ferry pack --store wds`: any source as WebDataset shards,
 * OUT/shard-NNNNNN.tar, each sample as KEY.EXT (the file's bytes, not
 * decoded) and KEY.cls (its label, when it has one), KEY the sample's index
 * in the source (nine digits). POSIX ustar members; a shard is written under
 * a temporary name, synced and renamed, so a reader never sees half of one. */
#include "io/source.h"
#include "jobs/jobs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The extension a member keeps: the file's, in lower case ("jpg" when it
 * has none a WebDataset reader would take for an image). */
static void member_ext(const char *path, char *ext, size_t cap) {
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  if (!dot || (slash && dot < slash) || !dot[1] || strlen(dot + 1) >= cap) {
    snprintf(ext, cap, "jpg");
    return;
  }
  size_t i = 0;
  for (const char *p = dot + 1; *p && i + 1 < cap; p++)
    ext[i++] = (char)tolower((unsigned char)*p);
  ext[i] = '\0';
}

static int write_shard(const ferry_pack_options *o, const fy_source *src, int k, fy_buf *buf,
                       int64_t *skipped) {
  char path[4096], tmp[4200];
  if ((size_t)snprintf(path, sizeof path, "%s/shard-%06d.tar", o->output, k) >= sizeof path)
    return fy_error(FERRY_EINVAL, "%s: the output path is too long", o->output);
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  wout w = {fopen(tmp, "wb"), tmp, 0};
  if (!w.f)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  int rc = FERRY_OK;
  int64_t a = (int64_t)k * o->shard_size, b = a + o->shard_size;
  for (int64_t i = a; i < b && i < src->count && rc == FERRY_OK && !w.err; i++) {
    size_t n = 0;
    const char *name = fy_source_path(src, i);
    int st = fy_source_read(src, i, 1ull << 30, buf, &n);
    if (st) {
      if (o->on_error == FERRY_ON_ERROR_FAIL) {
        rc = st;
        break;
      }
      (*skipped)++;
      if (o->on_skip)
        o->on_skip(o->on_skip_user, name, st, ferry_last_error());
      else
        fy_log(FERRY_LOG_WARNING, "skipped %s", ferry_last_error());
      continue;
    }
    char ext[16], mname[64], label[16];
    member_ext(name, ext, sizeof ext);
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
  if (rc == FERRY_OK && rename(tmp, path) != 0)
    rc = fy_error(FERRY_EIO, "%s: cannot rename into place: %s", path, strerror(errno));
  if (rc)
    unlink(tmp);
  return rc;
}

int fy_pack_build_wds(const ferry_pack_options *o, const fy_source *src) {
  int nshards = (int)((src->count + o->shard_size - 1) / o->shard_size);
  fy_buf buf = {0};
  int64_t skipped = 0;
  int rc = FERRY_OK;
  for (int k = 0; k < nshards && rc == FERRY_OK; k++) {
    rc = write_shard(o, src, k, &buf, &skipped);
    if (rc == FERRY_OK && o->progress) {
      int64_t done = (int64_t)(k + 1) * o->shard_size;
      o->progress(o->progress_user, done < src->count ? done : src->count, src->count);
    }
  }
  fy_buf_free(&buf);
  if (rc == FERRY_OK && skipped == src->count)
    rc = fy_error(FERRY_EEMPTY, "%s: no file of the source could be read", o->source);
  return rc;
}
