/* shard_stream.c — a stream shard's bytes: the output of `sh -c CMD` for
 * "pipe:CMD", of the curl command for an http(s) URL (webdataset's gopen
 * runs curl the same way), or a local compressed file; gzip decompressed
 * by zlib (concatenated members too). Read sequentially, once. */
#include "io/shard_stream.h"

#include "core/user_file.h"

#include <errno.h>
#include <poll.h>
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
  size_t max;       /* the most this shard may hold: what the bound leaves */
  size_t max_total; /* the bound, said in the error */
} bytes;

static int too_large(const bytes *b, const char *name) {
  return fy_error(FERRY_ETOO_LARGE,
                  "%s: streamed shards are held in memory, and at this shard they pass %.1f GiB "
                  "(half of this machine's memory, all streamed shards together): copy the "
                  "shards to a local disk (plain .tar shards are read by position, not held) "
                  "or give fewer shards to one loader",
                  name, (double)b->max_total / (1 << 30));
}

static int grow(bytes *b, size_t need, const char *name) {
  if (b->cap - b->len >= need)
    return FERRY_OK;
  if (need > b->max - b->len) /* len <= max always */
    return too_large(b, name);
  size_t cap = b->cap ? b->cap : 1 << 20;
  while (cap - b->len < need) {
    if (cap > SIZE_MAX / 2)
      return fy_error(FERRY_ENOMEM, "%s: out of memory reading the shard", name);
    cap *= 2;
  }
  if (cap > b->max)
    cap = b->max;
  uint8_t *p = realloc(b->p, cap);
  if (!p)
    return fy_error(FERRY_ENOMEM, "%s: out of memory reading the shard", name);
  b->p = p;
  b->cap = cap;
  return FERRY_OK;
}

/* Where a stream's bytes go as they arrive: kept as they are, or inflated
 * when they start with gzip's magic bytes (sniffed from the first two). */
typedef struct sink {
  const char *name;
  bytes out;
  uint8_t head[2];
  size_t nhead;
  int mode;  /* 0: not known yet, 1: plain, 2: gzip */
  int ended; /* gzip: the last member's end seen, nothing after it yet */
  size_t fed;
  int wait_ms; /* a pipe's longest wait for data, -1 for ever; 0: a file, not polled */
  int stalled; /* that wait ran out */
  z_stream z;
} sink;

static int inflate_some(sink *k, const uint8_t *p, size_t n) {
  k->z.next_in = (uint8_t *)p;
  while (n) {
    uInt in = n > (1u << 30) ? 1u << 30 : (uInt)n;
    k->z.avail_in = in;
    /* room ahead, up to the bound; at the bound, inflate may still end the
     * stream (its trailer) without output */
    size_t want = k->out.max - k->out.len < (1u << 20) ? k->out.max - k->out.len : 1u << 20;
    int rc = want       ? grow(&k->out, want, k->name)
             : k->out.p ? FERRY_OK
                        : too_large(&k->out, k->name);
    if (rc)
      return rc;
    size_t room = k->out.cap - k->out.len;
    uInt avail = room > (1u << 30) ? 1u << 30 : (uInt)room;
    k->z.avail_out = avail;
    k->z.next_out = k->out.p + k->out.len;
    if (k->ended) { /* more after a member's end: the next member of a concatenated gzip */
      inflateReset(&k->z);
      k->ended = 0;
    }
    int zr = inflate(&k->z, Z_NO_FLUSH);
    if (!want && k->z.avail_in == in && zr != Z_STREAM_END)
      return too_large(&k->out, k->name); /* output, and no room left for it */
    n -= in - k->z.avail_in;
    k->fed += in - k->z.avail_in;
    k->out.len += avail - k->z.avail_out;
    if (zr == Z_STREAM_END)
      k->ended = 1;
    else if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT)
      return fy_error(FERRY_ECORRUPT, "%s: damaged gzip stream at compressed byte %zu: %s", k->name,
                      k->fed, k->z.msg ? k->z.msg : "bad data");
    else if (zr == Z_MEM_ERROR)
      return fy_error(FERRY_ENOMEM, "%s: out of memory decompressing", k->name);
  }
  return FERRY_OK;
}

static int sink_put(sink *k, const uint8_t *p, size_t n) {
  if (k->mode == 0) {
    while (n && k->nhead < 2) {
      k->head[k->nhead++] = *p++;
      n--;
    }
    if (k->nhead < 2)
      return FERRY_OK;
    k->mode = k->head[0] == 0x1f && k->head[1] == 0x8b ? 2 : 1;
    if (k->mode == 2 && inflateInit2(&k->z, 15 + 16) != Z_OK) {
      k->mode = 3; /* nothing to end */
      return fy_error(FERRY_ENOMEM, "%s: out of memory starting zlib", k->name);
    }
    int rc = sink_put(k, k->head, 2);
    return rc ? rc : sink_put(k, p, n);
  }
  if (k->mode == 2)
    return inflate_some(k, p, n);
  int rc = grow(&k->out, n, k->name);
  if (rc == FERRY_OK && n) {
    memcpy(k->out.p + k->out.len, p, n);
    k->out.len += n;
  }
  return rc;
}

/* The stream ended: a short one kept as it is, a gzip one checked. */
static int sink_end(sink *k) {
  int rc = FERRY_OK;
  if (k->mode == 0 && k->nhead) {
    k->mode = 1;
    rc = sink_put(k, k->head, k->nhead);
  }
  if (k->mode == 2 && !k->ended)
    rc = fy_error(FERRY_ECORRUPT,
                  "%s: the gzip stream is cut short (truncated after %zu compressed bytes)",
                  k->name, k->fed);
  return rc;
}

static void sink_free(sink *k) {
  if (k->mode == 2)
    inflateEnd(&k->z);
  free(k->out.p);
}

/* Everything fd gives until its end, into the sink. */
static int read_all(int fd, sink *k) {
  static const size_t chunk = 1 << 20;
  uint8_t *buf = malloc(chunk);
  if (!buf)
    return fy_error(FERRY_ENOMEM, "%s: out of memory reading the shard", k->name);
  int rc = FERRY_OK;
  for (;;) {
    if (k->wait_ms) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      int r = poll(&p, 1, k->wait_ms);
      if (r < 0 && errno == EINTR)
        continue;
      if (r == 0) {
        k->stalled = 1;
        rc = fy_error(FERRY_ETIMEOUT,
                      "%s: cannot open: nothing received for %d ms, stopped (stall_timeout_ms; "
                      "ferry load --stall-timeout, Python stall_timeout=)",
                      k->name, k->wait_ms);
        break;
      }
    }
    ssize_t n = read(fd, buf, chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      rc = fy_error(FERRY_EIO, "%s: read failed: %s", k->name, strerror(errno));
    if (n <= 0 || (rc = sink_put(k, buf, (size_t)n)))
      break;
  }
  free(buf);
  return rc;
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
static int run_command(const char *name, char *const argv[], int url, sink *b) {
  int fds[2];
  if (pipe(fds))
    return fy_error(FERRY_EIO, "%s: cannot open: pipe: %s", name, strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  /* its own process group: a stall stops the whole pipeline it runs
   * ("curl ... | gunzip"), not only the shell */
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(fds[1]);
  if (err) {
    close(fds[0]);
    if (url && err == ENOENT)
      return fy_error(FERRY_EUNSUPPORTED, "%s: cannot open: %s", name, curl_why(127));
    return fy_error(FERRY_EIO, "%s: cannot open: cannot run %s: %s", name, argv[0], strerror(err));
  }
  int rc = read_all(fds[0], b);
  close(fds[0]);
  if (rc)
    kill(-pid, SIGKILL); /* stalled or out of memory: the command stopped, not waited on */
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

int64_t fy_shard_stream_budget(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return INT64_MAX / 2;
  return (int64_t)pages / 2 * page;
}

int fy_shard_stream_load(const char *name, int stall_ms, int64_t budget, int64_t total,
                         uint8_t **data, int64_t *len) {
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
  sink k = {.name = name, .wait_ms = stall_ms == 0 ? 60000 : stall_ms < 0 ? -1 : stall_ms};
  k.out.max = budget > 0 ? (size_t)budget : 0;
  k.out.max_total = (size_t)total;
  int rc;
  if (!strncmp(name, "pipe:", 5)) {
    char *argv[] = {"/bin/sh", "-c", (char *)name + 5, NULL};
    rc = run_command(name, argv, 0, &k);
  } else if (is_url(name)) {
    char *argv[] = {"curl", "-f", "-s", "-L", "--connect-timeout", "30", (char *)name, NULL};
    rc = run_command(name, argv, 1, &k);
  } else {
    int fd;
    struct stat st;
    k.wait_ms = 0; /* a regular file: read, not polled */
    rc = fy_open_regular(name, &st, &fd);
    if (rc == FERRY_OK) {
      /* room for what it holds: gzip's trailer gives the size (mod 2^32) */
      uint8_t isize[4];
      size_t want = (size_t)st.st_size;
      if (st.st_size >= 18 && pread(fd, isize, 4, st.st_size - 4) == 4) {
        size_t z = (size_t)isize[0] | (size_t)isize[1] << 8 | (size_t)isize[2] << 16 |
                   (size_t)isize[3] << 24;
        if (z > want && z / 16 < want) /* a trailer's claim, believed within 16x */
          want = z;
      }
      if (grow(&k.out, want + 1024, name)) /* only room ahead: without it, grown as read */
        fy_error_clear();
      rc = read_all(fd, &k);
      close(fd);
    }
  }
  if (rc == FERRY_OK)
    rc = sink_end(&k);
  if (rc == FERRY_OK && k.mode != 2 && strncmp(name, "pipe:", 5) &&
      (ends_with(name, ".gz") || ends_with(name, ".tgz"))) /* a command may decompress */
    rc = fy_error(FERRY_ECORRUPT, "%s: named as gzip but not a gzip stream", name);
  if (rc) {
    sink_free(&k);
    return rc;
  }
  if (k.mode == 2)
    inflateEnd(&k.z);
  *data = k.out.p;
  *len = (int64_t)k.out.len;
  return FERRY_OK;
}
