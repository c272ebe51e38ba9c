/* test_moves.c — the library's side of `ferry dupes` moves (issue 52): the
 * keeper's camera check opens no file unless the keep rule asks for it, and
 * never waits on a FIFO (item 18); the catalog walk hides only the files a
 * move destination's log lists as moved there, never a user's own photos in
 * that folder (item 14). The moves themselves: tests/python/test_moves.py. */
#include "catalog/catalog.h"
#include "catalog/dupes.h"
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[1024];

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_moves: stuck (a FIFO waited on?): FAILED\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

/* A catalog of `n` JPEG entries with one hash (one group), at paths[]. */
static ferry_catalog *group_of(const char *const *paths, int n) {
  ferry_hash_options ho;
  ferry_hash_options_default(&ho);
  ho.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH);
  ferry_catalog *c = NULL;
  CHECK(ferry_catalog_new(&ho, &c) == FERRY_OK);
  for (int i = 0; c && i < n; i++) {
    ferry_catalog_entry e;
    memset(&e, 0, sizeof e);
    e.path = paths[i];
    e.size = 5000 + (uint64_t)i;
    e.mtime_ns = 1600000000000000000LL + i;
    e.format = FERRY_FORMAT_JPEG;
    e.error = "";
    e.width = e.height = 64;
    e.kinds = ho.kinds;
    e.hash[FERRY_HASH_PHASH].bits = ho.hash_size * ho.hash_size;
    e.hash[FERRY_HASH_PHASH].w[0] = 0x0123456789abcdefULL;
    CHECK_MSG(ferry_catalog_add(c, &e) == FERRY_OK, "%s", ferry_last_error());
  }
  return c;
}

static ferry_dupes *find(ferry_catalog *c) {
  ferry_search_options so;
  ferry_search_options_default(&so);
  so.threshold = 4;
  so.robust = 0;
  ferry_dupes *d = NULL;
  CHECK_MSG(ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d) == FERRY_OK, "%s", ferry_last_error());
  return d;
}

/* Item 18: --keep path reads no file (the default order is not applied
 * before it); the default order meets a FIFO and goes on. */
static void test_keeper_reads_only_when_asked(void) {
  char a[1100], b[1100], fifo[1100];
  snprintf(a, sizeof a, "%s/a.jpg", tmp);
  snprintf(b, sizeof b, "%s/b.jpg", tmp);
  snprintf(fifo, sizeof fifo, "%s/c.jpg", tmp);
  CHECK(mkfifo(fifo, 0644) == 0);
  const char *paths[] = {a, b, fifo};
  alarm(20); /* no step may wait on the FIFO */
  ferry_catalog *c = group_of(paths, 3);
  ferry_dupes *d = c ? find(c) : NULL;
  if (d) {
    CHECK(ferry_dupes_keep(d, "path", NULL, 0) == FERRY_OK);
    const uint32_t *m;
    CHECK(ferry_dupes_group_count(d) == 1 && ferry_dupes_group(d, 0, &m) == 3);
    CHECK(!strcmp(ferry_catalog_get(c, m[0])->path, a));
    CHECK_MSG(d->camera == NULL, "--keep path read the files for the camera check");
    CHECK(ferry_dupes_keep(d, NULL, NULL, 0) == FERRY_OK); /* the default: original first */
    CHECK(ferry_dupes_group(d, 0, &m) == 3);
    CHECK(d->camera != NULL); /* the default does read them */
    /* none is a camera's JPEG (a.jpg and b.jpg do not exist, c.jpg is a FIFO): size decides */
    CHECK(!strcmp(ferry_catalog_get(c, m[0])->path, fifo));
  }
  ferry_dupes_free(d);
  /* a ferry_dupes_find alone (no ferry_dupes_keep) still gets the default order */
  d = c ? find(c) : NULL;
  if (d) {
    const uint32_t *m;
    CHECK(ferry_dupes_group(d, 0, &m) == 3 && !strcmp(ferry_catalog_get(c, m[0])->path, fifo));
  }
  alarm(0);
  ferry_dupes_free(d);
  ferry_catalog_free(c);
  unlink(fifo);
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static int found(const fy_found_list *l, const char *path) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i].path, path))
      return 1;
  return 0;
}

/* Item 14: a move destination inside the library hides what its log lists
 * as moved there (also after the folder was renamed: the mirrored path),
 * never its other files, nor anything outside it its log names. */
static void test_walk_hides_only_what_was_moved(void) {
  char lib[1100], dest[5000], p[6000], real[4096];
  snprintf(lib, sizeof lib, "%s/lib", tmp);
  CHECK(mkdir(lib, 0755) == 0);
  CHECK(realpath(lib, real) != NULL);
  snprintf(dest, sizeof dest, "%s/dest", real);
  CHECK(mkdir(dest, 0755) == 0);
  snprintf(p, sizeof p, "%s/dest/own.jpg", real);
  put(p, "mine");
  snprintf(p, sizeof p, "%s/top.jpg", real);
  put(p, "top");
  /* moved there as DEST + its absolute path /x/a.jpg, and as OLD_DEST + /x/b.jpg */
  snprintf(p, sizeof p, "%s/x", dest);
  CHECK(mkdir(p, 0755) == 0);
  snprintf(p, sizeof p, "%s/x/a.jpg", dest);
  put(p, "a");
  snprintf(p, sizeof p, "%s/x/b.jpg", dest);
  put(p, "b");
  snprintf(p, sizeof p, "%s/x/c.jpg", dest);
  put(p, "c, the user's own");
  char log[16384], lp[5100];
  snprintf(log, sizeof log,
           "from,to,run\n/x/a.jpg,%s/x/a.jpg,r1\n/x/b.jpg,/old/place/x/b.jpg,r1\n"
           "/elsewhere.jpg,%s/top.jpg,crafted\n",
           dest, real);
  snprintf(lp, sizeof lp, "%s/" FY_MOVES_LOG, dest);
  put(lp, log);
  fy_found_list l;
  char **canon = NULL;
  const char *roots[] = {lib};
  CHECK_MSG(fy_scan(roots, 1, 1, 0, &l, &canon) == FERRY_OK, "%s", ferry_last_error());
  snprintf(p, sizeof p, "%s/own.jpg", dest);
  CHECK_MSG(found(&l, p), "the user's own photo in a move destination left out");
  snprintf(p, sizeof p, "%s/x/c.jpg", dest);
  CHECK_MSG(found(&l, p), "a photo the log does not list left out");
  snprintf(p, sizeof p, "%s/top.jpg", real);
  CHECK_MSG(found(&l, p), "a file outside the destination hidden by its log");
  snprintf(p, sizeof p, "%s/x/a.jpg", dest);
  CHECK_MSG(!found(&l, p), "a moved file hashed back in");
  snprintf(p, sizeof p, "%s/x/b.jpg", dest);
  CHECK_MSG(!found(&l, p), "a file moved before the folder was renamed hashed back in");
  CHECK(l.n == 3 && l.skipped_moves == 1);
  fy_found_free(&l);
  free(canon[0]);
  free(canon);
  /* named as a root, the destination is walked whole */
  const char *droots[] = {dest};
  CHECK(fy_scan(droots, 1, 1, 0, &l, &canon) == FERRY_OK);
  CHECK(l.n == 4 && l.skipped_moves == 0);
  fy_found_free(&l);
  free(canon[0]);
  free(canon);
}

int main(void) {
  signal(SIGALRM, on_alarm);
  snprintf(tmp, sizeof tmp, "/tmp/ferry_test_moves_XXXXXX");
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_keeper_reads_only_when_asked();
  test_walk_hides_only_what_was_moved();
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp);
  return check_done();
}
