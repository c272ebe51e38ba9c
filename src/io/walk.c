/* walk.c — directory listing and the image-name rule shared by every walk
 * (walk.h). */
#include "io/walk.h"

#include "core/internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int fy_is_image_name(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot || name[0] == '.')
    return 0;
  /* the list FY_IMAGE_EXTENSIONS (walk.h) names in messages */
  static const char *const ext[] = {".jpg",  ".jpeg", ".png", ".webp", ".jpe",  ".jfif",
                                    ".tif",  ".tiff", ".gif", ".heic", ".heif", ".hif",
                                    ".avif", ".bmp",  ".dng", ".cr2",  ".cr3",  ".nef",
                                    ".arw",  ".orf",  ".rw2", ".raf",  ".pef"};
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
    if (strcasecmp(dot, ext[i]) == 0)
      return 1;
  return 0;
}

const char *const fy_not_read_names[FY_NOT_READ_COUNT] = {"Photoshop"};

void fy_not_read_describe(const size_t counts[FY_NOT_READ_COUNT], char *buf, size_t n) {
  if (!n)
    return;
  buf[0] = 0;
  for (int k = 0; k < FY_NOT_READ_COUNT; k++) {
    size_t at = strlen(buf);
    if (counts[k] && at < n)
      snprintf(buf + at, n - at, "%s%zu %s", at ? ", " : "", counts[k], fy_not_read_names[k]);
  }
}

int fy_not_read_format(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot || name[0] == '.')
    return -1;
  static const struct {
    const char *ext;
    int format;
  } tab[] = {{".psd", 0}, {".psb", 0}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcasecmp(dot, tab[i].ext) == 0)
      return tab[i].format;
  return -1;
}

/* One entry: its name and what readdir said of it. */
typedef struct entry {
  char *name;
  unsigned char type;
} entry;

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

void fy_dir_names_free(char **names, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

static unsigned char entry_type(const struct dirent *e) {
#ifdef DT_DIR
  if (e->d_type == DT_DIR)
    return FY_ENTRY_DIR;
  if (e->d_type == DT_REG)
    return FY_ENTRY_FILE;
#else
  (void)e;
#endif
  return FY_ENTRY_ASK; /* DT_LNK, DT_UNKNOWN: stat follows and says */
}

int fy_dir_entries(const char *dir, char ***names, unsigned char **types, size_t *n) {
  *names = NULL;
  if (types)
    *types = NULL;
  *n = 0;
  if (fy_fault_dir_denied(dir))
    return EACCES;
  DIR *d = opendir(dir);
  if (!d)
    return errno ? errno : EIO;
  entry *v = NULL;
  size_t k = 0, cap = 0;
  struct dirent *e;
  int err = 0;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') /* ".", "..", hidden names */
      continue;
    if (k == cap) {
      entry *nv = fy_grow(v, &cap, k + 1, sizeof *nv, 64);
      if (!nv) {
        err = ENOMEM;
        break;
      }
      v = nv;
    }
    if (!(v[k].name = strdup(e->d_name))) {
      err = ENOMEM;
      break;
    }
    v[k++].type = entry_type(e);
    errno = 0;
  }
  if (!err && errno)
    err = errno; /* readdir failed part way */
  closedir(d);
  if (k > 1)
    qsort(v, k, sizeof *v, cmp_entry);
  /* the names and types apart, as the callers take them */
  char **nm = k ? malloc(k * sizeof *nm) : NULL;
  unsigned char *ty = k && types ? malloc(k) : NULL;
  if (k && (!nm || (types && !ty))) {
    free(nm);
    free(ty);
    for (size_t i = 0; i < k; i++)
      free(v[i].name);
    free(v);
    return ENOMEM;
  }
  for (size_t i = 0; i < k; i++) {
    nm[i] = v[i].name;
    if (ty)
      ty[i] = v[i].type;
  }
  free(v);
  *names = nm;
  if (types)
    *types = ty;
  *n = k;
  return err;
}

int fy_dir_names(const char *dir, char ***names, size_t *n) {
  return fy_dir_entries(dir, names, NULL, n);
}
