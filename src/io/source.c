/* source.c — directory walk (ImageFolder labels) and list files. */
#include "io/source.h"
#include "core/user_file.h"

#include "io/shard_fd.h"
#include "io/shards.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int add_sample(fy_source *s, const char *path, int32_t label) {
  size_t len = strlen(path) + 1;
  if (s->count == s->cap) {
    int64_t cap = s->cap ? s->cap * 2 : 1024;
    int64_t *o = realloc(s->offsets, (size_t)cap * sizeof *o);
    if (o)
      s->offsets = o;
    int32_t *l = realloc(s->labels, (size_t)cap * sizeof *l);
    if (l)
      s->labels = l;
    if (!o || !l)
      return fy_error(FERRY_ENOMEM, "out of memory listing samples");
    s->cap = cap;
  }
  if (s->paths_len + len > s->paths_cap) {
    size_t cap = s->paths_cap ? s->paths_cap * 2 : 65536;
    while (cap < s->paths_len + len)
      cap *= 2;
    char *p = realloc(s->paths, cap);
    if (!p)
      return fy_error(FERRY_ENOMEM, "out of memory listing samples");
    s->paths = p;
    s->paths_cap = cap;
  }
  memcpy(s->paths + s->paths_len, path, len);
  s->offsets[s->count] = (int64_t)s->paths_len;
  s->labels[s->count] = label;
  s->paths_len += len;
  s->count++;
  return FERRY_OK;
}

/* Sorted names of a directory's entries and their types (no dot files:
 * io/walk.c). */
static int list_dir(const char *dir, char ***names, unsigned char **types, size_t *n) {
  int err = fy_dir_entries(dir, names, types, n);
  if (!err)
    return FERRY_OK;
  fy_dir_names_free(*names, *n);
  free(*types);
  if (err == ENOMEM)
    return fy_error(FERRY_ENOMEM, "%s: out of memory listing directory", dir);
  return fy_error(FERRY_EIO, "%s: cannot open directory: %s", dir, strerror(err));
}

/* A folder (symbolic links followed): readdir's word when it gave one, a
 * stat otherwise. */
static int is_dir(const char *path, unsigned char type) {
  if (type != FY_ENTRY_ASK)
    return type == FY_ENTRY_DIR;
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void count_not_read(fy_source *s, const char *name) {
  int k = fy_not_read_format(name);
  if (k >= 0)
    s->not_read[k]++; /* for the "no images found" message */
}

/* dir/name into path (cap bytes): 0, or -1 with a warning naming it when it
 * does not fit (that file or folder is left out; the run goes on). */
static int join(char *path, size_t cap, const char *dir, const char *name) {
  int len = snprintf(path, cap, "%s/%s", dir, name);
  if (len >= 0 && (size_t)len < cap)
    return 0;
  fy_log(FERRY_LOG_WARNING, "skipped (the path is longer than %zu bytes): %s/%s", cap - 1, dir,
         name);
  return -1;
}

/* Adds every image under dir (recursively, sorted) with `label`. */
static int walk(fy_source *s, const char *dir, int32_t label, int depth) {
  if (depth > 32)
    return fy_error(FERRY_EINVAL, "%s: directories nested too deep (a link loop?)", dir);
  char **names;
  unsigned char *types;
  size_t n;
  int rc = list_dir(dir, &names, &types, &n);
  if (rc)
    return rc;
  char path[4096];
  for (size_t i = 0; i < n && rc == FERRY_OK; i++) {
    if (join(path, sizeof path, dir, names[i]))
      continue;
    if (is_dir(path, types[i]))
      rc = walk(s, path, label, depth + 1);
    else if (fy_is_image_name(names[i]))
      rc = add_sample(s, path, label);
    else
      count_not_read(s, names[i]);
  }
  fy_dir_names_free(names, n);
  free(types);
  return rc;
}

static int open_dir(fy_source *s, const char *root) {
  char **names;
  unsigned char *types;
  size_t n;
  int rc = list_dir(root, &names, &types, &n);
  if (rc)
    return rc;
  char path[4096];
  /* ImageFolder: each sorted sub-folder is a class. */
  for (size_t i = 0; i < n && rc == FERRY_OK; i++) {
    if (join(path, sizeof path, root, names[i]) || !is_dir(path, types[i]))
      continue;
    char **cn = realloc(s->class_names, (size_t)(s->num_classes + 1) * sizeof *cn);
    if (!cn || !(cn[s->num_classes] = strdup(names[i]))) {
      if (cn)
        s->class_names = cn;
      rc = fy_error(FERRY_ENOMEM, "out of memory");
      break;
    }
    s->class_names = cn;
    rc = walk(s, path, s->num_classes++, 1);
  }
  /* Images lying directly in the root carry no label. */
  for (size_t i = 0; i < n && rc == FERRY_OK; i++) {
    int len = snprintf(path, sizeof path, "%s/%s", root, names[i]);
    if (len < 0 || (size_t)len >= sizeof path)
      continue; /* said by the loop above */
    int folder = is_dir(path, types[i]);
    if (!folder && fy_is_image_name(names[i]))
      rc = add_sample(s, path, -1);
    else if (!folder)
      count_not_read(s, names[i]);
  }
  fy_dir_names_free(names, n);
  free(types);
  return rc;
}

static char *trim(char *p) {
  while (isspace((unsigned char)*p))
    p++;
  char *e = p + strlen(p);
  while (e > p && isspace((unsigned char)e[-1]))
    *--e = '\0';
  return p;
}

static int parse_line(fy_source *s, const char *list, long lineno, char *line, const char *base) {
  char *p = trim(line);
  if (!*p || *p == '#')
    return FERRY_OK;
  int32_t label = -1;
  char *comma = strrchr(p, ',');
  if (comma) {
    char *lab = trim(comma + 1), *end;
    errno = 0;
    long v = strtol(lab, &end, 10);
    if (*lab == '\0' || *end != '\0' || errno || v < 0 || v > FY_MAX_LABEL)
      return fy_error(FERRY_EINVAL, "%s:%ld: label '%s' is not an integer in 0..%d", list, lineno,
                      lab, FY_MAX_LABEL);
    label = (int32_t)v;
    *comma = '\0';
    p = trim(p);
  }
  if (!*p)
    return fy_error(FERRY_EINVAL, "%s:%ld: empty path", list, lineno);
  char path[4096];
  int len = p[0] == '/' || !base[0] ? snprintf(path, sizeof path, "%s", p)
                                    : snprintf(path, sizeof path, "%s/%s", base, p);
  if (len < 0 || (size_t)len >= sizeof path)
    return fy_error(FERRY_EINVAL, "%s:%ld: path too long", list, lineno);
  if (label >= s->num_classes)
    s->num_classes = label + 1;
  return add_sample(s, path, label);
}

#define FY_MAX_LIST_LINE 65536 /* a path is at most 4096 bytes */

/* One line of f into buf (at most cap bytes kept, NUL-terminated: buf
 * holds cap + 1), without its end: the bytes read (cap + 1 when the line
 * is longer than cap, the rest of it skipped), or -1 at the end. Memory
 * stays bounded whatever the file holds (a pipe of endless bytes). */
static ssize_t read_line(FILE *f, char *buf, size_t cap) {
  size_t n = 0, total = 0;
  int c;
  while ((c = getc_unlocked(f)) != EOF && c != '\n') {
    if (n < cap)
      buf[n++] = (char)c;
    if (++total > cap)
      break; /* too long: the caller refuses the file */
  }
  buf[n] = '\0';
  if (c == EOF && total == 0)
    return -1;
  return (ssize_t)total;
}

static int open_list(fy_source *s, const char *list) {
  int fd, orc = fy_open_regular(list, NULL, &fd); /* a FIFO since the stat: refused, no wait */
  if (orc)
    return orc;
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return fy_error(FERRY_ENOMEM, "%s: cannot open: %s", list, strerror(errno));
  }
  char base[4096];
  snprintf(base, sizeof base, "%s", list);
  char *slash = strrchr(base, '/');
  if (slash)
    *slash = '\0';
  else
    base[0] = '\0';
  char *line = malloc(FY_MAX_LIST_LINE + 2);
  long lineno = 0;
  int rc = line ? FERRY_OK : fy_error(FERRY_ENOMEM, "out of memory");
  ssize_t got;
  while (rc == FERRY_OK && (got = read_line(f, line, FY_MAX_LIST_LINE + 1)) >= 0) {
    lineno++;
    /* a UTF-8 byte order mark (editors on Windows write one) is not part
     * of the first path */
    char *text = lineno == 1 && got >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3) ? line + 3 : line;
    if (got > FY_MAX_LIST_LINE)
      rc = fy_error(FERRY_EINVAL, "%s:%ld: a line of more than %d bytes: not a list file", list,
                    lineno, FY_MAX_LIST_LINE);
    else if (memchr(line, '\0', (size_t)got))
      rc = fy_error(FERRY_EINVAL, "%s:%ld: binary data: not a list file", list, lineno);
    else
      rc = parse_line(s, list, lineno, text, base);
  }
  if (rc == FERRY_OK && ferror(f))
    rc = fy_error(FERRY_EIO, "%s: read error", list);
  free(line);
  fclose(f);
  return rc;
}

int fy_source_open(fy_source *s, const char *path) { return fy_source_open_stall(s, path, 0); }

int fy_source_open_stall(fy_source *s, const char *path, int stall_ms) {
  memset(s, 0, sizeof *s);
  s->stream_stall_ms = stall_ms;
  if (!path || !*path)
    return fy_error(FERRY_EINVAL, "no source given");
  if (fy_shards_spec(path)) {
    char **names;
    size_t n;
    int rc = fy_shards_expand(path, &names, &n);
    if (rc == FERRY_OK)
      rc = fy_shards_open(s, path, names, n);
    fy_shards_free_names(names, n);
    return rc;
  }
  struct stat st;
  if (stat(path, &st) != 0)
    return fy_error(FERRY_EIO, "%s: %s", path, strerror(errno));
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
    return fy_error(FERRY_EINVAL,
                    "%s: %s, not a folder or a list file (refused: a list on a pipe is read "
                    "from standard input, `-`)",
                    path, fy_file_kind(st.st_mode));
  int rc = S_ISDIR(st.st_mode) ? open_dir(s, path) : open_list(s, path);
  char seen[256];
  fy_not_read_describe(s->not_read, seen, sizeof seen);
  if (rc == FERRY_OK && s->count == 0 && seen[0])
    rc = fy_error(FERRY_EEMPTY,
                  "%s: no images ferry reads: found %s file(s), formats ferry does not read yet "
                  "(it reads " FY_IMAGE_FORMATS_READ ": " FY_IMAGE_EXTENSIONS ")",
                  path, seen);
  else if (rc == FERRY_OK && s->count == 0)
    rc = fy_error(FERRY_EEMPTY, "%s: no images found (looked for " FY_IMAGE_EXTENSIONS "%s; %s)",
                  path, S_ISDIR(st.st_mode) ? " in it and its sub-folders" : " lines",
                  FY_IMAGE_FORMATS_NOT_READ);
  if (rc)
    fy_source_free(s);
  return rc;
}

int fy_source_from_paths(fy_source *s, const char *what, const char *const *paths,
                         const int32_t *labels, int64_t count) {
  memset(s, 0, sizeof *s);
  int64_t tars = 0;
  for (int64_t i = 0; i < count; i++) {
    if (!paths[i] || !paths[i][0])
      return fy_error(FERRY_EINVAL, "%s: path %lld is empty", what, (long long)i);
    tars += fy_shards_spec(paths[i]);
  }
  if (count == 0)
    return fy_error(FERRY_EEMPTY, "%s: no paths given", what);
  if (tars == count && !labels) /* WebDataset shards */
    return fy_shards_open(s, what, (char *const *)paths, (size_t)count);
  if (tars)
    return fy_error(FERRY_EINVAL,
                    "%s: %lld of the %lld paths are .tar shards: give either image files (with "
                    "labels if any) or shards, not both",
                    what, (long long)tars, (long long)count);
  int rc = FERRY_OK;
  for (int64_t i = 0; i < count && rc == FERRY_OK; i++) {
    int32_t label = labels ? labels[i] : -1;
    if (label < -1 || label > FY_MAX_LABEL)
      rc = fy_error(FERRY_EINVAL, "%s: label %d of %s is not in -1..%d", what, (int)label, paths[i],
                    FY_MAX_LABEL);
    else
      rc = fy_source_add(s, paths[i], label);
  }
  if (rc)
    fy_source_free(s);
  return rc;
}

int fy_source_add(fy_source *s, const char *path, int32_t label) {
  if (label < -1 || label > FY_MAX_LABEL)
    return fy_error(FERRY_ECORRUPT, "%s: label %d out of range (0..%d)", path, (int)label,
                    FY_MAX_LABEL);
  if (label >= s->num_classes)
    s->num_classes = label + 1;
  return add_sample(s, path, label);
}

int fy_source_grow_members(fy_source *s) {
  if (s->count < s->member_cap)
    return FERRY_OK;
  int64_t cap = s->member_cap ? s->member_cap * 2 : 1024;
  int32_t *sh = realloc(s->shard, (size_t)cap * sizeof *sh);
  if (sh)
    s->shard = sh;
  int64_t *o = realloc(s->member_off, (size_t)cap * sizeof *o);
  if (o)
    s->member_off = o;
  int64_t *n = realloc(s->member_len, (size_t)cap * sizeof *n);
  if (n)
    s->member_len = n;
  int64_t *b = realloc(s->sample_begin, (size_t)cap * sizeof *b);
  if (b)
    s->sample_begin = b;
  int64_t *e = realloc(s->sample_end, (size_t)cap * sizeof *e);
  if (e)
    s->sample_end = e;
  if (!sh || !o || !n || !b || !e)
    return fy_error(FERRY_ENOMEM, "out of memory listing shard members");
  s->member_cap = cap;
  return FERRY_OK;
}

int fy_source_alloc_shards(fy_source *s, size_t n) {
  s->shards = calloc(n, sizeof *s->shards);
  s->shard_mem = calloc(n, sizeof *s->shard_mem);
  s->shard_mem_len = calloc(n, sizeof *s->shard_mem_len);
  if (!s->shards || !s->shard_mem || !s->shard_mem_len)
    return fy_error(FERRY_ENOMEM, "out of memory");
  s->shards_id = fy_shard_fd_new_id();
  return FERRY_OK;
}

int fy_source_add_from(fy_source *dst, const fy_source *from, int64_t i, const char *path) {
  if (!path)
    path = fy_source_path(from, i);
  if (!from->shard)
    return fy_source_add(dst, path, from->labels[i]);
  if (!dst->shards) {
    int rc = fy_source_alloc_shards(dst, (size_t)from->nshards);
    if (rc)
      return rc;
    for (int32_t k = 0; k < from->nshards; k++) {
      if (!(dst->shards[k] = strdup(from->shards[k])))
        return fy_error(FERRY_ENOMEM, "out of memory");
      dst->nshards = k + 1;
      if (from->shard_mem && from->shard_mem[k]) { /* a stream shard's bytes: a copy of its own */
        size_t len = (size_t)from->shard_mem_len[k];
        if (!(dst->shard_mem[k] = malloc(len ? len : 1)))
          return fy_error(FERRY_ENOMEM, "out of memory");
        memcpy(dst->shard_mem[k], from->shard_mem[k], len);
        dst->shard_mem_len[k] = (int64_t)len;
      }
    }
  }
  int rc = fy_source_grow_members(dst);
  int64_t j = dst->count;
  if (rc == FERRY_OK)
    rc = fy_source_add(dst, path, from->labels[i]);
  if (rc == FERRY_OK) {
    dst->shard[j] = from->shard[i];
    dst->member_off[j] = from->member_off[i];
    dst->member_len[j] = from->member_len[i];
    dst->sample_begin[j] = from->sample_begin[i];
    dst->sample_end[j] = from->sample_end[i];
  }
  return rc;
}

int fy_source_read(const fy_source *s, int64_t i, uint64_t max_bytes, fy_buf *buf, size_t *size) {
  if (!s->shard)
    return fy_read_file(fy_source_path(s, i), max_bytes, buf, size);
  if (s->shard_mem && s->shard_mem[s->shard[i]]) { /* a stream shard, in memory */
    uint64_t off = (uint64_t)s->member_off[i], len = (uint64_t)s->member_len[i];
    int rc = fy_read_range_check(fy_source_path(s, i), off, len, max_bytes);
    if (rc == FERRY_OK && (rc = fy_buf_reserve(buf, len ? (size_t)len : 1)) == FERRY_OK) {
      memcpy(buf->p, s->shard_mem[s->shard[i]] + off, (size_t)len);
      *size = (size_t)len;
    }
    return rc;
  }
  return fy_shard_fd_read(s->shards_id, s->shard[i], s->shards[s->shard[i]], fy_source_path(s, i),
                          (uint64_t)s->member_off[i], (uint64_t)s->member_len[i], max_bytes, buf,
                          size);
}

void fy_source_free(fy_source *s) {
  if (s->shards_id)
    fy_shard_fd_forget(s->shards_id);
  for (int32_t i = 0; i < s->nshards; i++)
    free(s->shards[i]);
  free(s->shards);
  for (int32_t i = 0; s->shard_mem && i < s->nshards; i++)
    free(s->shard_mem[i]);
  free(s->shard_mem);
  free(s->shard_mem_len);
  free(s->shard);
  free(s->sample_begin);
  free(s->sample_end);
  free(s->member_off);
  free(s->member_len);
  free(s->paths);
  free(s->offsets);
  free(s->labels);
  for (int i = 0; s->class_names && i < s->num_classes; i++)
    free(s->class_names[i]);
  free(s->class_names);
  memset(s, 0, sizeof *s);
}
