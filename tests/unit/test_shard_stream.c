/* test_shard_stream: stream shards (io/shard_stream.c) — a .tar.gz (one
 * gzip member or several), `pipe:cat` of a plain and of a gzip shard give
 * the same samples, labels and bytes as the plain local shard; a gzip cut
 * short or damaged, a failing command, s3:// and compressions not read are
 * errors naming the shard; a shard past the memory bound is refused. */
#include "check.h"
#include "core/internal.h"
#include "io/shard_stream.h"
#include "io/shards.h"
#include "tar_write.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char root[64];

static const char *save(const char *name, const void *p, size_t n) {
  static char paths[8][4200];
  static int k;
  char *path = paths[k++ % 8];
  snprintf(path, 4200, "%s/%s", root, name);
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f && (!n || fwrite(p, 1, n, f) == n) && fclose(f) == 0, "%s", path);
  return path;
}

/* n bytes as a gzip stream cut into `parts` concatenated gzip members. */
static uint8_t *gz(const uint8_t *p, size_t n, int parts, size_t *out_n) {
  size_t cap = n + 1024 * (size_t)parts + 4096, at = 0;
  uint8_t *out = malloc(cap);
  for (int k = 0; k < parts; k++) {
    size_t a = n * (size_t)k / (size_t)parts, b = n * (size_t)(k + 1) / (size_t)parts;
    z_stream z;
    memset(&z, 0, sizeof z);
    CHECK(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    z.next_in = (uint8_t *)p + a;
    z.avail_in = (uInt)(b - a);
    z.next_out = out + at;
    z.avail_out = (uInt)(cap - at);
    CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
    at = cap - z.avail_out;
    deflateEnd(&z);
  }
  *out_n = at;
  return out;
}

static int open1(fy_source *s, const char *path) {
  memset(s, 0, sizeof *s);
  return fy_shards_open(s, path, (char *const *)&path, 1);
}

/* Sample i's field `f`: `text`, or absent when text is NULL. */
static void field_is(const char *what, const fy_source *s, int64_t i, const char *f,
                     const char *text) {
  fy_buf b = {0};
  size_t n = 99;
  int found = -1;
  int rc = fy_shards_field(s, i, f, &b, &n, &found);
  CHECK_MSG(rc == FERRY_OK && found == (text != NULL) &&
                (!text || (n == strlen(text) && !memcmp(b.p, text, n))),
            "%s: sample %lld field %s: rc %d found %d n %zu: %s", what, (long long)i, f, rc, found,
            n, ferry_last_error());
  fy_buf_free(&b);
}

/* s holds what `want` holds: paths after the shard's name, labels, bytes. */
static void same_samples(const char *what, fy_source *s, fy_source *want) {
  CHECK_MSG(s->count == want->count, "%s: %lld samples, want %lld", what, (long long)s->count,
            (long long)want->count);
  fy_buf a = {0}, b = {0};
  for (int64_t i = 0; i < s->count && i < want->count; i++) {
    const char *pa = strrchr(fy_source_path(s, i), ':'),
               *pb = strrchr(fy_source_path(want, i), ':');
    CHECK_MSG(pa && pb && !strcmp(pa, pb), "%s: sample %lld is %s, want %s", what, (long long)i,
              fy_source_path(s, i), fy_source_path(want, i));
    CHECK_MSG(s->labels[i] == want->labels[i], "%s: sample %lld's label", what, (long long)i);
    size_t na = 0, nb = 0;
    int ra = fy_source_read(s, i, 0, &a, &na), rb = fy_source_read(want, i, 0, &b, &nb);
    CHECK_MSG(ra == FERRY_OK && rb == FERRY_OK && na == nb && !memcmp(a.p, b.p, na),
              "%s: sample %lld's bytes (%d %d %zu %zu): %s", what, (long long)i, ra, rb, na, nb,
              ferry_last_error());
  }
  /* the limit on a member's size holds for a member in memory too */
  if (s->count) {
    size_t n = 0;
    int rc = fy_source_read(s, 0, 1, &a, &n);
    CHECK_MSG(rc == FERRY_ETOO_LARGE && strstr(ferry_last_error(), "over the 1-byte limit"),
              "%s: %d %s", what, rc, ferry_last_error());
  }
  fy_buf_free(&a);
  fy_buf_free(&b);
  /* the fields beside the images: the key's members only, the long name's too */
  field_is(what, s, 0, "cls", "3");
  field_is(what, s, 0, "json", NULL);
  field_is(what, s, 1, "json", "{\"label\": 7}");
  field_is(what, s, 1, "cls", NULL); /* c.cls is the next key's */
  field_is(what, s, 2, "x.txt", "a caption under a long name");
  field_is(what, s, 2, "TXT", "plain");
}

static void refused(const char *path, int want_rc, const char *want) {
  fy_source s;
  int rc = open1(&s, path);
  const char *e = ferry_last_error();
  CHECK_MSG(rc == want_rc && strstr(e, want) && strstr(e, path), "%s: %d \"%s\", want %d \"%s\"",
            path, rc, e, want_rc, want);
  CHECK(s.count == 0 && s.shards == NULL && s.shard_mem == NULL);
  if (rc == FERRY_OK)
    fy_source_free(&s);
}

int main(void) {
  snprintf(root, sizeof root, "/tmp/ferry-stream-XXXXXX");
  if (!mkdtemp(root)) {
    SKIP("no temporary directory");
    return check_done();
  }
  CHECK(fy_shard_stream_is("pipe:cat a.tar") && fy_shard_stream_is("http://h/a.tar") &&
        fy_shard_stream_is("https://h/a.tar") && fy_shard_stream_is("a.tar.gz") &&
        fy_shard_stream_is("a.tgz") && fy_shard_stream_is("s3://b/a.tar") &&
        !fy_shard_stream_is("a.tar") && !fy_shard_stream_is("/x/pipe:a.tar"));
  CHECK(fy_shards_spec("pipe:curl -s http://h/a | gunzip"));

  tarw t = {0};
  char big[70000];
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (char)(i * 13 + (i >> 9));
  tw_member(&t, USTAR, "a.jpg", '0', big, sizeof big);
  tw_file(&t, "a.cls", "3");
  tw_member(&t, USTAR, "b.png", '0', big + 5, 1000);
  tw_file(&t, "b.json", "{\"label\": 7}");
  tw_file(&t, "c.cls", "1"); /* no image: left out */
  tw_member(&t, USTAR, "d.webp", '0', big + 9, 0);
  tw_file(&t, "d.txt", "plain");
  tw_gnu_long(&t, "d.x.txt"); /* the name given by a GNU long-name header */
  tw_member(&t, GNU, "header-name-not-used", '0', "a caption under a long name", 27);
  tw_end(&t);
  const char *plain = save("s.tar", t.p, t.n);
  size_t n1, n3;
  uint8_t *g1 = gz(t.p, t.n, 1, &n1), *g3 = gz(t.p, t.n, 3, &n3);
  const char *gz1 = save("s.tar.gz", g1, n1), *gz3 = save("s3.tgz", g3, n3);

  fy_source want, s;
  int rc = open1(&want, plain);
  CHECK_MSG(rc == FERRY_OK && want.count == 3, "%d: %s", rc, ferry_last_error());
  char spec[4400];
  const char *streams[5] = {gz1, gz3, spec, NULL, NULL};
  snprintf(spec, sizeof spec, "pipe:cat '%s'", plain);
  char spec2[4400], spec3[4400];
  snprintf(spec2, sizeof spec2, "pipe:cat %s", gz1);
  snprintf(spec3, sizeof spec3, "pipe:gzip -dc %s", gz3);
  streams[3] = spec2;
  streams[4] = spec3;
  for (int k = 0; k < 5 && rc == FERRY_OK; k++) {
    int r = open1(&s, streams[k]);
    CHECK_MSG(r == FERRY_OK, "%s: %s", streams[k], ferry_last_error());
    if (r == FERRY_OK) {
      same_samples(streams[k], &s, &want);
      fy_source_free(&s);
    }
  }
  if (rc == FERRY_OK)
    fy_source_free(&want);

  /* a gzip cut short, damaged, not gzip at all; an empty stream */
  refused(save("cut.tar.gz", g1, n1 / 2), FERRY_ECORRUPT, ": the gzip stream is cut short");
  uint8_t *bad = malloc(n1);
  memcpy(bad, g1, n1);
  memset(bad + 20, 0xff, 40);
  refused(save("bad.tar.gz", bad, n1), FERRY_ECORRUPT, ": damaged gzip stream");
  refused(save("plain.tar.gz", t.p, t.n), FERRY_ECORRUPT, ": named as gzip but not a gzip stream");
  refused("pipe:true", FERRY_ECORRUPT, "pipe:true: not a tar file, or cut short at byte 0");
  refused("pipe:cat /nonexistent/x.tar", FERRY_EIO,
          ": cannot open: the command exited with status 1");
  refused("pipe:kill -9 $$", FERRY_EIO, ": cannot open: the command was killed by signal 9");
  refused("s3://bucket/a.tar", FERRY_EUNSUPPORTED, "give \"pipe:aws s3 cp s3://bucket/a.tar -\"");
  refused("/x/a.tar.zst", FERRY_EUNSUPPORTED, "give \"pipe:zstd -dc /x/a.tar.zst\"");
  refused("/x/missing.tar.gz", FERRY_EIO, "/x/missing.tar.gz: cannot open");
  /* a command that sends nothing: stopped after the stall time-out */
  {
    fy_source st = {.stream_stall_ms = 200};
    const char *sleepy = "pipe:sleep 20";
    int r = fy_shards_open(&st, sleepy, (char *const *)&sleepy, 1);
    CHECK_MSG(r == FERRY_ETIMEOUT && strstr(ferry_last_error(), "pipe:sleep 20: cannot open: "
                                                                "nothing received for 200 ms"),
              "%d: %s", r, ferry_last_error());
  }
  /* the memory bound: a shard that passes what is left of it is refused, named, with
   * the bound said (for a loader: half the machine's memory, all stream shards) */
  {
    uint8_t *data = NULL;
    int64_t len = 0;
    int r = fy_shard_stream_load(spec, 0, 4096, 1 << 30, &data, &len);
    CHECK_MSG(r == FERRY_ETOO_LARGE && !data && strstr(ferry_last_error(), spec) &&
                  strstr(ferry_last_error(), "pass 1.0 GiB"),
              "%d: %s", r, ferry_last_error());
    r = fy_shard_stream_load(gz1, 0, (int64_t)t.n - 1, 1 << 30, &data, &len);
    CHECK_MSG(r == FERRY_ETOO_LARGE && !data && strstr(ferry_last_error(), gz1), "%d: %s", r,
              ferry_last_error());
    r = fy_shard_stream_load(gz1, 0, (int64_t)t.n, 1 << 30, &data, &len);
    CHECK_MSG(r == FERRY_OK && len == (int64_t)t.n && !memcmp(data, t.p, t.n), "%d: %s", r,
              ferry_last_error());
    free(data);
    CHECK(fy_shard_stream_budget() > 0);
  }
  free(bad);
  free(g1);
  free(g3);
  free(t.p);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
  return check_done();
}
