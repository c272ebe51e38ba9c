/* test_source.c — the loader's list of samples from a folder: a file or
 * folder whose path does not fit (4,096 bytes and more) is left out with a
 * warning naming it, and the rest is listed (it was skipped silently). */
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

int main(void) {
  test_long_paths();
  return check_done();
}
