/* test_catalog_share.c — the share rule of a sharded run, in one place
 * (fy_share_rank: the outermost root, a root that is the file, no root) and
 * what a merge asks of each part (fy_share_check: every entry a canonical
 * path of its own rank; a part with any other is refused, named with the
 * first such entry and why). */
#include "catalog/catalog.h"
#include "check.h"

#include <string.h>

/* A partial catalog, rank `rank` of `world` over `roots`, of `paths`. */
static ferry_catalog *part(int rank, int world, const char *const *roots, int nroots,
                           const char *const *paths, int n) {
  ferry_hash_options ho;
  ferry_hash_options_default(&ho);
  ferry_catalog *c = fy_catalog_new(&ho);
  if (!c || fy_catalog_set_share(c, rank, world, roots, nroots) != FERRY_OK)
    return c;
  for (int i = 0; i < n; i++) {
    ferry_catalog_entry e;
    memset(&e, 0, sizeof e);
    e.path = paths[i];
    e.error = "failed";
    e.status = FERRY_EIO;
    if (fy_catalog_add(c, &e) != FERRY_OK)
      break;
  }
  return c;
}

static void test_rank(void) {
  const char *roots[] = {"/lib", "/lib/inner", "/one.jpg"};
  int w = 7;
  /* the outermost root that holds it, whatever the order of the roots */
  CHECK(fy_share_rank("/lib/inner/a.jpg", roots, 3, w) == ferry_index_rank_of("inner/a.jpg", w));
  const char *rev[] = {"/lib/inner", "/lib"};
  CHECK(fy_share_rank("/lib/inner/a.jpg", rev, 2, w) == ferry_index_rank_of("inner/a.jpg", w));
  /* a root that is the file: its name */
  CHECK(fy_share_rank("/one.jpg", roots, 3, w) == ferry_index_rank_of("one.jpg", w));
  /* no root holds it; a name that only begins like a root */
  CHECK(fy_share_rank("/etc/passwd", roots, 3, w) == -1);
  CHECK(fy_share_rank("/library/a.jpg", roots, 3, w) == -1);
}

/* A path under "/r" that falls to a rank other than `rank` of `w`. */
static void other_rank_path(int w, int rank, char *buf, size_t cap) {
  for (int i = 0;; i++) {
    snprintf(buf, cap, "/r/x%d.jpg", i);
    if (ferry_index_rank_of(buf + 3, w) != rank)
      return;
  }
}

static void test_check(void) {
  const char *roots[] = {"/r"};
  int w = 3;
  char own[64], own2[64], other[64];
  int i = 0;
  do
    snprintf(own, sizeof own, "/r/a%d.jpg", i++);
  while (ferry_index_rank_of(own + 3, w) != 1);
  do
    snprintf(own2, sizeof own2, "/r/sub/b%d.jpg", i++);
  while (ferry_index_rank_of(own2 + 3, w) != 1);
  other_rank_path(w, 1, other, sizeof other);

  const char *good[] = {own, own2};
  ferry_catalog *c = part(1, w, roots, 1, good, 2);
  CHECK(c && fy_share_check(c, "good.fidx") == FERRY_OK);
  ferry_catalog_free(c);

  /* another rank's file: named, with the rank it falls to */
  const char *mixed[] = {own, other};
  c = part(1, w, roots, 1, mixed, 2);
  CHECK(c && fy_share_check(c, "mixed.fidx") == FERRY_EINVAL);
  const char *m = ferry_last_error();
  char want[128];
  snprintf(want, sizeof want, "the first %s (it falls to rank %d)", other,
           ferry_index_rank_of(other + 3, w));
  CHECK_MSG(strstr(m, "mixed.fidx: rank 1 of 3 over /r") && strstr(m, want) &&
                strstr(m, "1 entry of other shares"),
            "%s", m);
  ferry_catalog_free(c);

  /* outside every root; a path that is not as ferry writes it */
  struct {
    const char *path, *why;
  } bad[] = {
      {"/etc/passwd", "under none of its roots"}, {"/r/../etc/passwd", "not a canonical path"},
      {"/r/./a.jpg", "not a canonical path"},     {"/r//a.jpg", "not a canonical path"},
      {"/r/sub/..", "not a canonical path"},      {"/r/a.jpg/", "not a canonical path"},
      {"r/a.jpg", "not a canonical path"}};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    const char *v[] = {own, bad[k].path};
    c = part(1, w, roots, 1, v, 2);
    int rc = c ? fy_share_check(c, "p.fidx") : -1;
    m = ferry_last_error();
    CHECK_MSG(rc == FERRY_EINVAL && strstr(m, bad[k].path) && strstr(m, bad[k].why), "%s: %s",
              bad[k].path, m);
    ferry_catalog_free(c);
  }

  /* a whole catalog has no share to hold to */
  const char *any[] = {"/etc/passwd"};
  c = part(0, 1, NULL, 0, any, 1);
  CHECK(c && fy_share_check(c, "whole.fidx") == FERRY_OK);
  ferry_catalog_free(c);
}

int main(void) {
  test_rank();
  test_check();
  return check_done();
}
