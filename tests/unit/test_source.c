/* test_source.c — the loader's list of samples from a folder: a file or
 * folder whose path does not fit (4,096 bytes and more) is left out with a
 * warning naming it, and the rest is listed (it was skipped silently);
 * entries are told apart by readdir's type and, for symbolic links, by
 * stat: links to folders (a class among them) and to images are followed,
 * a folder named like an image is walked; a dangling link is listed, as
 * before (its read fails, naming it). */
#include "check.h"
#include "io/source.h"

#include <fcntl.h>
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

static void touch_at(int dir, const char *name) {
  int f = openat(dir, name, O_CREAT | O_WRONLY | O_TRUNC, 0600);
  if (f >= 0)
    close(f);
}

static void test_long_paths(void) {
  char root[] = "/tmp/ferry-longpath-XXXXXX", path[4200];
  if (!mkdtemp(root)) {
    SKIP("no temporary directory");
    return;
  }
  snprintf(path, sizeof path, "%s/cats", root);
  CHECK(mkdir(path, 0700) == 0);
  int fd = open(path, O_RDONLY | O_DIRECTORY);
  CHECK(fd >= 0);
  touch_at(fd, "ok.jpg");
  /* 17 folders of 250-byte names below it: past 4,096 bytes on the way */
  char name[251];
  memset(name, 'd', 250);
  name[250] = '\0';
  for (int i = 0; i < 17 && fd >= 0; i++) {
    CHECK(mkdirat(fd, name, 0700) == 0);
    int next = openat(fd, name, O_RDONLY | O_DIRECTORY);
    close(fd);
    fd = next;
  }
  if (fd >= 0) {
    touch_at(fd, "deep.jpg");
    close(fd);
  }
  logged[0] = '\0';
  ferry_set_log(keep_log, NULL);
  fy_source s;
  memset(&s, 0, sizeof s);
  int rc = fy_source_open(&s, root);
  ferry_set_log(NULL, NULL);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(s.count == 1 && strstr(fy_source_path(&s, 0), "/cats/ok.jpg"), "%lld samples listed",
            (long long)s.count);
  CHECK_MSG(strstr(logged, "skipped (the path is longer than 4095 bytes): /tmp/ferry-longpath-"),
            "log: %.300s", logged);
  fy_source_free(&s);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
}

static void test_entry_types(void) {
  char root[] = "/tmp/ferry-types-XXXXXX", p[4200], q[4200];
  if (!mkdtemp(root)) {
    SKIP("no temporary directory");
    return;
  }
  const char *dirs[] = {"a", "b", "elsewhere", "elsewhere/deep", "a/looks.jpg"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
    CHECK(mkdir(p, 0700) == 0);
  }
  const char *files[] = {"a/1.jpg",         "a/looks.jpg/2.png",
                         "elsewhere/3.jpg", "elsewhere/deep/4.jpg",
                         "b/notes.txt",     "top.jpg"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", root, files[i]);
    touch_at(AT_FDCWD, p);
  }
  /* links: a class folder (c -> elsewhere), a folder inside a class, an
   * image, and one that points nowhere */
  const char *links[][2] = {{"elsewhere", "c"},
                            {"../elsewhere/deep", "b/linked"},
                            {"../elsewhere/3.jpg", "b/5.jpg"},
                            {"missing.jpg", "b/6.jpg"}};
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
    snprintf(q, sizeof q, "%s/%s", root, links[i][1]);
    CHECK(symlink(links[i][0], q) == 0);
  }
  fy_source s;
  memset(&s, 0, sizeof s);
  ferry_set_log(keep_log, NULL);
  int rc = fy_source_open(&s, root);
  ferry_set_log(NULL, NULL);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  static const struct {
    const char *tail;
    int label;
  } want[] = {{"/a/1.jpg", 0},      {"/a/looks.jpg/2.png", 0}, {"/b/5.jpg", 1},
              {"/b/6.jpg", 1},      {"/b/linked/4.jpg", 1},    {"/c/3.jpg", 2},
              {"/c/deep/4.jpg", 2}, {"/elsewhere/3.jpg", 3},   {"/elsewhere/deep/4.jpg", 3},
              {"/top.jpg", -1}};
  size_t nw = sizeof want / sizeof want[0];
  CHECK_MSG(rc == FERRY_OK && s.count == (int64_t)nw, "%lld samples, want %zu", (long long)s.count,
            nw);
  for (size_t i = 0; rc == FERRY_OK && i < nw && (int64_t)i < s.count; i++) {
    const char *path = fy_source_path(&s, (int64_t)i);
    size_t lp = strlen(path), lt = strlen(want[i].tail);
    CHECK_MSG(lp > lt && !strcmp(path + lp - lt, want[i].tail) && s.labels[i] == want[i].label,
              "sample %zu: %s (label %d), want ...%s (label %d)", i, path, (int)s.labels[i],
              want[i].tail, want[i].label);
  }
  if (rc == FERRY_OK)
    fy_source_free(&s);
  snprintf(p, sizeof p, "rm -rf '%s'", root);
  CHECK(system(p) == 0);
}

int main(void) {
  test_long_paths();
  test_entry_types();
  return check_done();
}
