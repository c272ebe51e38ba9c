/* source.h — the list of samples a loader reads: paths and labels from an
 * ImageFolder directory or a list file. */
#ifndef FY_SOURCE_H
#define FY_SOURCE_H

#include "core/internal.h"
#include "io/walk.h"

/* The largest label: num_classes = label + 1 must fit in an int. */
#define FY_MAX_LABEL (INT32_MAX - 1)

typedef struct fy_source {
  int64_t count;
  char *paths; /* all paths, NUL-separated */
  size_t paths_len, paths_cap;
  int64_t *offsets; /* count offsets into paths */
  int32_t *labels;  /* count labels, -1 when unlabelled */
  int64_t cap;
  int num_classes;
  char **class_names;                 /* num_classes names (ImageFolder) or NULL */
  size_t not_read[FY_NOT_READ_COUNT]; /* files of formats not read yet, seen */
} fy_source;

/* Opens `path`: a directory (sorted class subfolders give labels 0..K-1;
 * image files directly inside an unlabelled folder get label -1) or a list
 * file of `path[,label]` lines (relative paths are relative to the list
 * file's folder; blank lines and '#' comments skipped). Errors name the path
 * and, for list files, the line. */
int fy_source_open(fy_source *src, const char *path);
void fy_source_free(fy_source *src);
/* Appends a sample (used to list a pack's samples). */
int fy_source_add(fy_source *src, const char *path, int32_t label);

static inline const char *fy_source_path(const fy_source *s, int64_t i) {
  return s->paths + s->offsets[i];
}

#endif
