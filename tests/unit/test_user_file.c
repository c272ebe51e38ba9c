/* test_user_file.c — core/user_file.c: fy_open_regular refuses what is not
 * a regular file at once, by name and kind (a FIFO without a writer never
 * blocks the open); fy_out_guard refuses an output that is an input (the
 * same file by another name: a symbolic or hard link) or inside an input
 * folder (existing or not, by ".." or a link to the folder), and passes
 * everything else. */
#include "check.h"
#include "core/internal.h"
#include "core/user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void path_of(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", root, name);
}

static void touch(const char *name) {
  char p[512];
  path_of(p, sizeof p, name);
  FILE *f = fopen(p, "w");
  CHECK_MSG(f != NULL, "%s", p);
  if (f) {
    fputs("x", f);
    fclose(f);
  }
}

static void open_regular(void) {
  char file[512], fifo[512], dir[512];
  path_of(file, sizeof file, "a.jpg");
  path_of(fifo, sizeof fifo, "pipe.jpg");
  path_of(dir, sizeof dir, "in");
  CHECK(mkfifo(fifo, 0600) == 0);
  struct stat st;
  int fd = -2;
  CHECK(fy_open_regular(file, &st, &fd) == FERRY_OK && fd >= 0 && st.st_size == 1);
  CHECK(fd < 0 || !(fcntl(fd, F_GETFL) & O_NONBLOCK)); /* blocking reads again */
  if (fd >= 0)
    close(fd);
  struct {
    const char *path, *kind;
  } bad[] = {{fifo, "a FIFO"}, {dir, "a folder"}, {"/dev/zero", "a character device"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    double t0 = fy_now();
    int rc = fy_open_regular(bad[i].path, NULL, &fd);
    char want[600];
    snprintf(want, sizeof want, "%s: %s, not a regular file", bad[i].path, bad[i].kind);
    CHECK_MSG(rc == FERRY_EINVAL && fd == -1 && strstr(ferry_last_error(), want), "%s: %s",
              bad[i].path, ferry_last_error());
    CHECK(fy_now() - t0 < 1);
  }
  char none[512];
  path_of(none, sizeof none, "none.jpg");
  CHECK(fy_open_regular(none, NULL, &fd) == FERRY_EIO && fd == -1 &&
        strstr(ferry_last_error(), "none.jpg: cannot open: No such file"));
  FILE *f = fy_fopen_regular(fifo);
  CHECK(f == NULL && strstr(ferry_last_error(), "a FIFO"));
  f = fy_fopen_regular(file);
  CHECK(f != NULL && fgetc(f) == 'x');
  if (f)
    fclose(f);
}

/* fy_out_guard(out, input) gives want (1: refused, with `words` in the
 * message). */
static void guard(const char *out, const char *input, int want, const char *words) {
  char o[512], in[512];
  path_of(o, sizeof o, out);
  path_of(in, sizeof in, input);
  int rc = fy_out_guard(o, in);
  CHECK_MSG(want ? rc == FERRY_EINVAL && strstr(ferry_last_error(), words) : rc == FERRY_OK,
            "fy_out_guard(%s, %s) = %d: %s", out, input, rc, want ? ferry_last_error() : "");
}

static void out_guard(void) {
  char p[512], q[512];
  path_of(p, sizeof p, "a.jpg");
  path_of(q, sizeof q, "hard.jpg");
  CHECK(link(p, q) == 0);
  path_of(q, sizeof q, "soft.jpg");
  CHECK(symlink(p, q) == 0);
  path_of(p, sizeof p, "in");
  path_of(q, sizeof q, "in_link");
  CHECK(symlink(p, q) == 0);
  touch("in/b.jpg");
  touch("other.jpg");

  guard("a.jpg", "a.jpg", 1, "is the input");
  guard("hard.jpg", "a.jpg", 1, "is the input");
  guard("soft.jpg", "a.jpg", 1, "is the input");
  guard("other.jpg", "a.jpg", 0, NULL);
  guard("new.png", "a.jpg", 0, NULL);
  guard("in/b.jpg", "in", 1, "inside the input folder");
  guard("in/new.png", "in", 1, "inside the input folder");
  guard("in/x/y/new.png", "in", 1, "inside the input folder"); /* folders not made yet */
  guard("in_link/new.png", "in", 1, "inside the input folder");
  guard("in/../new.png", "in", 0, NULL);
  guard("x/../in/new.png", "in", 1, "inside the input folder");
  guard("in", "in", 1, "is the input"); /* an output folder equal to the input */
  guard("in/sub", "in", 1, "inside the input folder");
  guard("inner/new.png", "in", 0, NULL); /* a prefix of the name is not the folder */
  guard("new.png", "in", 0, NULL);
  guard("new.png", "gone", 0, NULL);                         /* its reader names a missing input */
  CHECK(fy_out_guard("/dev/null", "/dev/null") == FERRY_OK); /* written into, never replaced */
}

int main(void) {
  snprintf(root, sizeof root, "/tmp/ferry-user-file-XXXXXX");
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  char p[512];
  path_of(p, sizeof p, "in");
  CHECK(mkdir(p, 0755) == 0);
  touch("a.jpg");
  open_regular();
  out_guard();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", root);
  return check_done();
}
