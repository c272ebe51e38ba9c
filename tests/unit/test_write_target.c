/* test_write_target.c — where the image writers' bytes go (core/out_file.c):
 * ferry_write_png and fy_write_jpeg into a FIFO write into it (a reader
 * thread drains it) and leave it a FIFO, where a rename would have put a
 * regular file in its place; into a regular file they replace it whole and
 * leave no temporary behind; a failed write leaves the old file as it was. */
#include "check.h"
#include "codec/jpeg_write.h"
#include "core/internal.h"
#include "core/out_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct drain {
  const char *path;
  unsigned char *data;
  size_t size;
  int ok;
} drain;

/* Opens the FIFO for reading (which lets the writer's open go on) and reads
 * it to its end. */
static void *drain_run(void *arg) {
  drain *d = arg;
  int fd = open(d->path, O_RDONLY);
  if (fd < 0)
    return NULL;
  size_t cap = 1 << 16;
  d->data = malloc(cap);
  for (;;) {
    if (d->size == cap) {
      unsigned char *p = realloc(d->data, cap *= 2);
      if (!p)
        break;
      d->data = p;
    }
    ssize_t n = read(fd, d->data + d->size, cap - d->size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      d->ok = n == 0;
      break;
    }
    d->size += (size_t)n;
  }
  close(fd);
  return NULL;
}

static ferry_image pattern(int w, int h, int c) {
  ferry_image im = {0};
  im.width = w, im.height = h, im.channels = c, im.stride = (size_t)w * c;
  im.data = malloc(im.stride * h);
  for (size_t i = 0; i < im.stride * h; i++)
    im.data[i] = (uint8_t)(i * 7 + i / 13);
  return im;
}

static int is_fifo(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* Names in dir other than . and .. */
static int entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d)
    closedir(d);
  return n;
}

/* which: 0 PNG, 1 JPEG */
static int write_image(int which, const char *path, const ferry_image *im) {
  return which ? fy_write_jpeg(path, im, 90) : ferry_write_png(path, im);
}

static void fifo_case(const char *dir, int which, const ferry_image *im) {
  char path[4096];
  snprintf(path, sizeof path, "%s/out-%d", dir, which);
  if (mkfifo(path, 0600) != 0) {
    SKIP("mkfifo %s: %s", path, strerror(errno));
    return;
  }
  drain d = {.path = path};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, drain_run, &d) == 0);
  int rc = write_image(which, path, im);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  pthread_join(t, NULL);
  CHECK_MSG(is_fifo(path), "%s: no longer a FIFO", path);
  CHECK(d.ok);
  CHECK(d.size > 4 && !memcmp(d.data, which ? "\xff\xd8\xff" : "\x89PNG", which ? 3 : 4));
  ferry_image back = {0};
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  o.channels = im->channels;
  rc = d.size ? ferry_decode(d.data, d.size, "fifo", &o, &back) : FERRY_ECORRUPT;
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  if (rc == FERRY_OK) {
    CHECK(back.width == im->width && back.height == im->height);
    if (!which) { /* PNG is lossless: the same pixels */
      int same = 1;
      for (int y = 0; y < im->height; y++)
        same &= !memcmp(back.data + y * back.stride, im->data + y * im->stride,
                        (size_t)im->width * im->channels);
      CHECK(same);
    }
    ferry_image_free(&back);
  }
  free(d.data);
  CHECK(entries(dir) == 1); /* the FIFO alone: no temporary beside it */
  unlink(path);
}

static void file_case(const char *dir, int which, const ferry_image *im) {
  char path[4096];
  snprintf(path, sizeof path, "%s/out-%d.img", dir, which);
  FILE *f = fopen(path, "wb");
  CHECK(f && fputs("old contents", f) >= 0);
  if (f)
    fclose(f);
  CHECK_MSG(write_image(which, path, im) == FERRY_OK, "%s", ferry_last_error());
  ferry_info info;
  CHECK_MSG(ferry_probe_file(path, &info) == FERRY_OK, "%s", ferry_last_error());
  CHECK(info.width == im->width && info.height == im->height);
  CHECK(entries(dir) == 1);
  /* a failed write (4 channels: JPEG refuses; an image without data: PNG)
   * leaves the file as it was */
  ferry_image bad = *im;
  if (which)
    bad.channels = 4;
  else
    bad.data = NULL;
  struct stat before, after;
  CHECK(stat(path, &before) == 0);
  CHECK(write_image(which, path, &bad) != FERRY_OK);
  CHECK(stat(path, &after) == 0 && after.st_size == before.st_size &&
        after.st_ino == before.st_ino);
  CHECK(entries(dir) == 1);
  unlink(path);
}

/* fy_out_open/fy_out_close themselves: the temporary is removed when the
 * caller says its writes failed, and a missing folder is named. */
static void helper_case(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/helper.bin", dir);
  fy_out_file o;
  CHECK(fy_out_open(&o, path) == FERRY_OK && !o.direct);
  CHECK(fputs("half", o.f) >= 0);
  CHECK(fy_out_close(&o, ENOSPC) == ENOSPC);
  CHECK(access(path, F_OK) != 0 && entries(dir) == 0);
  CHECK(fy_out_open(&o, path) == FERRY_OK);
  CHECK(fputs("whole", o.f) >= 0);
  CHECK(fy_out_close(&o, 0) == 0);
  size_t n = 0;
  char *got = check_slurp(path, &n);
  CHECK(got && n == 5 && !memcmp(got, "whole", 5));
  free(got);
  unlink(path);
  CHECK(!fy_out_in_place(path));
  CHECK(!fy_out_in_place(dir));
  snprintf(path, sizeof path, "%s/no/such/folder/x.png", dir);
  CHECK(fy_out_open(&o, path) == FERRY_EIO);
  CHECK(strstr(ferry_last_error(), "cannot create") != NULL);
}

int main(void) {
  alarm(120); /* a writer that replaced the FIFO leaves the reader's open blocked: fail, not hang */
  char dir[] = "/tmp/ferry-write-target-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  ferry_image rgb = pattern(37, 23, 3), grey = pattern(16, 9, 1);
  fifo_case(dir, 0, &rgb);
  fifo_case(dir, 0, &grey);
  fifo_case(dir, 1, &rgb);
  file_case(dir, 0, &rgb);
  file_case(dir, 1, &grey);
  helper_case(dir);
  free(rgb.data);
  free(grey.data);
  rmdir(dir);
  return check_done();
}
