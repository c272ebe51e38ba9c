/* test_catalog.c — the .fidx catalog: records and files round-trip, damage
 * is detected and refused, updates hash only what changed, a bad file is
 * recorded without stopping the run, an interrupted run (a journal with a
 * torn tail) is resumed, exports are complete. */
#include "catalog/catalog.h"
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[1024];

static void copy_file(const char *from, const char *to) {
  fy_buf b = {0};
  size_t n;
  if (fy_read_file(from, 0, &b, &n) != FERRY_OK)
    return;
  FILE *f = fopen(to, "wb");
  if (f) {
    fwrite(b.p, 1, n, f);
    fclose(f);
  }
  fy_buf_free(&b);
}

/* tmp/pics with the fixture images, plus a broken one. */
static int make_tree(void) {
  char dir[8192], from[8192], to[8192];
  snprintf(dir, sizeof dir, "%s/pics/sub", tmp);
  snprintf(from, sizeof from, "%s/pics", tmp);
  mkdir(from, 0755);
  mkdir(dir, 0755);
  snprintf(from, sizeof from, "%s/hash", check_fixtures());
  DIR *d = opendir(from);
  if (!d)
    return 0;
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    const char *x = strrchr(e->d_name, '.');
    if (!x || (strcmp(x, ".jpg") && strcmp(x, ".png") && strcmp(x, ".webp")))
      continue;
    snprintf(from, sizeof from, "%s/hash/%s", check_fixtures(), e->d_name);
    snprintf(to, sizeof to, "%s/pics/%s%s", tmp, n % 3 ? "" : "sub/", e->d_name);
    copy_file(from, to);
    n++;
  }
  closedir(d);
  snprintf(to, sizeof to, "%s/pics/broken.jpg", tmp);
  FILE *f = fopen(to, "wb");
  fputs("\xff\xd8\xff\xe0 not really a JPEG", f);
  fclose(f);
  snprintf(to, sizeof to, "%s/pics/notes.txt", tmp); /* not an image name: ignored */
  f = fopen(to, "wb");
  fputs("hello", f);
  fclose(f);
  return n + 1;
}

static void test_records(void) {
  ferry_catalog_entry e = {0}, back;
  ferry_signature sig;
  e.path = "/a/b,c\"d.jpg";
  e.size = 123456789012ull;
  e.mtime_ns = -5;
  e.width = 4000;
  e.height = 3000;
  e.format = FERRY_FORMAT_JPEG;
  e.status = FERRY_ECORRUPT;
  e.error = "x.jpg: truncated";
  e.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH) | FERRY_HASH_MASK(FERRY_HASH_COLORHASH);
  ferry_hash_from_hex("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 256,
                      &e.hash[FERRY_HASH_PHASH]);
  ferry_hash_from_hex("30000000001", 42, &e.hash[FERRY_HASH_COLORHASH]);
  size_t n = fy_record_size(&e), pl, el;
  uint8_t *buf = malloc(n);
  fy_record_encode(&e, buf);
  CHECK(fy_record_decode(buf, n, &back, &sig, &pl, &el) == FERRY_OK);
  CHECK(pl == strlen(e.path) && !memcmp(back.path, e.path, pl));
  CHECK(el == strlen(e.error) && !memcmp(back.error, e.error, el));
  CHECK(back.size == e.size && back.mtime_ns == e.mtime_ns && back.width == 4000 &&
        back.status == FERRY_ECORRUPT && back.kinds == e.kinds);
  CHECK(ferry_hash_distance(&back.hash[FERRY_HASH_PHASH], &e.hash[FERRY_HASH_PHASH]) == 0);
  CHECK(back.hash[FERRY_HASH_COLORHASH].bits == 42);
  for (size_t cut = 0; cut < n; cut++) /* every truncation is refused */
    CHECK(fy_record_decode(buf, cut, &back, &sig, &pl, &el) == FERRY_ECORRUPT);
  free(buf);
  /* a signature goes through whole */
  ferry_signature s0;
  for (size_t i = 0; i < sizeof s0; i++)
    ((uint8_t *)&s0)[i] = (uint8_t)(i * 37 + 11);
  e.kinds |= FERRY_HASH_SIGNATURE;
  e.signature = &s0;
  n = fy_record_size(&e);
  buf = malloc(n);
  fy_record_encode(&e, buf);
  CHECK(fy_record_decode(buf, n, &back, &sig, &pl, &el) == FERRY_OK);
  CHECK(back.kinds == e.kinds && back.signature == &sig && !memcmp(&sig, &s0, sizeof sig));
  for (size_t cut = n - 800; cut < n; cut++)
    CHECK(fy_record_decode(buf, cut, &back, &sig, &pl, &el) == FERRY_ECORRUPT);
  free(buf);
  CHECK(fy_crc32(0, "123456789", 9) == 0xCBF43926u); /* the standard check value */
}

static size_t file_size(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 ? (size_t)st.st_size : 0;
}

static void flip_byte(const char *p, size_t at) {
  FILE *f = fopen(p, "r+b");
  fseek(f, (long)at, SEEK_SET);
  int c = fgetc(f);
  fseek(f, (long)at, SEEK_SET);
  fputc(c ^ 0x20, f);
  fclose(f);
}

static int errors;
static void count_error(void *user, const char *path, int status, const char *msg) {
  (void)user, (void)status;
  CHECK_MSG(strstr(msg, path) != NULL, "error message '%s' does not name %s", msg, path);
  errors++;
}

static void test_update(int images) {
  char index[2048], root[2048], path[8192];
  snprintf(index, sizeof index, "%s/cat.fidx", tmp);
  snprintf(root, sizeof root, "%s/pics", tmp);
  const char *roots[] = {root};
  ferry_index_options o;
  ferry_index_options_default(&o);
  o.on_error = count_error;
  o.threads = 2;
  ferry_index_stats st;
  errors = 0;
  CHECK_MSG(ferry_index_update(index, roots, 1, &o, &st) == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(st.files == (size_t)images && st.hashed == (size_t)images && st.failed == 1,
            "first run: %zu files, %zu hashed, %zu failed", st.files, st.hashed, st.failed);
  CHECK(errors == 1);
  snprintf(path, sizeof path, "%s.journal", index);
  CHECK(access(path, F_OK) != 0); /* gone after a complete run */

  ferry_catalog *c;
  CHECK(ferry_catalog_load(index, &c) == FERRY_OK);
  CHECK(ferry_catalog_size(c) == (size_t)images);
  for (size_t i = 1; i < ferry_catalog_size(c); i++) /* sorted */
    CHECK(strcmp(ferry_catalog_get(c, i - 1)->path, ferry_catalog_get(c, i)->path) < 0);
  int bad_found = 0;
  for (size_t i = 0; i < ferry_catalog_size(c); i++) {
    const ferry_catalog_entry *e = ferry_catalog_get(c, i);
    if (strstr(e->path, "broken.jpg")) {
      bad_found = 1;
      CHECK(e->status != FERRY_OK && strstr(e->error, "broken.jpg"));
    } else {
      CHECK_MSG(e->status == FERRY_OK && e->kinds == (FERRY_HASH_ALL | FERRY_HASH_SIGNATURE) &&
                    e->signature && e->hash[FERRY_HASH_PHASH].bits == 256,
                "%s: %s", e->path, e->error);
    }
  }
  CHECK(bad_found);
  ferry_catalog_free(c);

  /* nothing changed: nothing hashed, the failure remembered */
  errors = 0;
  CHECK(ferry_index_update(index, roots, 1, &o, &st) == FERRY_OK);
  CHECK_MSG(st.hashed == 0 && st.reused == (size_t)images && st.failed == 1,
            "second run: %zu hashed %zu reused", st.hashed, st.reused);
  CHECK(errors == 0);

  /* a changed file, a new one, a removed one */
  snprintf(path, sizeof path, "%s/pics/rgb.png", tmp);
  struct timespec ts[2] = {{0, UTIME_NOW}, {1000000, 0}};
  utimensat(AT_FDCWD, path, ts, 0);
  char from[4096];
  snprintf(from, sizeof from, "%s/hash/rgb420.jpg", check_fixtures());
  snprintf(path, sizeof path, "%s/pics/sub/new.jpg", tmp);
  copy_file(from, path);
  snprintf(path, sizeof path, "%s/pics/lossy.webp", tmp);
  int removed = unlink(path) == 0;
  CHECK(ferry_index_update(index, roots, 1, &o, &st) == FERRY_OK);
  CHECK_MSG(st.hashed == 2 && st.removed == (size_t)removed &&
                st.files == (size_t)images + 1 - (size_t)removed,
            "third run: %zu hashed, %zu removed, %zu files", st.hashed, st.removed, st.files);

  /* entries outside the roots stay; a second root adds its files */
  char other[4096];
  snprintf(other, sizeof other, "%s/pics/sub", tmp);
  const char *sub[] = {other};
  CHECK(ferry_index_update(index, sub, 1, &o, &st) == FERRY_OK);
  CHECK(st.kept > 0 && st.hashed == 0);

  /* other hash settings: everything hashed again */
  o.hash.mode = FERRY_HASH_COMPATIBLE;
  CHECK(ferry_index_update(index, roots, 1, &o, &st) == FERRY_OK);
  CHECK(st.hashed == st.files && st.reused == 0);
  o.hash.mode = FERRY_HASH_FAST;

  /* damage: a flipped byte or a cut file is refused, never half-read */
  size_t n = file_size(index);
  char copy[8192];
  snprintf(copy, sizeof copy, "%s/copy.fidx", tmp);
  copy_file(index, copy);
  flip_byte(copy, n / 2);
  CHECK(ferry_catalog_load(copy, &c) == FERRY_ECORRUPT && strstr(ferry_last_error(), "copy.fidx"));
  copy_file(index, copy);
  CHECK(truncate(copy, (off_t)(n - 1)) == 0);
  CHECK(ferry_catalog_load(copy, &c) == FERRY_ECORRUPT);
  CHECK(ferry_catalog_load(root, &c) != FERRY_OK); /* a directory */
  snprintf(path, sizeof path, "%s/pics/broken.jpg", tmp);
  CHECK(ferry_catalog_load(path, &c) == FERRY_ECORRUPT &&
        strstr(ferry_last_error(), "not a ferry catalog"));
  /* an update refuses to build on a damaged index (and leaves it be) */
  flip_byte(copy, 100);
  CHECK(ferry_index_update(copy, roots, 1, &o, &st) == FERRY_ECORRUPT);
}

/* An interrupted run: its journal holds some results, the last record torn.
 * The next run takes the whole records, hashes the rest, and the result is
 * the same catalog as an uninterrupted run's. */
/* The library's messages go to the host's log function (ferry_set_log),
 * never to stderr behind its back: a catalog update without on_error
 * reports its bad file there. */
static int logged, logged_level;
static char logged_msg[1024];
static void take_log(void *user, ferry_log_level level, const char *msg) {
  (void)user;
  if (!logged++) {
    logged_level = (int)level;
    snprintf(logged_msg, sizeof logged_msg, "%s", msg);
  }
}

static void test_log_callback(void) {
  char index[2048], root[2048];
  snprintf(index, sizeof index, "%s/logged.fidx", tmp);
  snprintf(root, sizeof root, "%s/pics", tmp);
  const char *roots[] = {root};
  ferry_index_options o;
  ferry_index_options_default(&o);
  o.threads = 2; /* on_error NULL: the log */
  ferry_index_stats st;
  ferry_set_log(take_log, NULL);
  CHECK(ferry_index_update(index, roots, 1, &o, &st) == FERRY_OK);
  ferry_set_log(NULL, NULL);
  CHECK_MSG(logged == 1 && logged_level == FERRY_LOG_WARNING && strstr(logged_msg, "broken.jpg"),
            "%d messages, level %d: %s", logged, logged_level, logged_msg);
}

static void test_resume(void) {
  char index[2048], root[2048], clean[2048];
  snprintf(index, sizeof index, "%s/resume.fidx", tmp);
  snprintf(clean, sizeof clean, "%s/clean.fidx", tmp);
  snprintf(root, sizeof root, "%s/pics", tmp);
  const char *roots[] = {root};
  ferry_index_options o;
  ferry_index_options_default(&o);
  o.on_error = count_error;
  ferry_index_stats st;
  CHECK(ferry_index_update(clean, roots, 1, &o, &st) == FERRY_OK);
  ferry_catalog *want;
  CHECK(ferry_catalog_load(clean, &want) == FERRY_OK);
  /* a journal with the first five entries of a run, the fifth cut short */
  fy_journal j;
  CHECK(fy_journal_open(&j, index, &o.hash, 0) == FERRY_OK);
  for (size_t i = 0; i < 5 && i < ferry_catalog_size(want); i++)
    CHECK(fy_journal_append(&j, ferry_catalog_get(want, i)) == FERRY_OK);
  CHECK(fy_journal_sync(&j) == FERRY_OK);
  /* a second ferry on the same index is refused while this one runs */
  CHECK(ferry_index_update(index, roots, 1, &o, &st) == FERRY_ESTATE);
  fy_journal_close(&j);
  char jpath[4096];
  snprintf(jpath, sizeof jpath, "%s.journal", index);
  CHECK(truncate(jpath, (off_t)(file_size(jpath) - 3)) == 0);
  CHECK(ferry_index_update(index, roots, 1, &o, &st) == FERRY_OK);
  CHECK_MSG(st.resumed == 4 && st.hashed == st.files - 4, "resumed %zu, hashed %zu of %zu",
            st.resumed, st.hashed, st.files);
  ferry_catalog *got;
  CHECK(ferry_catalog_load(index, &got) == FERRY_OK);
  int same = ferry_catalog_size(got) == ferry_catalog_size(want);
  for (size_t i = 0; same && i < ferry_catalog_size(got); i++) {
    const ferry_catalog_entry *a = ferry_catalog_get(got, i), *b = ferry_catalog_get(want, i);
    same = !strcmp(a->path, b->path) && a->size == b->size && a->kinds == b->kinds &&
           a->status == b->status;
    for (int k = 0; same && k < FERRY_HASH_KIND_COUNT; k++)
      same = !(a->kinds & (1u << k)) || ferry_hash_distance(&a->hash[k], &b->hash[k]) == 0;
  }
  CHECK_MSG(same, "resumed catalog differs from an uninterrupted run's");
  ferry_catalog_free(got);
  ferry_catalog_free(want);
}

static void test_export(void) {
  char index[2048], out[8192];
  snprintf(index, sizeof index, "%s/cat.fidx", tmp);
  ferry_catalog *c;
  CHECK(ferry_catalog_load(index, &c) == FERRY_OK);
  const char *formats[] = {"csv", "json"};
  for (int f = 0; f < 2; f++) {
    snprintf(out, sizeof out, "%s/export.%s", tmp, formats[f]);
    CHECK(ferry_catalog_export(c, out, formats[f]) == FERRY_OK);
    fy_buf b = {0};
    size_t n;
    CHECK(fy_read_file(out, 0, &b, &n) == FERRY_OK);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
      lines += ((char *)b.p)[i] == '\n';
    CHECK_MSG(lines >= (int)ferry_catalog_size(c), "%s: %d lines", formats[f], lines);
    fy_buf_free(&b);
  }
  CHECK(ferry_catalog_export(c, out, "xml") == FERRY_EINVAL);
  snprintf(out, sizeof out, "%s/no/such/dir/x.csv", tmp);
  CHECK(ferry_catalog_export(c, out, "csv") == FERRY_EIO);
  ferry_catalog_free(c);
}

static void test_dupes(void) {
  char index[2048];
  snprintf(index, sizeof index, "%s/cat.fidx", tmp);
  ferry_catalog *c;
  CHECK(ferry_catalog_load(index, &c) == FERRY_OK);
  ferry_search_options so;
  ferry_search_options_default(&so);
  so.threshold = 256; /* everything that hashed is one group */
  ferry_dupes *d;
  CHECK(ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d) == FERRY_OK);
  CHECK(ferry_dupes_group_count(d) == 1);
  if (ferry_dupes_group_count(d) != 1) {
    ferry_dupes_free(d);
    ferry_catalog_free(c);
    return;
  }
  const uint32_t *m;
  size_t n = ferry_dupes_group(d, 0, &m);
  CHECK(n == ferry_catalog_size(c) - 1); /* all but the broken file */
  /* the keeper by resolution: the largest picture */
  CHECK_MSG(ferry_dupes_keep(d, "pixels,size", NULL, 0) == FERRY_OK, "%s", ferry_last_error());
  CHECK(ferry_dupes_keep(d, "pixels,bogus", NULL, 0) == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "'bogus'") != NULL);
  const char *rel[] = {"relative/dir"};
  CHECK(ferry_dupes_keep(d, NULL, rel, 1) == FERRY_EINVAL);
  CHECK(ferry_dupes_keep(d, NULL, NULL, 1) == FERRY_EINVAL);
  CHECK(!ferry_dupes_is_reference(d, m[0]));
  uint64_t best = 0;
  for (size_t k = 0; k < n; k++) {
    const ferry_catalog_entry *e = ferry_catalog_get(c, m[k]);
    uint64_t px = (uint64_t)e->width * e->height;
    best = px > best ? px : best;
  }
  const ferry_catalog_entry *keeper = ferry_catalog_get(c, m[0]);
  CHECK((uint64_t)keeper->width * keeper->height == best);
  CHECK(ferry_dupes_distance(d, m[0], m[0]) == 0);
  /* "path": the first path; a reference folder holding every member: all
   * references, the keeper still by the rules */
  CHECK(ferry_dupes_keep(d, "path", NULL, 0) == FERRY_OK);
  for (size_t k = 1; k < n; k++)
    CHECK(m[0] < m[k]);
  const char *refs[] = {ferry_catalog_get(c, m[0])->path};
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", refs[0]);
  *strrchr(dir, '/') = 0;
  refs[0] = dir;
  CHECK(ferry_dupes_keep(d, "pixels,size", refs, 1) == FERRY_OK);
  CHECK(ferry_dupes_is_reference(d, m[0]) && ferry_dupes_is_reference(d, m[n - 1]));
  CHECK((uint64_t)ferry_catalog_get(c, m[0])->width * ferry_catalog_get(c, m[0])->height == best);
  char out[8192];
  const char *formats[] = {"csv", "json", "html"};
  for (int f = 0; f < 3; f++) {
    snprintf(out, sizeof out, "%s/dupes.%s", tmp, formats[f]);
    CHECK_MSG(ferry_dupes_write(d, formats[f], out) == FERRY_OK, "%s", ferry_last_error());
  }
  ferry_dupes_free(d);
  CHECK(ferry_dupes_find(c, FERRY_HASH_PHASH, NULL, &d) == FERRY_OK);
  ferry_dupes_free(d);
  /* --exclude: patterns (a star crosses slashes) and folders */
  size_t before = ferry_catalog_size(c), dropped = 99, pngs = 0;
  for (size_t i = 0; i < before; i++) {
    const char *p = ferry_catalog_get(c, i)->path;
    pngs += strlen(p) > 4 && !strcmp(p + strlen(p) - 4, ".png");
  }
  const char *empty[] = {""}, *png[] = {"*.png"}, *all[] = {tmp};
  CHECK(ferry_catalog_drop_matching(c, empty, 1, &dropped) == FERRY_EINVAL && dropped == 0);
  CHECK(ferry_catalog_drop_matching(c, png, 1, &dropped) == FERRY_OK && dropped == pngs);
  CHECK(ferry_catalog_size(c) == before - pngs);
  CHECK(ferry_catalog_drop_matching(c, all, 1, &dropped) == FERRY_OK && ferry_catalog_size(c) == 0);
  CHECK(ferry_dupes_default_threshold(FERRY_HASH_PHASH, 16) == 72);
  ferry_catalog_free(c);
}

static long peak_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

/* Issue 16 item 6: 12,000 distinct pHashes all within 6 bits of each other
 * (a base code with 1, 2 or 3 of its 64 bits flipped): 71,994,000 pairs,
 * 864 MB as a list (twice that sorted). The groups are built as the pairs
 * stream from the search: one group, every pair counted, none listed, and
 * the process grows by far less than the list would take. */
static void test_dupes_clique(void) {
  ferry_hash_options ho;
  ferry_hash_options_default(&ho);
  ferry_catalog *c = fy_catalog_new(&ho);
  CHECK(c != NULL);
  if (!c)
    return;
  const uint64_t base = 0x9e3779b97f4a7c15ull;
  size_t k = 0, want = 12000;
  char path[64];
  for (int a = -1; a < 64 && k < want; a++)
    for (int b = a < 0 ? -1 : a + 1; b < 64 && k < want; b++)
      for (int d = b < 0 ? -1 : b + 1; d < 64 && k < want; d++) {
        if ((a < 0 && b >= 0) || (b < 0 && d >= 0))
          continue; /* each set of flipped bits once */
        uint64_t code = base;
        code ^= a >= 0 ? 1ull << a : 0;
        code ^= b >= 0 ? 1ull << b : 0;
        code ^= d >= 0 ? 1ull << d : 0;
        ferry_catalog_entry e;
        memset(&e, 0, sizeof e);
        snprintf(path, sizeof path, "/clique/%06zu.jpg", k);
        e.path = path;
        e.error = "";
        e.size = 1000 + k;
        e.width = e.height = 64;
        e.format = FERRY_FORMAT_JPEG;
        e.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH);
        e.hash[FERRY_HASH_PHASH].w[0] = code;
        e.hash[FERRY_HASH_PHASH].bits = 64;
        CHECK(fy_catalog_add(c, &e) == FERRY_OK);
        k++;
      }
  CHECK(k == want);
  ferry_search_options so;
  ferry_search_options_default(&so);
  so.threshold = 6;
  long before = peak_rss_mb();
  ferry_dupes *d = NULL;
  CHECK_MSG(ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d) == FERRY_OK, "%s", ferry_last_error());
  long grew = peak_rss_mb() - before;
  if (d) {
    const uint32_t *m;
    CHECK(ferry_dupes_group_count(d) == 1 && ferry_dupes_group(d, 0, &m) == want);
    CHECK_MSG(ferry_dupes_pair_count(d) == (uint64_t)want * (want - 1) / 2, "%llu pairs",
              (unsigned long long)ferry_dupes_pair_count(d));
    const ferry_pair *p = NULL;
    CHECK(ferry_dupes_pairs(d, &p) == 0 && p == NULL); /* over the listing limit */
    ferry_dupes_free(d);
  }
  printf("clique of %zu distinct codes: peak RSS grew %ld MB\n", want, grew);
  CHECK_MSG(grew < 300, "peak RSS grew %ld MB", grew);
  ferry_catalog_free(c);
  /* under the limit the pairs are listed, sorted */
  c = fy_catalog_new(&ho);
  for (int i = 0; c && i < 4; i++) {
    ferry_catalog_entry e;
    memset(&e, 0, sizeof e);
    snprintf(path, sizeof path, "/few/%d.jpg", i);
    e.path = path;
    e.error = "";
    e.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH);
    e.hash[FERRY_HASH_PHASH].w[0] = base ^ (i ? 1ull << i : 0);
    e.hash[FERRY_HASH_PHASH].bits = 64;
    fy_catalog_add(c, &e);
  }
  if (c && ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d) == FERRY_OK) {
    const ferry_pair *p = NULL;
    size_t np = ferry_dupes_pairs(d, &p);
    CHECK_MSG(np == 6 && p, "%zu pairs listed", np);
    for (size_t i = 1; p && i < np; i++)
      CHECK(p[i - 1].i < p[i].i || (p[i - 1].i == p[i].i && p[i - 1].j < p[i].j));
    ferry_dupes_free(d);
  }
  ferry_catalog_free(c);
}

/* ------------------------------------------- a catalog built in memory */

typedef struct reader_arg {
  const ferry_catalog *c;
  int sorted;
} reader_arg;

static void *read_catalog(void *user) {
  reader_arg *a = user;
  a->sorted = 1;
  for (size_t i = 1; i < ferry_catalog_size(a->c); i++)
    a->sorted &= strcmp(ferry_catalog_get(a->c, i - 1)->path, ferry_catalog_get(a->c, i)->path) < 0;
  return NULL;
}

/* The same dupes (groups, members, keepers first) from two catalogs of the
 * same entries. */
static void same_dupes(const ferry_catalog *a, const ferry_catalog *b, ferry_hash_kind kind,
                       int threshold) {
  ferry_search_options so;
  ferry_search_options_default(&so);
  so.threshold = threshold;
  ferry_dupes *da = NULL, *db = NULL;
  CHECK_MSG(ferry_dupes_find(a, kind, &so, &da) == FERRY_OK, "%s", ferry_last_error());
  CHECK(ferry_dupes_find(b, kind, &so, &db) == FERRY_OK);
  CHECK_MSG(ferry_dupes_group_count(da) == ferry_dupes_group_count(db), "%s <= %d: %zu, %zu",
            ferry_hash_kind_name(kind), threshold, ferry_dupes_group_count(da),
            ferry_dupes_group_count(db));
  CHECK(ferry_dupes_pair_count(da) == ferry_dupes_pair_count(db));
  for (size_t g = 0; g < ferry_dupes_group_count(da) && g < ferry_dupes_group_count(db); g++) {
    const uint32_t *ma, *mb;
    size_t na = ferry_dupes_group(da, g, &ma), nb = ferry_dupes_group(db, g, &mb);
    CHECK_MSG(na == nb && !memcmp(ma, mb, na * sizeof *ma), "%s <= %d: group %zu differs",
              ferry_hash_kind_name(kind), threshold, g);
  }
  ferry_dupes_free(da);
  ferry_dupes_free(db);
}

static void test_memory_catalog(void) {
  /* a folder of the fixtures, exact copies (keepers decided by path) and a
   * broken file, indexed on disk */
  char dir[2048], index[2048], from[8192], to[8192];
  snprintf(dir, sizeof dir, "%s/mem", tmp);
  snprintf(index, sizeof index, "%s/mem.fidx", tmp);
  mkdir(dir, 0755);
  snprintf(from, sizeof from, "%s/hash", check_fixtures());
  DIR *dd = opendir(from);
  struct dirent *de;
  int copies = 0;
  while (dd && (de = readdir(dd)) != NULL) {
    const char *x = strrchr(de->d_name, '.');
    if (!x || (strcmp(x, ".jpg") && strcmp(x, ".png") && strcmp(x, ".webp")))
      continue;
    snprintf(from, sizeof from, "%s/hash/%s", check_fixtures(), de->d_name);
    snprintf(to, sizeof to, "%s/%s", dir, de->d_name);
    copy_file(from, to);
    if (copies < 3) {
      snprintf(to, sizeof to, "%s/0copy_%s", dir, de->d_name);
      copy_file(from, to);
      snprintf(to, sizeof to, "%s/zcopy_%s", dir, de->d_name);
      copy_file(from, to);
      copies++;
    }
  }
  if (dd)
    closedir(dd);
  snprintf(to, sizeof to, "%s/broken.jpg", dir);
  FILE *f = fopen(to, "wb");
  fputs("\xff\xd8\xff\xe0 not a JPEG", f);
  fclose(f);
  const char *roots[] = {dir};
  ferry_index_options io;
  ferry_index_options_default(&io);
  io.on_error = count_error;
  io.threads = 2;
  ferry_index_stats st;
  CHECK_MSG(ferry_index_update(index, roots, 1, &io, &st) == FERRY_OK, "%s", ferry_last_error());
  ferry_catalog *disk = NULL;
  CHECK(ferry_catalog_load(index, &disk) == FERRY_OK);
  if (!disk)
    return;
  size_t n = ferry_catalog_size(disk);
  CHECK(n > 10);

  /* the same files hashed with ferry_hash_files, added in reverse order */
  ferry_hash_options ho;
  ferry_catalog_hash_options(disk, &ho);
  const char **paths = calloc(n + 1, sizeof *paths);
  ferry_hash_result *res = calloc(n + 1, sizeof *res);
  int *status = calloc(n + 1, sizeof *status);
  char **errs = calloc(n + 1, sizeof *errs);
  for (size_t i = 0; i < n; i++)
    paths[i] = ferry_catalog_get(disk, i)->path;
  ferry_hash_files_options run;
  ferry_hash_files_options_default(&run);
  run.threads = 2;
  CHECK(ferry_hash_files(paths, n, &ho, &run, res, status, errs, NULL) == FERRY_OK);
  ferry_catalog *mem = NULL;
  CHECK(ferry_catalog_new(&ho, &mem) == FERRY_OK);
  for (size_t k = n; mem && k-- > 0;) {
    struct stat sb;
    CHECK(stat(paths[k], &sb) == 0);
    ferry_catalog_entry e;
    memset(&e, 0, sizeof e);
    e.path = paths[k];
    e.size = (uint64_t)sb.st_size;
    e.mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    e.format = res[k].format;
    e.status = status[k];
    e.error = errs[k];
    if (!status[k]) {
      e.width = res[k].width;
      e.height = res[k].height;
      e.kinds = res[k].kinds;
      memcpy(e.hash, res[k].hash, sizeof e.hash);
      e.signature = res[k].kinds & FERRY_HASH_SIGNATURE ? &res[k].signature : NULL;
    }
    CHECK_MSG(ferry_catalog_add(mem, &e) == FERRY_OK, "%s", ferry_last_error());
  }
  if (!mem || ferry_catalog_size(mem) != n) {
    CHECK(0);
    goto out;
  }
  /* sorted on first use, from two threads at once */
  pthread_t t[2];
  reader_arg ra[2] = {{mem, 0}, {mem, 0}};
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, read_catalog, &ra[i]);
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    CHECK(ra[i].sorted);
  }
  for (size_t i = 0; i < n; i++) {
    const ferry_catalog_entry *a = ferry_catalog_get(disk, i), *b = ferry_catalog_get(mem, i);
    CHECK_MSG(!strcmp(a->path, b->path) && a->size == b->size && a->mtime_ns == b->mtime_ns &&
                  a->width == b->width && a->height == b->height && a->format == b->format &&
                  a->status == b->status && !strcmp(a->error, b->error) && a->kinds == b->kinds &&
                  !memcmp(a->hash, b->hash, sizeof a->hash),
              "entry %zu: %s / %s", i, a->path, b->path);
  }
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
    if (!(ho.kinds & FERRY_HASH_MASK(k)))
      continue;
    int bits = k == FERRY_HASH_COLORHASH ? 14 * ho.colorhash_bits : ho.hash_size * ho.hash_size;
    int thresholds[] = {0, ferry_dupes_default_threshold((ferry_hash_kind)k, ho.hash_size), bits};
    for (int t3 = 0; t3 < 3; t3++)
      same_dupes(disk, mem, (ferry_hash_kind)k, thresholds[t3]);
  }
  { /* the copies: one group each, the first path the keeper among equals
     * (by resolution and size: the default's "oldest" would pick the copy
     * made first) */
    ferry_dupes *d = NULL;
    CHECK(ferry_dupes_find(mem, FERRY_HASH_PHASH, NULL, &d) == FERRY_OK);
    CHECK(ferry_dupes_keep(d, "pixels,size", NULL, 0) == FERRY_OK);
    int groups_of_copies = 0;
    for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
      const uint32_t *m;
      size_t cnt = ferry_dupes_group(d, g, &m);
      const char *keeper = strrchr(ferry_catalog_get(mem, m[0])->path, '/') + 1;
      for (size_t k = 1; k < cnt; k++) {
        const char *other = strrchr(ferry_catalog_get(mem, m[k])->path, '/') + 1;
        if (!strncmp(other, "zcopy_", 6) && !strcmp(other + 6, keeper + 6)) {
          CHECK_MSG(!strncmp(keeper, "0copy_", 6), "keeper %s", keeper);
          groups_of_copies++;
        }
      }
    }
    CHECK_MSG(groups_of_copies == copies, "%d groups of copies", groups_of_copies);
    ferry_dupes_free(d);
  }
  {
    char out[8192];
    snprintf(out, sizeof out, "%s/mem.csv", tmp);
    CHECK(ferry_catalog_export(mem, out, "csv") == FERRY_OK);
  }

  /* what is refused, with a message; nothing added then */
  ferry_catalog_entry good = *ferry_catalog_get(mem, 0), e;
  for (size_t i = 0; i < n && good.status; i++)
    good = *ferry_catalog_get(mem, i);
  ferry_catalog *x = (ferry_catalog *)1;
  CHECK(ferry_catalog_new(&ho, NULL) == FERRY_EINVAL);
  ferry_hash_options bad = ho;
  bad.hash_size = 7;
  CHECK(ferry_catalog_new(&bad, &x) == FERRY_EINVAL && x == NULL);
  CHECK(strstr(ferry_last_error(), "hash size") != NULL);
  CHECK(ferry_catalog_add(NULL, &good) == FERRY_EINVAL);
  CHECK(ferry_catalog_add(mem, NULL) == FERRY_EINVAL);
  e = good;
  e.path = "";
  CHECK(ferry_catalog_add(mem, &e) == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "without a path") != NULL);
  CHECK(ferry_catalog_add(mem, &good) == FERRY_EINVAL); /* the same path again */
  CHECK(strstr(ferry_last_error(), "already in the catalog") != NULL);
  CHECK(strstr(ferry_last_error(), good.path) != NULL);
  e = good;
  e.path = "/new/one.jpg";
  e.hash[FERRY_HASH_PHASH].bits = 64;
  CHECK(ferry_catalog_add(mem, &e) == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "64-bit phash") != NULL);
  e = good;
  e.path = "/new/one.jpg";
  e.hash[FERRY_HASH_COLORHASH].w[0] |= 1ull << 63; /* past colorhash's 42 bits */
  CHECK(ferry_catalog_add(mem, &e) == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "bits set past") != NULL);
  e = good;
  e.path = "/new/one.jpg";
  e.status = FERRY_ECORRUPT;
  CHECK(ferry_catalog_add(mem, &e) == FERRY_EINVAL); /* failed, with hashes */
  e.status = 3;
  e.kinds = 0;
  CHECK(ferry_catalog_add(mem, &e) == FERRY_EINVAL);
  e = good;
  e.path = "/new/one.jpg";
  e.width = 0;
  CHECK(ferry_catalog_add(mem, &e) == FERRY_EINVAL);
  e.width = good.width;
  e.format = (ferry_format)99;
  CHECK(ferry_catalog_add(mem, &e) == FERRY_EINVAL);
  char *longp = malloc(70000);
  memset(longp, 'a', 69999);
  longp[0] = '/';
  longp[69999] = 0;
  e = good;
  e.path = longp;
  CHECK(ferry_catalog_add(mem, &e) == FERRY_ETOO_LARGE);
  free(longp);
  CHECK(ferry_catalog_size(mem) == n);
  { /* a catalog of one kind refuses the others */
    ferry_hash_options one = ho;
    one.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH);
    ferry_catalog *c1 = NULL;
    CHECK(ferry_catalog_new(&one, &c1) == FERRY_OK);
    CHECK(ferry_catalog_add(c1, &good) == FERRY_EINVAL);
    CHECK(strstr(ferry_last_error(), "leave out") != NULL);
    e = good;
    e.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH);
    CHECK(ferry_catalog_add(c1, &e) == FERRY_OK);
    ferry_dupes *d = NULL;
    CHECK(ferry_dupes_find(c1, FERRY_HASH_AHASH, NULL, &d) == FERRY_EINVAL && !d);
    ferry_catalog_free(c1);
  }
  /* a loaded catalog takes new paths, not its own again */
  e = good;
  e.path = "/zz/new.jpg";
  CHECK(ferry_catalog_add(disk, &e) == FERRY_OK);
  e.path = ferry_catalog_get(disk, 0)->path;
  CHECK(ferry_catalog_add(disk, &e) == FERRY_EINVAL);
  e.path = "/aa/new.jpg"; /* before the others: sorted again on the next read */
  CHECK(ferry_catalog_add(disk, &e) == FERRY_OK);
  CHECK(ferry_catalog_size(disk) == n + 2 &&
        !strcmp(ferry_catalog_get(disk, 0)->path, "/aa/new.jpg"));
  CHECK(!strcmp(ferry_catalog_get(disk, n + 1)->path, "/zz/new.jpg"));
  { /* defaults */
    ferry_catalog *c0 = NULL;
    CHECK(ferry_catalog_new(NULL, &c0) == FERRY_OK && ferry_catalog_size(c0) == 0);
    ferry_dupes *d = NULL;
    CHECK(ferry_dupes_find(c0, FERRY_HASH_PHASH, NULL, &d) == FERRY_OK);
    CHECK(ferry_dupes_group_count(d) == 0);
    ferry_dupes_free(d);
    ferry_catalog_free(c0);
  }
out:
  for (size_t i = 0; i < n; i++)
    free(errs[i]);
  free(errs);
  free(status);
  free(res);
  free(paths);
  ferry_catalog_free(mem);
  ferry_catalog_free(disk);
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/ferry_test_catalog_%d", (int)getpid());
  mkdir(tmp, 0755);
  int images = make_tree();
  CHECK_MSG(images > 10, "fixtures missing (%d): FERRY_FIXTURES=%s", images, check_fixtures());
  if (images <= 10)
    return check_done();
  test_records();
  test_update(images);
  test_log_callback();
  test_resume();
  test_export();
  test_dupes();
  test_dupes_clique();
  test_memory_catalog();
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp);
  return check_done();
}
