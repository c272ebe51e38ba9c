/* shard_stream.c — a stream shard's bytes: the output of `sh -c CMD` for
 * "pipe:CMD", of the curl command for an http(s) URL (webdataset's gopen
 * runs curl the same way), or a local compressed file; gzip decompressed
 * by zlib (concatenated members too). Read sequentially, once. */
#include "io/shard_stream.h"

#include "core/user_file.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

extern char **environ;

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && !strcasecmp(s + n - m, tail);
}

static int is_url(const char *name) {
  return !strncmp(name, "http://", 7) || !strncmp(name, "https://", 8);
}

/* Compressions not read here, and the command that reads them. */
static const char *const other_codecs[][2] = {{".tar.bz2", "bzip2 -dc"},
                                              {".tar.xz", "xz -dc"},
                                              {".tar.zst", "zstd -dc"},
                                              {".tar.lz4", "lz4 -dc"}};

int fy_shard_stream_is(const char *name) {
  if (!strncmp(name, "pipe:", 5) || is_url(name) || !strncmp(name, "s3://", 5))
    return 1;
  if (ends_with(name, ".tar.gz") || ends_with(name, ".tgz"))
    return 1;
  for (size_t i = 0; i < sizeof other_codecs / sizeof *other_codecs; i++)
    if (ends_with(name, other_codecs[i][0]))
      return 1;
  return 0;
}

typedef struct bytes {
  uint8_t *p;
  size_t len, cap;
} bytes;

static int grow(bytes *b, size_t need, const char *name) {
  if (b->cap - b->len >= need)
    return FERRY_OK;
  size_t cap = b->cap ? b->cap : 1 << 20;
  while (cap - b->len < need) {
    if (cap > SIZE_MAX / 2)
      return fy_error(FERRY_ENOMEM, "%s: out of memory reading the shard", name);
    cap *= 2;
  }
  uint8_t *p = realloc(b->p, cap);
  if (!p)
    return fy_error(FERRY_ENOMEM, "%s: out of memory reading the shard", name);
  b->p = p;
  b->cap = cap;
  return FERRY_OK;
}

/* Everything fd gives until its end. */
static int read_all(int fd, const char *name, bytes *b) {
  for (;;) {
    int rc = grow(b, 1 << 16, name);
    if (rc)
      return rc;
    ssize_t k = read(fd, b->p + b->len, b->cap - b->len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return fy_error(FERRY_EIO, "%s: read failed: %s", name, strerror(errno));
    if (k == 0)
      return FERRY_OK;
    b->len += (size_t)k;
  }
}

/* What curl's exit status says (the ones a shard's fetch meets). */
static const char *curl_why(int code) {
  switch (code) {
  case 6: return "the host name cannot be resolved";
  case 7: return "cannot connect to the server (connection refused or no route)";
  case 22: return "the server answered with an HTTP error (e.g. 404 Not Found)";
  case 28: return "timed out";
  case 35:
  case 60: return "TLS/SSL failure";
  case 56: return "the connection broke while receiving";
  case 127: return "the curl command is not installed (http(s) shards are fetched by curl)";
  default: return "curl failed";
  }
}

/* Runs argv with its standard output into b; its exit status checked. */
static int run_command(const char *name, char *const argv[], int url, bytes *b) {
  int fds[2];
  if (pipe(fds))
    return fy_error(FERRY_EIO, "%s: cannot open: pipe: %s", name, strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err) {
    close(fds[0]);
    if (url && err == ENOENT)
      return fy_error(FERRY_EUNSUPPORTED, "%s: cannot open: %s", name, curl_why(127));
    return fy_error(FERRY_EIO, "%s: cannot open: cannot run %s: %s", name, argv[0], strerror(err));
  }
  int rc = read_all(fds[0], name, b);
  close(fds[0]);
  if (rc)
    kill(pid, SIGTERM); /* out of memory: the command stopped, not waited on forever */
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (rc)
    return rc;
  if (WIFSIGNALED(status))
    return fy_error(FERRY_EIO, "%s: cannot open: the command was killed by signal %d", name,
                    WTERMSIG(status));
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code && url)
    return fy_error(FERRY_EIO, "%s: cannot open: %s (curl exit status %d)", name, curl_why(code),
                    code);
  if (code)
    return fy_error(FERRY_EIO, "%s: cannot open: the command exited with status %d", name, code);
  return FERRY_OK;
}

/* b's gzip stream (one or more members) decompressed into out. */
static int gunzip(const char *name, const bytes *b, bytes *out) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 16) != Z_OK)
    return fy_error(FERRY_ENOMEM, "%s: out of memory starting zlib", name);
  z.next_in = b->p;
  int rc = FERRY_OK;
  size_t left = b->len;
  int ended = 0;
  while (rc == FERRY_OK) {
    if ((rc = grow(out, b->len > (1 << 20) ? b->len : 1 << 20, name)))
      break;
    uInt in = left > (1u << 30) ? 1u << 30 : (uInt)left;
    z.avail_in = in;
    size_t room = out->cap - out->len;
    z.avail_out = room > (1u << 30) ? 1u << 30 : (uInt)room;
    uInt out_before = z.avail_out;
    z.next_out = out->p + out->len;
    int zr = inflate(&z, Z_NO_FLUSH);
    left -= in - z.avail_in;
    out->len += out_before - z.avail_out;
    if (zr == Z_STREAM_END) {
      ended = 1;
      if (!left)
        break;
      inflateReset(&z); /* the next member of a concatenated gzip */
      ended = 0;
      continue;
    }
    if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT)
      rc = fy_error(FERRY_ECORRUPT, "%s: damaged gzip stream at compressed byte %zu: %s", name,
                    b->len - left, z.msg ? z.msg : "bad data");
    else if (zr == Z_MEM_ERROR)
      rc = fy_error(FERRY_ENOMEM, "%s: out of memory decompressing", name);
    else if (zr == Z_BUF_ERROR && !left)
      break; /* no input left and not at the end: cut short */
  }
  inflateEnd(&z);
  if (rc == FERRY_OK && !ended)
    rc = fy_error(FERRY_ECORRUPT,
                  "%s: the gzip stream is cut short (truncated after %zu compressed bytes)", name,
                  b->len);
  return rc;
}

int fy_shard_stream_load(const char *name, uint8_t **data, int64_t *len) {
  *data = NULL;
  *len = 0;
  if (!strncmp(name, "s3://", 5))
    return fy_error(FERRY_EUNSUPPORTED,
                    "%s: cannot open: s3:// is not read directly; give \"pipe:aws s3 cp %s -\"",
                    name, name);
  for (size_t i = 0; i < sizeof other_codecs / sizeof *other_codecs; i++)
    if (ends_with(name, other_codecs[i][0]) && strncmp(name, "pipe:", 5))
      return fy_error(FERRY_EUNSUPPORTED,
                      "%s: %s compression is not read; give \"pipe:%s %s\" (or decompress it)",
                      name, other_codecs[i][0] + 5, other_codecs[i][1], name);
  bytes raw = {0};
  int rc;
  if (!strncmp(name, "pipe:", 5)) {
    char *argv[] = {"/bin/sh", "-c", (char *)name + 5, NULL};
    rc = run_command(name, argv, 0, &raw);
  } else if (is_url(name)) {
    char *argv[] = {"curl", "-f", "-s", "-L", "--connect-timeout", "30", (char *)name, NULL};
    rc = run_command(name, argv, 1, &raw);
  } else {
    int fd;
    rc = fy_open_regular(name, NULL, &fd);
    if (rc == FERRY_OK) {
      rc = read_all(fd, name, &raw);
      close(fd);
    }
  }
  if (rc == FERRY_OK && raw.len >= 2 && raw.p[0] == 0x1f && raw.p[1] == 0x8b) {
    bytes out = {0};
    rc = gunzip(name, &raw, &out);
    free(raw.p);
    raw = out;
  } else if (rc == FERRY_OK && strncmp(name, "pipe:", 5) &&
             (ends_with(name, ".gz") || ends_with(name, ".tgz"))) { /* a command may decompress */
    rc = fy_error(FERRY_ECORRUPT, "%s: named as gzip but not a gzip stream", name);
  }
  if (rc) {
    free(raw.p);
    return rc;
  }
  *data = raw.p;
  *len = (int64_t)raw.len;
  return FERRY_OK;
}
