/* test_shards.c — WebDataset shards (src/io/shards.c): brace patterns, tar
 * headers built by hand (checksums, octal and base-256 sizes, ustar
 * prefixes, GNU magic, the end block), and shards written by the tests' tar
 * writer (tar_write.h) into a temporary folder: regular members, pax and
 * GNU long names, directories, damaged and cut shards, samples without
 * images and label members of every kind, each sample's bytes read back. */
#include "check.h"
#include "core/internal.h"
#include "io/shards.h"
#include "tar_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char logged[16384];

static void keep_log(void *user, ferry_log_level level, const char *message) {
  (void)user;
  size_t n = strlen(logged);
  snprintf(logged + n, sizeof logged - n, "%d %s\n", (int)level, message);
}

/* ------------------------------------------------------------ braces */

/* Expands `spec` and compares with the names in `want` (NULL-ended). */
static void expands_to(const char *spec, const char *const *want) {
  char **v = NULL;
  size_t n = 99;
  int rc = fy_shards_expand(spec, &v, &n);
  CHECK_MSG(rc == FERRY_OK, "%s: %s", spec, ferry_last_error());
  size_t k = 0;
  while (want[k])
    k++;
  CHECK_MSG(n == k, "%s: %zu names, want %zu", spec, n, k);
  for (size_t i = 0; rc == FERRY_OK && i < n && i < k; i++)
    CHECK_MSG(!strcmp(v[i], want[i]), "%s: name %zu is \"%s\", want \"%s\"", spec, i, v[i],
              want[i]);
  if (rc == FERRY_OK)
    CHECK_MSG(v[n] == NULL, "%s: the array is not NULL-terminated", spec);
  fy_shards_free_names(v, n);
}

static void refused(const char *spec, int want_rc, const char *want_msg) {
  char **v = (char **)&v; /* not NULL: the call must set it */
  size_t n = 99;
  int rc = fy_shards_expand(spec, &v, &n);
  CHECK_MSG(rc == want_rc, "%s: rc %d, want %d", spec, rc, want_rc);
  const char *e = ferry_last_error();
  CHECK_MSG(strstr(e, spec) && strstr(e, want_msg), "%s: message \"%s\", want \"%s\"", spec, e,
            want_msg);
  CHECK_MSG(v == NULL && n == 0, "%s: an error left %zu names", spec, n);
  if (rc == FERRY_OK)
    fy_shards_free_names(v, n);
}

static void test_expand(void) {
  expands_to("plain.tar", (const char *const[]){"plain.tar", NULL});
  expands_to("a{1..3}b.tar", (const char *const[]){"a1b.tar", "a2b.tar", "a3b.tar", NULL});
  expands_to("{3..1}", (const char *const[]){"3", "2", "1", NULL});
  expands_to("{7..7}", (const char *const[]){"7", NULL});
  /* padding: only from a bound written with leading zeros */
  expands_to("{8..10}", (const char *const[]){"8", "9", "10", NULL});
  expands_to("{008..010}", (const char *const[]){"008", "009", "010", NULL});
  expands_to("{8..010}", (const char *const[]){"008", "009", "010", NULL});
  expands_to("{010..8}", (const char *const[]){"010", "009", "008", NULL});
  expands_to("{0..2}", (const char *const[]){"0", "1", "2", NULL});
  expands_to("{00..2}", (const char *const[]){"00", "01", "02", NULL});
  expands_to("s-{000000..000002}.tar",
             (const char *const[]){"s-000000.tar", "s-000001.tar", "s-000002.tar", NULL});
  /* lists, in the order given, empty items kept */
  expands_to("x-{b,a,c}.tar", (const char *const[]){"x-b.tar", "x-a.tar", "x-c.tar", NULL});
  expands_to("{a,}z", (const char *const[]){"az", "z", NULL});
  expands_to("{,}", (const char *const[]){"", "", NULL});
  expands_to("{a..b,c}", (const char *const[]){"a..b", "c", NULL});
  /* two groups: the cartesian product, the last group turning fastest */
  expands_to("s{0..1}-{x,y}.tar",
             (const char *const[]){"s0-x.tar", "s0-y.tar", "s1-x.tar", "s1-y.tar", NULL});
  expands_to("{b,a}{2..1}", (const char *const[]){"b2", "b1", "a2", "a1", NULL});
  expands_to("d{1..2}/{a,b}{0..1}.tar",
             (const char *const[]){"d1/a0.tar", "d1/a1.tar", "d1/b0.tar", "d1/b1.tar", "d2/a0.tar",
                                   "d2/a1.tar", "d2/b0.tar", "d2/b1.tar", NULL});
  /* many one-name groups: no recursion, no quadratic copies */
  {
    size_t groups = 20000;
    char *spec = malloc(groups * 6 + 8), *w = spec;
    for (size_t i = 0; i < groups; i++)
      w += sprintf(w, "{5..5}");
    strcpy(w, ".tar");
    char **v;
    size_t n;
    CHECK(fy_shards_expand(spec, &v, &n) == FERRY_OK && n == 1 && strlen(v[0]) == groups + 4 &&
          v[0][0] == '5' && !strcmp(v[0] + groups, ".tar"));
    fy_shards_free_names(v, n);
    free(spec);
  }

  refused("x-{0..3.tar", FERRY_EINVAL, "'{' without '}'");
  refused("x-0..3}.tar", FERRY_EINVAL, "'}' without '{'");
  refused("x-{0..3}}.tar", FERRY_EINVAL, "'}' without '{'");
  refused("x}{0..3}.tar", FERRY_EINVAL, "'}' without '{'");
  refused("x-{0..1}-{a,b.tar", FERRY_EINVAL, "'{' without '}'");
  refused("x-{a,{b,c}}.tar", FERRY_EINVAL, "nested braces are not expanded");
  refused("x-{a..b}.tar", FERRY_EINVAL,
          "'{a..b}' is neither a range {A..B} of numbers nor a list {X,Y}");
  refused("x-{}.tar", FERRY_EINVAL, "'{}' is neither a range");
  refused("x-{-1..2}.tar", FERRY_EINVAL, "'{-1..2}' is neither a range");
  refused("x-{1..}.tar", FERRY_EINVAL, "'{1..}' is neither a range");
  refused("x-{1..2..3}.tar", FERRY_EINVAL, "is neither a range");
  refused("{1..2}{x}", FERRY_EINVAL, "'{x}' is neither a range");

  /* the limit: exactly FY_MAX_SHARDS names are made; one more is refused
   * before any name is made (the refusal hands back no names at all) */
  char **v = NULL;
  size_t n = 0;
  int rc = fy_shards_expand("{1..1000}{0001..1000}", &v, &n);
  CHECK_MSG(rc == FERRY_OK && n == FY_MAX_SHARDS, "%d, %zu names: %s", rc, n, ferry_last_error());
  if (rc == FERRY_OK && n == FY_MAX_SHARDS) {
    CHECK(!strcmp(v[0], "10001") && !strcmp(v[1], "10002") && !strcmp(v[1000], "20001") &&
          !strcmp(v[n - 1], "10001000") && v[n] == NULL);
  }
  fy_shards_free_names(v, n);
  char big[64];
  snprintf(big, sizeof big, "{1..%d}", FY_MAX_SHARDS + 1);
  refused(big, FERRY_ETOO_LARGE, "more than 1000000 shards");
  refused("{1..1000}{0001..1001}", FERRY_ETOO_LARGE, "more than 1000000 shards");
  refused("{0..999999999999999999}", FERRY_ETOO_LARGE, "more than 1000000 shards");
  refused("{999999999999999999..0}", FERRY_ETOO_LARGE, "more than 1000000 shards");
  refused("{0..99}{0..99}{0..99}{a,b}", FERRY_ETOO_LARGE, "more than 1000000 shards");
  /* an error after the limit's group: the first one found is given */
  refused("{0..9999999}{x}", FERRY_ETOO_LARGE, "more than 1000000 shards");

  /* a smaller limit */
  CHECK(fy_shards_expand_max("{1..3}{a,b}", 6, &v, &n) == FERRY_OK && n == 6 &&
        !strcmp(v[5], "3b"));
  fy_shards_free_names(v, n);
  CHECK(fy_shards_expand_max("{1..3}{a,b}", 5, &v, &n) == FERRY_ETOO_LARGE && !v && !n &&
        strstr(ferry_last_error(), "more than 5 shards"));

  CHECK(fy_shards_spec("a.tar") == 1);
  CHECK(fy_shards_spec("dir/A.TAR") == 1);
  CHECK(fy_shards_spec("s-{000..009}.tar") == 1);
  CHECK(fy_shards_spec("x.tar.gz") == 1);
  CHECK(fy_shards_spec("x.tgz") == 1);
  CHECK(fy_shards_spec("x.tar.zst") == 1);
  CHECK(fy_shards_spec("x.jpg") == 0);
  CHECK(fy_shards_spec("tar") == 0);
  CHECK(fy_shards_spec("list.txt") == 0);
  CHECK(fy_shards_spec(NULL) == 0);
}

/* ------------------------------------------------------------ headers */

static int parse(const uint8_t b[512], fy_tar_header *h) {
  memset(h, 0x5a, sizeof *h);
  return fy_tar_parse_header(b, h);
}

static void test_headers(void) {
  uint8_t b[512];
  fy_tar_header h;

  make_header(b, USTAR, NULL, "a.jpg", '0', 1234);
  CHECK(parse(b, &h) == 0 && !strcmp(h.name, "a.jpg") && h.size == 1234 && h.type == '0');

  /* a bad checksum: one byte changed after it was summed; or the field */
  b[3] ^= 1;
  CHECK(parse(b, &h) == -1);
  b[3] ^= 1;
  CHECK(parse(b, &h) == 0);
  b[150] = b[150] == '1' ? '2' : '1';
  CHECK(parse(b, &h) == -1);
  make_header(b, USTAR, NULL, "a.jpg", '0', 1234);
  memset(b + 148, 0, 8); /* no checksum at all */
  CHECK(parse(b, &h) == -1);
  make_header(b, USTAR, NULL, "a.jpg", '0', 1234);
  b[149] = 'x'; /* not octal */
  CHECK(parse(b, &h) == -1);

  /* checksum field variants writers use: "%07o\0", " %06o " */
  make_header(b, USTAR, NULL, "a.jpg", '0', 5);
  {
    char c[9];
    memcpy(c, b + 148, 6);
    c[6] = '\0';
    unsigned long sum = strtoul(c, NULL, 8);
    snprintf(c, sizeof c, "%07lo", sum);
    memcpy(b + 148, c, 8); /* with its NUL */
    CHECK(parse(b, &h) == 0 && h.size == 5);
    snprintf(c, sizeof c, " %06lo ", sum);
    memcpy(b + 148, c, 8);
    CHECK(parse(b, &h) == 0 && h.size == 5);
  }

  /* a checksum summed over signed bytes (old writers; tar takes both) */
  make_header(b, USTAR, NULL, "caf\xc3\xa9.jpg", '0', 7);
  put_checksum(b, 1);
  CHECK(parse(b, &h) == 0 && !strcmp(h.name, "caf\xc3\xa9.jpg") && h.size == 7);
  put_checksum(b, 0);
  CHECK(parse(b, &h) == 0);

  /* octal sizes with spaces and NULs around the digits */
  static const struct {
    const char field[13]; /* 12 bytes + the literal's NUL */
    int64_t size;         /* -1: refused */
  } sizes[] = {
      {"00000002322\0", 1234},
      {"  2322\0\0\0\0\0\0", 1234},
      {"     2322   ", 1234},
      {"2322 \0\0\0\0\0\0\0", 1234},
      {"2322\0garbage", 1234}, /* what follows a NUL is not read */
      {"777777777777", 68719476735LL},
      {"\0\0\0\0\0\0\0\0\0\0\0\0", 0}, /* empty: 0, as tarfile reads it */
      {"            ", 0},
      {"23x2\0\0\0\0\0\0\0\0", -1},
      {"2322 1\0\0\0\0\0\0", -1},
      {"-2322\0\0\0\0\0\0\0", -1},
      {"8\0\0\0\0\0\0\0\0\0\0\0", -1},
  };
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    make_header(b, USTAR, NULL, "s.jpg", '0', 0);
    memcpy(b + 124, sizes[i].field, 12);
    put_checksum(b, 0);
    int rc = parse(b, &h);
    if (sizes[i].size < 0)
      CHECK_MSG(rc == -1, "size field %zu: %d", i, rc);
    else
      CHECK_MSG(rc == 0 && h.size == (uint64_t)sizes[i].size, "size field %zu: %d, %llu", i, rc,
                (unsigned long long)h.size);
  }

  /* GNU base-256: the first byte 0x80, the number big-endian after it */
  make_header(b, GNU, NULL, "big.mp4", '0', 0);
  memset(b + 124, 0, 12);
  b[124] = 0x80;
  uint64_t ten_gib = 10ULL << 30;
  for (int i = 0; i < 8; i++)
    b[135 - i] = (uint8_t)(ten_gib >> (8 * i));
  put_checksum(b, 0);
  CHECK(parse(b, &h) == 0 && h.size == ten_gib);
  b[128] = 0x7f; /* 2^63 - 1 and more: the top byte (bits 56..63) set */
  b[127] = 0x00;
  put_checksum(b, 0);
  CHECK(parse(b, &h) == 0 && h.size == ((uint64_t)0x7f << 56 | ten_gib));
  b[128] = 0x80; /* bit 63: past int64 */
  put_checksum(b, 0);
  CHECK(parse(b, &h) == -1);
  b[128] = 0;
  b[127] = 1; /* bits 64..: too large */
  put_checksum(b, 0);
  CHECK(parse(b, &h) == -1);
  b[127] = 0;
  b[124] = 0xff; /* negative */
  put_checksum(b, 0);
  CHECK(parse(b, &h) == -1);
  b[124] = 0x81; /* 2^88 and more */
  put_checksum(b, 0);
  CHECK(parse(b, &h) == -1);

  /* ustar: prefix + '/' + name */
  make_header(b, USTAR, "dir/sub", "k.jpg", '0', 3);
  CHECK(parse(b, &h) == 0 && !strcmp(h.name, "dir/sub/k.jpg"));
  {
    char prefix[156], name[101], want[300];
    memset(prefix, 'p', 155);
    prefix[155] = '\0';
    memset(name, 'n', 100);
    name[100] = '\0';
    make_header(b, USTAR, prefix, name, '0', 3); /* both fields full, no NULs */
    snprintf(want, sizeof want, "%s/%s", prefix, name);
    CHECK(parse(b, &h) == 0 && strlen(h.name) == 256 && !strcmp(h.name, want));
  }
  /* GNU magic: bytes 345.. are times, never a prefix */
  make_header(b, GNU, NULL, "g.jpg", '0', 3);
  memcpy(b + 345, "12345670123", 11);
  put_checksum(b, 0);
  CHECK(parse(b, &h) == 0 && !strcmp(h.name, "g.jpg"));
  /* V7: no magic, type NUL */
  make_header(b, V7, NULL, "old.png", '\0', 9);
  CHECK(parse(b, &h) == 0 && !strcmp(h.name, "old.png") && h.type == '\0' && h.size == 9);
  make_header(b, USTAR, NULL, "d/", '5', 0);
  CHECK(parse(b, &h) == 0 && h.type == '5' && h.size == 0);

  /* the end: an all-zero block; a block of zeros but one byte is no end */
  memset(b, 0, 512);
  CHECK(parse(b, &h) == 1);
  b[511] = 1;
  CHECK(parse(b, &h) == -1);
  /* text is no header */
  memset(b, 'a', 512);
  CHECK(parse(b, &h) == -1);
}

/* ------------------------------------------------------------ tar files */

static char root[64];

static const char *tw_save(tarw *t, const char *name) {
  static char paths[8][4200];
  static int k;
  char *path = paths[k++ % 8];
  snprintf(path, 4200, "%s/%s", root, name);
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f && (!t->n || fwrite(t->p, 1, t->n, f) == t->n) && fclose(f) == 0, "%s", path);
  free(t->p);
  memset(t, 0, sizeof *t);
  return path;
}

/* Bytes that say where they are: member k's byte i. */
static uint8_t *pattern(size_t n, int k) {
  uint8_t *d = malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++)
    d[i] = (uint8_t)(i * 7 + (size_t)k * 31 + (i >> 8));
  return d;
}

/* Opens shards; rc and (on an error) the message. */
static int open_shards(fy_source *s, const char *const *paths, size_t n) {
  memset(s, 0, sizeof *s);
  logged[0] = '\0';
  ferry_set_log(keep_log, NULL);
  int rc = fy_shards_open(s, "the test's shards", (char *const *)paths, n);
  ferry_set_log(NULL, NULL);
  return rc;
}

/* Sample i: its path, label, shard and bytes. */
static void sample_is(const fy_source *s, int64_t i, const char *path, int32_t label, int32_t shard,
                      size_t off, const uint8_t *data, size_t len) {
  if (i >= s->count) {
    CHECK_MSG(0, "sample %lld: only %lld samples", (long long)i, (long long)s->count);
    return;
  }
  CHECK_MSG(!strcmp(fy_source_path(s, i), path), "sample %lld: \"%s\", want \"%s\"", (long long)i,
            fy_source_path(s, i), path);
  CHECK_MSG(s->labels[i] == label, "sample %lld (%s): label %d, want %d", (long long)i, path,
            (int)s->labels[i], (int)label);
  CHECK_MSG(s->shard[i] == shard, "sample %lld: shard %d, want %d", (long long)i, (int)s->shard[i],
            (int)shard);
  CHECK_MSG(s->member_off[i] == (int64_t)off && s->member_len[i] == (int64_t)len,
            "sample %lld (%s): member at %lld, %lld bytes; want %zu, %zu", (long long)i, path,
            (long long)s->member_off[i], (long long)s->member_len[i], off, len);
  fy_buf buf = {0};
  size_t got = 0;
  int rc = fy_source_read(s, i, 0, &buf, &got);
  CHECK_MSG(rc == FERRY_OK && got == len && (!len || !memcmp(buf.p, data, len)),
            "sample %lld (%s): read %d, %zu bytes: %s", (long long)i, path, rc, got,
            rc ? ferry_last_error() : "bytes differ");
  fy_buf_free(&buf);
}

static void test_regular(void) {
  tarw t = {0};
  uint8_t *a = pattern(100, 1), *b = pattern(600, 2), *c = pattern(512, 3), *d = pattern(0, 4),
          *e = pattern(1500, 5), *f = pattern(33, 6), *g = pattern(20, 7), *h = pattern(21, 8),
          *ipng = pattern(40, 9), *ijpg = pattern(41, 10), *j = pattern(50, 11),
          *m = pattern(60, 12), *o = pattern(70, 13), *q = pattern(80, 14);
  size_t off[32];
  off[0] = tw_member(&t, USTAR, "a.jpg", '0', a, 100);
  tw_file(&t, "a.cls", "3");
  off[1] = tw_member(&t, USTAR, "b.png", '0', b, 600); /* two blocks, padded */
  tw_file(&t, "b.label", " 5 \n");
  off[2] = tw_member(&t, USTAR, "c.jpeg", '0', c, 512); /* exactly one block */
  tw_file(&t, "c.cls", "-1");                           /* unlabelled, said so */
  off[3] = tw_member(&t, USTAR, "d.webp", '0', d, 0);   /* empty member */
  tw_file(&t, "d.cls", "abc");                          /* not an integer: -1, warned */
  off[4] = tw_member(&t, V7, "e.jpg", '\0', e, 1500);   /* V7: type NUL */
  tw_file(&t, "e.json", "{\"label\": 3, \"file\": \"e.jpg\"}");
  off[5] = tw_member(&t, GNU, "f.png", '0', f, 33);
  tw_file(&t, "f.json", "{\"cls\":4}");
  off[6] = tw_member(&t, USTAR, "g.jpg", '7', g, 20); /* contiguous file */
  tw_file(&t, "g.cls", "2147483647");                 /* past FY_MAX_LABEL: -1, warned */
  off[7] = tw_member(&t, USTAR, "h.jpg", '0', h, 21);
  tw_file(&t, "h.cls", "2147483646\n"); /* FY_MAX_LABEL */
  /* jpg before png whatever their order; cls before txt */
  tw_member(&t, USTAR, "i.png", '0', ipng, 40);
  size_t ijpg_off = tw_member(&t, USTAR, "i.jpg", '0', ijpg, 41);
  tw_file(&t, "i.txt", "7");
  tw_file(&t, "i.cls", "1");
  /* a sample without an image: left out, the first one named */
  tw_file(&t, "k.cls", "1");
  tw_file(&t, "k.txt", "hello");
  /* a folder, then members inside it */
  tw_member(&t, USTAR, "dir/", '5', NULL, 0);
  off[9] = tw_member(&t, USTAR, "dir/j.jpg", '0', j, 50);
  tw_file(&t, "dir/j.txt", "a caption, not a label");
  /* a hidden file and a name without an extension: no sample; a symlink
   * with an image's name: no sample either */
  tw_file(&t, ".hidden.jpg", "x");
  tw_file(&t, "README", "y");
  tw_member(&t, USTAR, "l.jpg", '2', NULL, 0);
  /* keys with dots: the key ends at the base name's first dot */
  off[10] = tw_member(&t, USTAR, "v1.2/m.x.jpg", '0', m, 60); /* field "x.jpg": an image */
  off[10] = tw_member(&t, USTAR, "v1.2/m.jpg", '0', m, 60);
  tw_file(&t, "v1.2/m.label", "{\"label\":9}");
  /* the same key again later, apart: a sample of its own */
  off[11] = tw_member(&t, USTAR, "a.JPG", '0', o, 70);
  tw_file(&t, "a.cls", "  42  ");
  /* labels: json without a label key; cls with a fraction */
  off[12] = tw_member(&t, USTAR, "n.jpg", '0', q, 80);
  tw_file(&t, "n.json", "{\"caption\": \"3 dogs\"}");
  off[13] = tw_member(&t, USTAR, "p.jpg", '0', q, 80);
  tw_file(&t, "p.cls", "3.5");
  off[14] = tw_member(&t, USTAR, "r.jpg", '0', q, 80);
  tw_file(&t, "r.json", "{\"label\": \"3\"}");
  off[15] = tw_member(&t, USTAR, "u.jpg", '0', q, 80);
  tw_file(&t, "u.cls", "99999999999999999999");
  tw_end(&t);
  const char *path = tw_save(&t, "regular.tar");

  fy_source s;
  int rc = open_shards(&s, &path, 1);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(s.count == 16, "%lld samples", (long long)s.count);
  char want[4400];
#define P(key) (snprintf(want, sizeof want, "%s:%s", path, key), want)
  sample_is(&s, 0, P("a.jpg"), 3, 0, off[0], a, 100);
  sample_is(&s, 1, P("b.png"), 5, 0, off[1], b, 600);
  sample_is(&s, 2, P("c.jpeg"), -1, 0, off[2], c, 512);
  sample_is(&s, 3, P("d.webp"), -1, 0, off[3], d, 0);
  sample_is(&s, 4, P("e.jpg"), 3, 0, off[4], e, 1500);
  sample_is(&s, 5, P("f.png"), 4, 0, off[5], f, 33);
  sample_is(&s, 6, P("g.jpg"), -1, 0, off[6], g, 20);
  sample_is(&s, 7, P("h.jpg"), FY_MAX_LABEL, 0, off[7], h, 21);
  sample_is(&s, 8, P("i.jpg"), 1, 0, ijpg_off, ijpg, 41);
  sample_is(&s, 9, P("dir/j.jpg"), -1, 0, off[9], j, 50);
  /* "v1.2/m.x.jpg" and "v1.2/m.jpg": one key, "v1.2/m"; the plain field wins */
  sample_is(&s, 10, P("v1.2/m.jpg"), 9, 0, off[10], m, 60);
  sample_is(&s, 11, P("a.JPG"), 42, 0, off[11], o, 70);
  sample_is(&s, 12, P("n.jpg"), -1, 0, off[12], q, 80);
  sample_is(&s, 13, P("p.jpg"), -1, 0, off[13], q, 80);
  sample_is(&s, 14, P("r.jpg"), -1, 0, off[14], q, 80);
  sample_is(&s, 15, P("u.jpg"), -1, 0, off[15], q, 80);
  CHECK(s.num_classes == FY_MAX_LABEL + 1);
  CHECK(s.nshards == 1 && !strcmp(s.shards[0], path));
  CHECK_MSG(strstr(logged, "1 sample(s) without an image member left out (the first: ") &&
                strstr(logged, "regular.tar:k)"),
            "log: %s", logged);
  /* d "abc", g 2^31-1, p "3.5", u 10^20: cls members that are no label; not
   * c's "-1" (unlabelled on purpose), nor captions and json without one */
  CHECK_MSG(strstr(logged, "4 sample(s) with a cls/label member that is not an integer"), "log: %s",
            logged);
  fy_source_free(&s);
  free(a), free(b), free(c), free(d), free(e), free(f), free(g), free(h), free(ipng), free(ijpg);
  free(j), free(m), free(o), free(q);
#undef P
}

/* Label members read as JSON (jansson): a "label" or "cls" that is not a
 * top-level member (inside a string, nested deeper) is no label; bare
 * integers only with spaces around; malformed JSON is no label. */
static void test_json_labels(void) {
  static const struct {
    const char *ext, *text;
    int32_t want;
  } cases[] = {
      {"json", "{\"note\": \"label\", \"cls\": 2}", 2},         /* "label" as a string */
      {"json", "{\"meta\": {\"label\": 7}, \"cls\": 2}", 2},    /* nested "label" */
      {"json", "{\"caption\": \"label\", \"label\": 4}", 4},    /* string first, then key */
      {"json", "{\"caption\": \"\\\"label\\\": 5\"}", -1},      /* only inside a string */
      {"json", "{\"label\": 3, \"cls\": 5}", 3},                /* label before cls */
      {"json", "{\"cls\": 5, \"label\": 6}", 6},                /* whatever the order */
      {"json", "{\"label\": -1}", -1},                          /* unlabelled */
      {"json", "{\"label\": 2147483647}", -1},                  /* past FY_MAX_LABEL */
      {"json", "{\"label\": 3.0}", -1},                         /* not an integer */
      {"json", "{\"label\": \"3\", \"cls\": 1}", -1},           /* a "label" that is no integer */
      {"json", "{\"label\": 3", -1},                            /* cut short */
      {"json", "{\"label\": 3} trailing", -1},                  /* more after the object */
      {"json", "[{\"label\": 3}]", -1},                         /* not an object */
      {"json", "{\"caption\": \"caf\xe9\", \"label\": 3}", -1}, /* not UTF-8: not JSON */
      {"json", " \n{\"label\": 8}\n ", 8},                      /* spaces around */
      {"label", "{\"label\": 9}", 9},                           /* JSON in a .label member */
      {"cls", "7\n", 7},                                        /* a bare integer */
      {"cls", " 7 , ", -1},                                     /* more than an integer */
      {"cls", "7}", -1},
      {"txt", "{\"cls\": 11}", 11},
  };
  size_t n = sizeof cases / sizeof *cases;
  tarw t = {0};
  uint8_t *img = pattern(30, 40);
  for (size_t i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "s%02zu.jpg", i);
    tw_member(&t, USTAR, name, '0', img, 30);
    snprintf(name, sizeof name, "s%02zu.%s", i, cases[i].ext);
    tw_file(&t, name, cases[i].text);
  }
  tw_end(&t);
  const char *path = tw_save(&t, "json-labels.tar");
  fy_source s;
  int rc = open_shards(&s, &path, 1);
  CHECK_MSG(rc == FERRY_OK && s.count == (int64_t)n, "%d, %lld samples: %s", rc, (long long)s.count,
            ferry_last_error());
  for (size_t i = 0; rc == FERRY_OK && i < n && (int64_t)i < s.count; i++)
    CHECK_MSG(s.labels[i] == cases[i].want, "%s member %s: label %d, want %d", cases[i].ext,
              cases[i].text, (int)s.labels[i], (int)cases[i].want);
  /* cls and label members that are no label: " 7 , " and "7}"; not the
   * json and txt ones, nor {"label": 9} */
  CHECK_MSG(strstr(logged, "2 sample(s) with a cls/label member that is not an integer"), "log: %s",
            logged);
  if (rc == FERRY_OK)
    fy_source_free(&s);

  /* out of memory inside jansson (its allocations go through fy_malloc,
   * json.c): FERRY_ENOMEM naming the member, or every label right, for a
   * failure at each allocation in turn; one inside a string, which jansson
   * reports as a syntax error, no longer leaves a sample unlabelled */
  int failures = 0, done = 0;
  for (long at = 1; at < 10000 && !done; at++) {
    fy_fail_alloc_set(at);
    rc = open_shards(&s, &path, 1);
    if (rc == FERRY_OK) {
      int wrong = 0;
      for (size_t i = 0; i < n && (int64_t)i < s.count; i++)
        wrong += s.labels[i] != cases[i].want;
      CHECK_MSG(s.count == (int64_t)n && !wrong, "allocation %ld: %lld samples, %d wrong labels",
                at, (long long)s.count, wrong);
      done = 1; /* every failure is an error: none came, the end */
      fy_source_free(&s);
    } else {
      CHECK_MSG(rc == FERRY_ENOMEM && strstr(ferry_last_error(), "out of memory"),
                "allocation %ld: %d %s", at, rc, ferry_last_error());
      failures += strstr(ferry_last_error(), ": out of memory reading the label") != NULL;
    }
  }
  fy_fail_alloc_set(0);
  CHECK_MSG(done && failures >= 10, "%d failures in jansson, done %d", failures, done);
  free(img);
}

static void test_long_names(void) {
  /* 90 + 1 + 60 + 1 + 61 bytes: past ustar's 100 + 155 */
  char deep[300], deep2[400], deep3[400], want[4400];
  memset(deep, 'd', 90);
  deep[90] = '/';
  memset(deep + 91, 'e', 60);
  snprintf(deep + 151, sizeof deep - 151, "/key_with_a_long_name_%s",
           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  snprintf(deep2, sizeof deep2, "%s_gnu", deep);
  snprintf(deep3, sizeof deep3, "%s_big", deep);
  uint8_t *a = pattern(300, 21), *b = pattern(77, 22), *c = pattern(1030, 23), *u = pattern(5, 24);
  char name[600];
  tarw t = {0};
  /* pax: path for the image and for its label; the ustar names are cut */
  snprintf(name, sizeof name, "path=%s.jpg", deep);
  tw_pax(&t, 2, "mtime=1700000000.5", name);
  size_t off_a = tw_member(&t, USTAR, deep, '0', a, 300);
  snprintf(name, sizeof name, "path=%s.cls", deep);
  tw_pax(&t, 1, name);
  tw_member(&t, USTAR, "cut-name-of-the-cls", '0', "3", 1);
  /* GNU: a long name, then the member with a cut name */
  snprintf(name, sizeof name, "%s.png", deep2);
  tw_gnu_long(&t, name);
  size_t off_b = tw_member(&t, GNU, name, '0', b, 77);
  snprintf(name, sizeof name, "%s.label", deep2);
  tw_gnu_long(&t, name);
  tw_member(&t, GNU, name, '0', "8", 1);
  /* pax: the size in a record, the header's field 0 (members of 8 GiB
   * and more are written so) */
  snprintf(name, sizeof name, "path=%s.jpg", deep3);
  tw_pax(&t, 2, name, "size=1030");
  {
    uint8_t hb[512];
    make_header(hb, USTAR, NULL, "big.jpg", '0', 0);
    tw_bytes(&t, hb, 512);
  }
  size_t off_c = t.n;
  tw_bytes(&t, c, 1030);
  tw_pad(&t);
  /* a long name then a directory: the name is the directory's, not the
   * next member's */
  tw_gnu_long(&t, "a-long-folder-name.jpg/");
  tw_member(&t, GNU, "a-long-folder-name.jpg/", '5', NULL, 0);
  /* a global pax header is passed over */
  tw_member(&t, USTAR, "pax_global_header", 'g', "21 comment=hello wor\n", 21);
  size_t off_u = tw_member(&t, USTAR, "u.jpg", '0', u, 5);
  tw_end(&t);
  const char *path = tw_save(&t, "long.tar");

  fy_source s;
  int rc = open_shards(&s, &path, 1);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(s.count == 4, "%lld samples", (long long)s.count);
  snprintf(want, sizeof want, "%s:%s.jpg", path, deep);
  sample_is(&s, 0, want, 3, 0, off_a, a, 300);
  snprintf(want, sizeof want, "%s:%s.png", path, deep2);
  sample_is(&s, 1, want, 8, 0, off_b, b, 77);
  snprintf(want, sizeof want, "%s:%s.jpg", path, deep3);
  sample_is(&s, 2, want, -1, 0, off_c, c, 1030);
  snprintf(want, sizeof want, "%s:u.jpg", path);
  sample_is(&s, 3, want, -1, 0, off_u, u, 5);
  CHECK_MSG(!strstr(logged, "without an image"), "log: %s", logged);
  fy_source_free(&s);
  free(a), free(b), free(c), free(u);
}

/* Two shards, ids and order; through fy_source_open with a brace pattern. */
static void test_several(void) {
  uint8_t *x = pattern(10, 31), *y = pattern(11, 32), *z = pattern(12, 33);
  tarw t = {0};
  size_t ox = tw_member(&t, USTAR, "x.jpg", '0', x, 10);
  tw_file(&t, "x.cls", "0");
  tw_end(&t);
  char p1[4200], p2[4200];
  snprintf(p1, sizeof p1, "%s", tw_save(&t, "part-08.tar"));
  size_t oy = tw_member(&t, USTAR, "y.jpg", '0', y, 11);
  tw_file(&t, "y.cls", "1");
  size_t oz = tw_member(&t, USTAR, "z.webp", '0', z, 12);
  /* no end blocks: a shard that just stops after a member is taken */
  snprintf(p2, sizeof p2, "%s", tw_save(&t, "part-09.tar"));

  fy_source s;
  const char *paths[] = {p2, p1};
  int rc = open_shards(&s, paths, 2);
  CHECK_MSG(rc == FERRY_OK && s.count == 3 && s.nshards == 2, "%d %lld: %s", rc, (long long)s.count,
            ferry_last_error());
  char want[4400];
  snprintf(want, sizeof want, "%s:y.jpg", p2);
  sample_is(&s, 0, want, 1, 0, oy, y, 11);
  snprintf(want, sizeof want, "%s:z.webp", p2);
  sample_is(&s, 1, want, -1, 0, oz, z, 12);
  snprintf(want, sizeof want, "%s:x.jpg", p1);
  sample_is(&s, 2, want, 0, 1, ox, x, 10);
  CHECK(s.num_classes == 2);
  fy_source_free(&s);

  char spec[4200];
  snprintf(spec, sizeof spec, "%s/part-{08..09}.tar", root);
  memset(&s, 0, sizeof s);
  rc = fy_source_open(&s, spec);
  CHECK_MSG(rc == FERRY_OK && s.count == 3 && s.nshards == 2 && !strcmp(s.shards[0], p1) &&
                !strcmp(s.shards[1], p2),
            "%d: %s", rc, ferry_last_error());
  if (rc == FERRY_OK && s.count == 3) {
    snprintf(want, sizeof want, "%s:x.jpg", p1);
    sample_is(&s, 0, want, 0, 0, ox, x, 10);
    snprintf(want, sizeof want, "%s:z.webp", p2);
    sample_is(&s, 2, want, -1, 1, oz, z, 12);
  }
  fy_source_free(&s);
  snprintf(spec, sizeof spec, "%s/part-{07..09}.tar", root);
  rc = fy_source_open(&s, spec);
  CHECK_MSG(rc == FERRY_EIO && strstr(ferry_last_error(), "part-07.tar: cannot open"), "%d: %s", rc,
            ferry_last_error());
  CHECK(s.count == 0 && s.shards == NULL && s.paths == NULL);
  free(x), free(y), free(z);
}

/* A shard that must be refused: rc and the words of the message (the
 * shard's path is checked to be in it too). */
static void shard_refused(const char *path, int want_rc, const char *want) {
  fy_source s;
  int rc = open_shards(&s, &path, 1);
  const char *e = ferry_last_error();
  /* no samples at all: the source is named (what the caller passed) */
  const char *named = want_rc == FERRY_EEMPTY ? "the test's shards: " : path;
  CHECK_MSG(rc == want_rc && strstr(e, want) && strstr(e, named), "%s: %d \"%s\", want %d \"%s\"",
            path, rc, e, want_rc, want);
  /* freed on an error */
  CHECK(s.count == 0 && s.paths == NULL && s.shards == NULL && s.nshards == 0 &&
        s.member_off == NULL);
  if (rc == FERRY_OK)
    fy_source_free(&s);
}

static void test_bad_shards(void) {
  tarw t = {0};
  uint8_t *a = pattern(1000, 41);
  char path[4200];

  /* a member that runs past the end */
  tw_member(&t, USTAR, "a.jpg", '0', a, 1000);
  t.n = 512 + 100;
  snprintf(path, sizeof path, "%s", tw_save(&t, "past.tar"));
  shard_refused(path, FERRY_ECORRUPT, ": member \"a.jpg\" runs past the end of the shard");
  /* the same, named by its long name */
  char long_name[200];
  memset(long_name, 'n', 120); /* past the header's 100 bytes */
  strcpy(long_name + 120, "/a-long-name.jpg");
  tw_gnu_long(&t, long_name);
  tw_member(&t, GNU, long_name, '0', a, 1000);
  t.n -= 512;
  snprintf(path, sizeof path, "%s", tw_save(&t, "past-long.tar"));
  shard_refused(path, FERRY_ECORRUPT, "nnnnnnnn/a-long-name.jpg\" runs past the end");
  /* a pax size past the end */
  tw_pax(&t, 1, "size=99999");
  tw_member(&t, USTAR, "p.jpg", '0', a, 10);
  tw_end(&t);
  snprintf(path, sizeof path, "%s", tw_save(&t, "past-pax.tar"));
  shard_refused(path, FERRY_ECORRUPT, "member \"p.jpg\" runs past the end");
  /* a header cut short */
  tw_member(&t, USTAR, "a.jpg", '0', a, 100);
  tw_member(&t, USTAR, "b.jpg", '0', a, 100);
  t.n = 1024 + 100;
  snprintf(path, sizeof path, "%s", tw_save(&t, "cut.tar"));
  shard_refused(path, FERRY_ECORRUPT, "cut short at byte 1024");
  /* a damaged header after a good member */
  tw_member(&t, USTAR, "a.jpg", '0', a, 100);
  tw_member(&t, USTAR, "b.jpg", '0', a, 100);
  t.p[1024 + 10] ^= 0x20;
  tw_end(&t);
  snprintf(path, sizeof path, "%s", tw_save(&t, "damaged.tar"));
  shard_refused(path, FERRY_ECORRUPT, "damaged tar header at byte 1024");
  /* not a tar at all */
  for (int i = 0; i < 40; i++)
    tw_bytes(&t, "hello, not a tar file\n", 22);
  snprintf(path, sizeof path, "%s", tw_save(&t, "text.tar"));
  shard_refused(path, FERRY_ECORRUPT, "not a tar file (no tar header) at byte 0");
  /* shorter than a block; empty */
  tw_bytes(&t, "abc", 3);
  snprintf(path, sizeof path, "%s", tw_save(&t, "tiny.tar"));
  shard_refused(path, FERRY_ECORRUPT, "not a tar file, or cut short at byte 0");
  snprintf(path, sizeof path, "%s", tw_save(&t, "zero-bytes.tar"));
  shard_refused(path, FERRY_ECORRUPT, "not a tar file, or cut short at byte 0");
  /* an empty tar: the end blocks only */
  tw_end(&t);
  snprintf(path, sizeof path, "%s", tw_save(&t, "empty.tar"));
  shard_refused(path, FERRY_EEMPTY, "no samples with an image member in 1 shard(s)");
  /* samples, none with an image */
  tw_file(&t, "a.cls", "1");
  tw_file(&t, "b.txt", "two");
  tw_member(&t, USTAR, "c/", '5', NULL, 0);
  tw_end(&t);
  snprintf(path, sizeof path, "%s", tw_save(&t, "no-images.tar"));
  {
    fy_source s;
    const char *p = path;
    int rc = open_shards(&s, &p, 1);
    CHECK_MSG(rc == FERRY_EEMPTY && strstr(ferry_last_error(), "no samples with an image member"),
              "%d: %s", rc, ferry_last_error());
    CHECK_MSG(strstr(logged, "2 sample(s) without an image member left out") &&
                  strstr(logged, "no-images.tar:a)"),
              "log: %s", logged);
  }
  /* names: missing, a folder, a FIFO (refused at once, never waited on:
   * nothing writes to it), compressed and missing, not a tar */
  snprintf(path, sizeof path, "%s/missing.tar", root);
  shard_refused(path, FERRY_EIO, ": cannot open: ");
  snprintf(path, sizeof path, "%s/folder.tar", root);
  CHECK(mkdir(path, 0700) == 0);
  shard_refused(path, FERRY_EINVAL, ": a folder, not a regular file");
  rmdir(path);
  snprintf(path, sizeof path, "%s/fifo.tar", root);
  CHECK(mkfifo(path, 0600) == 0);
  shard_refused(path, FERRY_EINVAL, ": a FIFO, not a regular file");
  unlink(path);
  snprintf(path, sizeof path, "%s/g.tar.gz", root); /* read as a stream (test_shard_stream) */
  shard_refused(path, FERRY_EIO, ": cannot open: ");
  snprintf(path, sizeof path, "%s/list.txt", root);
  shard_refused(path, FERRY_EUNSUPPORTED, ": not a .tar shard");
  /* a good shard, then a bad one: all freed, the bad one named */
  tw_member(&t, USTAR, "a.jpg", '0', a, 10);
  tw_end(&t);
  char good[4200];
  snprintf(good, sizeof good, "%s", tw_save(&t, "good.tar"));
  snprintf(path, sizeof path, "%s/damaged.tar", root);
  {
    fy_source s;
    const char *two[] = {good, path};
    int rc = open_shards(&s, two, 2);
    CHECK_MSG(rc == FERRY_ECORRUPT && strstr(ferry_last_error(), "damaged.tar: damaged tar header"),
              "%d: %s", rc, ferry_last_error());
    CHECK(s.count == 0 && s.paths == NULL && s.shards == NULL && s.shard == NULL);
  }
  {
    fy_source s;
    int rc = open_shards(&s, NULL, 0);
    CHECK_MSG(rc == FERRY_EINVAL && strstr(ferry_last_error(), "names no shard"), "%d: %s", rc,
              ferry_last_error());
  }
  free(a);
}

int main(void) {
  test_expand();
  test_headers();
  snprintf(root, sizeof root, "/tmp/ferry-shards-XXXXXX");
  if (!mkdtemp(root)) {
    SKIP("no temporary directory");
    return check_done();
  }
  test_regular();
  test_json_labels();
  test_long_names();
  test_several();
  test_bad_shards();
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
  return check_done();
}
