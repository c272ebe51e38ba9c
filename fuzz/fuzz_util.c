/* fuzz_util.c — see fuzz_util.h. */
#include "fuzz_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[4096];

/* Empties and removes the scratch directory (flat: the harnesses write
 * plain files only). */
static void cleanup(void) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[8192];
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

const char *fuzz_tmpdir(void) {
  if (!dir[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/ferry-fuzz-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) {
      perror("fuzz: mkdtemp");
      abort();
    }
    atexit(cleanup);
  }
  return dir;
}

void fuzz_write(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}
