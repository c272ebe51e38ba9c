/* test_catalog_follow.c — a catalog that follows its library (issue 19): a
 * folder moved and hashed under its new path keeps its hashes and is not
 * listed twice, a copy is not a move, ferry_index_prune drops vanished
 * entries atomically and refuses (changing nothing) while the catalog is
 * locked, ferry_catalog_drop_missing in memory, options.prune. */
#include "catalog/catalog.h"
#include "check.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[1024];

static void quiet(void *user, const char *path, int status, const char *msg) {
  (void)user, (void)path, (void)status, (void)msg;
}

/* dir/NAME: the fixture `from` with the mtime `t` (seconds). */
static void put(const char *dir, const char *name, const char *from, time_t t) {
  char src[4096], dst[4096];
  snprintf(src, sizeof src, "%s/hash/%s", check_fixtures(), from);
  snprintf(dst, sizeof dst, "%s/%s", dir, name);
  size_t n;
  void *d = check_slurp(src, &n);
  FILE *f = d ? fopen(dst, "wb") : NULL;
  if (f) {
    fwrite(d, 1, n, f);
    fclose(f);
  }
  free(d);
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  utimensat(AT_FDCWD, dst, ts, 0);
}

static int update(const char *idx, const char *root, int prune, ferry_index_stats *st) {
  ferry_index_options o;
  ferry_index_options_default(&o);
  o.threads = 2;
  o.on_error = quiet;
  o.prune = prune;
  o.hash.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH);
  return ferry_index_update(idx, &root, 1, &o, st);
}

static size_t count_under(const char *idx, const char *root) {
  ferry_catalog *c;
  if (ferry_catalog_load(idx, &c))
    return (size_t)-1;
  size_t n = 0;
  for (size_t i = 0; i < ferry_catalog_size(c); i++)
    n += fy_path_under(ferry_catalog_get(c, i)->path, root);
  ferry_catalog_free(c);
  return n;
}

static void test_moved_folder(void) {
  char a[2048], b[2048], idx[2048], ra[4096], rb[4200];
  snprintf(a, sizeof a, "%s/a", tmp);
  snprintf(b, sizeof b, "%s/b", tmp);
  snprintf(idx, sizeof idx, "%s/m.fidx", tmp);
  mkdir(a, 0755);
  put(a, "one.jpg", "rgb420.jpg", 1000000000);
  put(a, "two.png", "palette.png", 1000000001);
  put(a, "three.jpg", "rgb444.jpg", 1000000002);
  ferry_index_stats st;
  CHECK_MSG(update(idx, a, 0, &st) == FERRY_OK, "%s", ferry_last_error());
  CHECK(st.hashed == 3);
  CHECK(rename(a, b) == 0);
  CHECK_MSG(update(idx, b, 0, &st) == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(st.moved == 3 && st.hashed == 0 && st.kept == 0 && st.files == 3,
            "moved %zu hashed %zu kept %zu files %zu", st.moved, st.hashed, st.kept, st.files);
  CHECK(realpath(tmp, ra) != NULL);
  snprintf(rb, sizeof rb, "%s/b", ra);
  snprintf(ra + strlen(ra), sizeof ra - strlen(ra), "/a");
  CHECK(count_under(idx, rb) == 3);
  CHECK(count_under(idx, ra) == 0); /* not listed twice */

  /* a copy that keeps times is not a move: the original is still there */
  char c[2048], cmd[8192];
  snprintf(c, sizeof c, "%s/c", tmp);
  snprintf(cmd, sizeof cmd, "cp -rp '%s' '%s'", b, c);
  CHECK(system(cmd) == 0);
  CHECK_MSG(update(idx, c, 0, &st) == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(st.moved == 0 && st.hashed == 3 && st.kept == 3, "moved %zu hashed %zu kept %zu",
            st.moved, st.hashed, st.kept);

  /* a file of another mtime under the same name is hashed, not taken */
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", c);
  CHECK(system(cmd) == 0);
  mkdir(c, 0755);
  put(c, "one.jpg", "rgb420.jpg", 1000000099);
  CHECK_MSG(update(idx, c, 0, &st) == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(st.moved == 0 && st.hashed == 1, "moved %zu hashed %zu", st.moved, st.hashed);
}

static void test_prune(void) {
  char d[2048], idx[2048], p[4096];
  snprintf(d, sizeof d, "%s/p", tmp);
  snprintf(idx, sizeof idx, "%s/p.fidx", tmp);
  mkdir(d, 0755);
  put(d, "x.jpg", "rgb420.jpg", 1100000000);
  put(d, "y.jpg", "rgb444.jpg", 1100000001);
  ferry_index_stats st;
  CHECK_MSG(update(idx, d, 0, &st) == FERRY_OK, "%s", ferry_last_error());
  size_t removed = 99;
  CHECK(ferry_index_prune(idx, &removed) == FERRY_OK && removed == 0);
  snprintf(p, sizeof p, "%s/x.jpg", d);
  unlink(p);

  /* in memory */
  ferry_catalog *c;
  CHECK(ferry_catalog_load(idx, &c) == FERRY_OK);
  CHECK(ferry_catalog_size(c) == 2);
  CHECK(ferry_catalog_drop_missing(c, &removed) == FERRY_OK && removed == 1);
  CHECK(ferry_catalog_size(c) == 1 && strstr(ferry_catalog_get(c, 0)->path, "/y.jpg"));
  ferry_catalog_free(c);

  /* locked by a running update: refused, the file untouched */
  size_t n0, n1;
  void *before = check_slurp(idx, &n0);
  snprintf(p, sizeof p, "%s.journal", idx);
  int fd = open(p, O_RDWR | O_CREAT, 0644);
  CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0);
  CHECK(ferry_index_prune(idx, &removed) == FERRY_ESTATE);
  void *after = check_slurp(idx, &n1);
  CHECK(before && after && n0 == n1 && !memcmp(before, after, n0));
  free(after);
  close(fd);
  unlink(p);

  CHECK_MSG(ferry_index_prune(idx, &removed) == FERRY_OK, "%s", ferry_last_error());
  CHECK(removed == 1);
  CHECK(access(p, F_OK) != 0); /* the lock's empty journal is not left behind */
  CHECK(ferry_catalog_load(idx, &c) == FERRY_OK);
  CHECK(ferry_catalog_size(c) == 1);
  ferry_catalog_free(c);
  free(before);

  /* a catalog that does not load: an error naming it, nothing written */
  snprintf(p, sizeof p, "%s/none.fidx", tmp);
  CHECK(ferry_index_prune(p, &removed) != FERRY_OK && strstr(ferry_last_error(), "none.fidx"));
  CHECK(access(p, F_OK) != 0);

  /* options.prune: entries outside the roots whose files are gone */
  char e[2048];
  snprintf(e, sizeof e, "%s/e", tmp);
  mkdir(e, 0755);
  put(e, "z.jpg", "palette.png", 1100000002);
  CHECK(update(idx, e, 0, &st) == FERRY_OK && st.kept == 1);
  snprintf(p, sizeof p, "%s/y.jpg", d);
  unlink(p);
  CHECK(update(idx, e, 0, &st) == FERRY_OK && st.kept == 1 && st.pruned == 0);
  CHECK(update(idx, e, 1, &st) == FERRY_OK && st.kept == 0 && st.pruned == 1);
  CHECK(ferry_catalog_load(idx, &c) == FERRY_OK);
  CHECK(ferry_catalog_size(c) == 1);
  ferry_catalog_free(c);
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/ferry_test_follow_%d", (int)getpid());
  mkdir(tmp, 0755);
  test_moved_folder();
  test_prune();
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp);
  return check_done();
}
