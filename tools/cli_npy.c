/* cli_npy.c — `ferry load --save OUT.npy`: the batches of an epoch into one
 * NumPy .npy file (NPY format 1.0: magic, header dict, raw C-order data)
 * and their labels into OUT.labels.npy, written under temporary names and
 * renamed once complete; the header's sample count is written last (its
 * field is padded so that the data never moves). */
#include "cli_npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define NPY_HEADER 128 /* magic + length + dict, padded: room for any shape */

struct cli_npy {
  FILE *img, *lab;
  char *path, *lpath, *tmp, *ltmp;
  const char *descr;
  int dims[3]; /* the sample's shape */
  long long count;
  int failed;
};

static char *concat(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 1;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s%s", a, b);
  return s;
}

/* The header for `count` samples, NPY_HEADER bytes, at the file's start. */
static int write_header(FILE *f, const char *descr, long long count, const int *dims, int nd) {
  char dict[NPY_HEADER];
  int n;
  if (nd == 3)
    n = snprintf(dict, sizeof dict,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, %d, "
                 "%d, %d), }",
                 descr, count, dims[0], dims[1], dims[2]);
  else
    n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld,), }",
                 descr, count);
  int room = NPY_HEADER - 10; /* magic 6, version 2, length 2 */
  if (n < 0 || n >= room)
    return -1;
  memset(dict + n, ' ', (size_t)(room - n - 1));
  dict[room - 1] = '\n';
  unsigned char head[10] = {0x93,
                            'N',
                            'U',
                            'M',
                            'P',
                            'Y',
                            1,
                            0,
                            (unsigned char)(room & 0xff),
                            (unsigned char)(room >> 8)};
  if (fseek(f, 0, SEEK_SET) != 0 || fwrite(head, 1, sizeof head, f) != sizeof head ||
      fwrite(dict, 1, (size_t)room, f) != (size_t)room)
    return -1;
  return 0;
}

static const char *descr_of(ferry_dtype t) {
  return t == FERRY_U8 ? "|u1" : t == FERRY_F16 ? "<f2" : "<f4";
}

int cli_npy_check_path(const char *cmd, const char *path) {
  size_t n = strlen(path);
  if (n < 5 || strcmp(path + n - 4, ".npy"))
    return cli_usage_error(cmd, "--save %s: the file name must end in .npy", path);
  return CLI_OK;
}

char *cli_npy_labels_path(const char *path) {
  char *stem = strndup(path, strlen(path) - 4);
  char *l = stem ? concat(stem, ".labels.npy") : NULL;
  free(stem);
  return l;
}

/* CLI_OK when the file system of `path` has room for `need` bytes (or
 * cannot tell); else CLI_FAIL, said. */
static int check_room(const char *cmd, const char *path, unsigned long long need) {
  char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
  if (!dir)
    return CLI_OK;
  if (slash)
    slash[slash == dir] = '\0'; /* "/x.npy": the root */
  struct statvfs v;
  int known = statvfs(slash ? dir : ".", &v) == 0;
  free(dir);
  unsigned long long room = known ? (unsigned long long)v.f_bavail * v.f_frsize : 0;
  if (!known || room >= need)
    return CLI_OK;
  fprintf(stderr,
          "ferry %s: %s: needs %llu MB, its file system has %llu MB free (nothing written)\n", cmd,
          path, (need + 999999) / 1000000, room / 1000000);
  return CLI_FAIL;
}

cli_npy *cli_npy_open(const char *cmd, const char *path, const ferry_loader_options *o,
                      int64_t samples) {
  unsigned long long per = (unsigned long long)o->width * (unsigned long long)o->height * 3 *
                           (o->dtype == FERRY_U8    ? 1
                            : o->dtype == FERRY_F16 ? 2
                                                    : 4);
  if (check_room(cmd, path,
                 2 * NPY_HEADER + (unsigned long long)(samples > 0 ? samples : 0) * (per + 8)))
    return NULL;
  cli_npy *w = calloc(1, sizeof *w);
  if (!w)
    return NULL;
  w->path = strdup(path);
  w->lpath = cli_npy_labels_path(path);
  char suffix[32];
  snprintf(suffix, sizeof suffix, ".tmp%ld", (long)getpid());
  w->tmp = w->path ? concat(w->path, suffix) : NULL;
  w->ltmp = w->lpath ? concat(w->lpath, suffix) : NULL;
  w->descr = descr_of(o->dtype);
  if (o->layout == FERRY_LAYOUT_CHW)
    w->dims[0] = 3, w->dims[1] = o->height, w->dims[2] = o->width;
  else
    w->dims[0] = o->height, w->dims[1] = o->width, w->dims[2] = 3;
  if (!w->path || !w->lpath || !w->tmp || !w->ltmp) {
    fprintf(stderr, "ferry %s: out of memory\n", cmd);
    cli_npy_abort(w);
    return NULL;
  }
  w->img = fopen(w->tmp, "wb");
  w->lab = w->img ? fopen(w->ltmp, "wb") : NULL;
  if (!w->img || !w->lab || write_header(w->img, w->descr, 0, w->dims, 3) ||
      write_header(w->lab, "<i8", 0, NULL, 1)) {
    fprintf(stderr, "ferry %s: %s: cannot write: %s\n", cmd, w->img ? w->ltmp : w->tmp,
            strerror(errno));
    cli_npy_abort(w);
    return NULL;
  }
  return w;
}

int cli_npy_write(cli_npy *w, const ferry_batch *b) {
  if (w->failed)
    return -1;
  if (fwrite(b->data, 1, b->nbytes, w->img) != b->nbytes) {
    w->failed = errno ? errno : EIO;
    return -1;
  }
  for (int i = 0; i < b->count; i++) {
    int64_t v = b->labels[i];
    if (fwrite(&v, sizeof v, 1, w->lab) != 1) {
      w->failed = errno ? errno : EIO;
      return -1;
    }
  }
  w->count += b->count;
  return 0;
}

int cli_npy_close(const char *cmd, cli_npy *w) {
  int bad = w->failed;
  if (!bad && (write_header(w->img, w->descr, w->count, w->dims, 3) ||
               write_header(w->lab, "<i8", w->count, NULL, 1)))
    bad = errno ? errno : EIO;
  FILE *img = w->img, *lab = w->lab;
  w->img = w->lab = NULL;
  if (fclose(img) != 0 && !bad)
    bad = errno ? errno : EIO;
  if (fclose(lab) != 0 && !bad)
    bad = errno ? errno : EIO;
  int moved = 0;
  if (!bad && (moved = rename(w->tmp, w->path) == 0) == 0)
    bad = errno;
  if (!bad && rename(w->ltmp, w->lpath) != 0)
    bad = errno;
  if (bad) {
    fprintf(stderr, "ferry %s: %s: cannot write: %s (nothing written kept)\n", cmd,
            moved ? w->lpath : w->path, strerror(bad));
    if (moved) /* images without their labels: not left behind */
      unlink(w->path);
  } else {
    fprintf(stderr, "ferry %s: wrote %s (%lld samples) and %s\n", cmd, w->path, w->count, w->lpath);
  }
  cli_npy_abort(w);
  return bad ? CLI_FAIL : CLI_OK;
}

void cli_npy_abort(cli_npy *w) {
  if (!w)
    return;
  if (w->img)
    fclose(w->img);
  if (w->lab)
    fclose(w->lab);
  if (w->tmp)
    unlink(w->tmp);
  if (w->ltmp)
    unlink(w->ltmp);
  free(w->path);
  free(w->lpath);
  free(w->tmp);
  free(w->ltmp);
  free(w);
}
