/* keeper.c — who keeps in each duplicate group: the criteria a user
 * states (ferry_dupes_keep; the default prefers the camera original), and
 * reference folders whose files win their group and are never moved. The
 * default order of ferry_dupes_find is applied when the groups are first
 * read (fy_dupes_settle), so a ferry_dupes_keep before that decides alone:
 * under a rule without "original" no file is opened.
 * "original": a JPEG whose EXIF names the camera before any other file;
 * between files of one size, a JPEG before a PNG, WebP, ... of the same
 * picture (a lossless copy of a photo is larger, and would win on size). */
#include "catalog/dupes.h"
#include "codec/codec.h"
#include "core/user_file.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K_ORIGINAL, K_PIXELS, K_SIZE, K_OLDEST, K_NEWEST, K_PATH, K_COUNT };
static const char *const names[K_COUNT] = {"original", "pixels", "size",
                                           "oldest",   "newest", "path"};

/* A JPEG whose EXIF names the camera (Make or Model): what cameras and
 * phones write and conversions (a PNG or a re-saved copy) usually lack.
 * Read from the file's first 128 KiB (APP1 is at most 64 KiB); a file that
 * cannot be read is no original, and one that is no longer a regular file
 * (a FIFO, a device) is never waited on: named in a warning. */
static int camera_original(const ferry_catalog_entry *e) {
  if (e->format != FERRY_FORMAT_JPEG)
    return 0;
  int fd, st = fy_open_regular(e->path, NULL, &fd);
  if (st != FERRY_OK) {
    if (st == FERRY_EINVAL)
      fy_log(FERRY_LOG_WARNING, "%s; not read for the keeper's camera check", ferry_last_error());
    return 0;
  }
  enum { HEAD = 128 << 10 };
  uint8_t *buf = malloc(HEAD);
  size_t n = 0;
  while (buf && n < HEAD) {
    ssize_t r = read(fd, buf + n, HEAD - n);
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  int yes = buf && fy_jpeg_names_camera(buf, n);
  free(buf);
  return yes;
}

/* camera_original of catalog entry i, each file read once per ferry_dupes
 * (kept in d->camera; read again each time only if that cannot be had). */
static int camera(ferry_dupes *d, uint32_t i) {
  if (!d->camera && (d->camera = malloc(d->cat->count ? d->cat->count : 1)))
    memset(d->camera, -1, d->cat->count);
  if (!d->camera)
    return camera_original(&d->cat->entries[i]);
  if (d->camera[i] < 0)
    d->camera[i] = (signed char)camera_original(&d->cat->entries[i]);
  return d->camera[i];
}

/* < 0 when catalog entry a keeps before b. */
static int keeps_before(ferry_dupes *d, uint32_t a, uint32_t b) {
  /* a keeper a review chose (decisions.c), before any rule */
  if (d->decided && (d->decided[a] == 1) != (d->decided[b] == 1))
    return d->decided[a] == 1 ? -1 : 1;
  if (d->ref && d->ref[a] != d->ref[b])
    return d->ref[a] ? -1 : 1;
  const ferry_catalog_entry *ea = &d->cat->entries[a], *eb = &d->cat->entries[b];
  for (int k = 0; k < d->norder; k++) {
    switch (d->order[k]) {
    case K_ORIGINAL: /* the camera's file; else, at one size, a JPEG before a conversion */
      if (camera(d, a) != camera(d, b))
        return camera(d, a) ? -1 : 1;
      if ((uint64_t)ea->width * ea->height == (uint64_t)eb->width * eb->height &&
          (ea->format == FERRY_FORMAT_JPEG) != (eb->format == FERRY_FORMAT_JPEG))
        return ea->format == FERRY_FORMAT_JPEG ? -1 : 1;
      break;
    case K_PIXELS: {
      uint64_t pa = (uint64_t)ea->width * ea->height, pb = (uint64_t)eb->width * eb->height;
      if (pa != pb)
        return pa > pb ? -1 : 1;
      break;
    }
    case K_SIZE:
      if (ea->size != eb->size)
        return ea->size > eb->size ? -1 : 1;
      break;
    case K_OLDEST:
    case K_NEWEST:
      if (ea->mtime_ns != eb->mtime_ns)
        return (ea->mtime_ns < eb->mtime_ns) == (d->order[k] == K_OLDEST) ? -1 : 1;
      break;
    default: break; /* K_PATH: below */
    }
  }
  return a < b ? -1 : a > b; /* the catalog is sorted by path */
}

static int by_index(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static void order_keepers(ferry_dupes *d) {
  for (size_t g = 0; g < d->ngroups; g++) {
    uint32_t *m = d->members + d->gstart[g];
    size_t cnt = d->gstart[g + 1] - d->gstart[g], best = 0;
    for (size_t k = 1; k < cnt; k++)
      if (keeps_before(d, m[k], m[best]) < 0)
        best = k;
    uint32_t t = m[0]; /* keeper first, the others in path order */
    m[0] = m[best];
    m[best] = t;
    if (cnt > 2) /* index order is path order (a group may hold 100,000) */
      qsort(m + 1, cnt - 1, sizeof *m, by_index);
  }
}

void fy_dupes_order_keepers(ferry_dupes *d) { atomic_store(&d->keepers_due, 1); }

void fy_dupes_settle(const ferry_dupes *cd) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  ferry_dupes *d = (ferry_dupes *)cd; /* the order, due since find or keep: applied once */
  if (!atomic_load(&d->keepers_due))
    return;
  pthread_mutex_lock(&mu);
  if (atomic_load(&d->keepers_due)) {
    order_keepers(d);
    atomic_store(&d->keepers_due, 0);
  }
  pthread_mutex_unlock(&mu);
}

int fy_dupes_parse_keep(const char *order, unsigned char *out, int *n) {
  if (!order || !*order)
    order = FERRY_KEEP_DEFAULT;
  *n = 0;
  const char *p = order;
  for (;;) {
    size_t len = strcspn(p, ",");
    int found = -1;
    for (int k = 0; k < K_COUNT; k++)
      if (strlen(names[k]) == len && !strncmp(p, names[k], len))
        found = k;
    if (found < 0)
      return fy_error(FERRY_EINVAL,
                      "keeper rule '%.*s' in '%s' is not one of original, pixels, size, oldest, "
                      "newest, path",
                      (int)len, p, order);
    if (*n == FY_KEEP_MAX)
      return fy_error(FERRY_EINVAL, "keeper rules '%s': at most %d", order, FY_KEEP_MAX);
    out[(*n)++] = (unsigned char)found;
    if (!p[len])
      return FERRY_OK;
    p += len + 1;
  }
}

int ferry_dupes_keep(ferry_dupes *d, const char *order, const char *const *reference,
                     size_t nreference) {
  if (!d || (nreference && !reference))
    return fy_error(FERRY_EINVAL, "ferry_dupes_keep: bad argument");
  unsigned char o[FY_KEEP_MAX];
  int n = 0;
  int st = fy_dupes_parse_keep(order, o, &n);
  if (st != FERRY_OK)
    return st;
  for (size_t r = 0; r < nreference; r++)
    if (!reference[r] || reference[r][0] != '/')
      return fy_error(FERRY_EINVAL,
                      "reference folder '%s' is not an absolute path (the catalog's paths are)",
                      reference[r] ? reference[r] : "(null)");
  unsigned char *ref = NULL;
  if (nreference) {
    ref = calloc(d->cat->count ? d->cat->count : 1, 1);
    if (!ref)
      return fy_error(FERRY_ENOMEM, "out of memory");
    for (size_t g = 0; g < d->ngroups; g++)
      for (size_t k = d->gstart[g]; k < d->gstart[g + 1]; k++)
        for (size_t r = 0; r < nreference; r++)
          if (fy_path_under(d->cat->entries[d->members[k]].path, reference[r]))
            ref[d->members[k]] = 1;
  }
  memcpy(d->order, o, sizeof o);
  d->norder = n;
  free(d->ref);
  d->ref = ref;
  fy_dupes_order_keepers(d);
  fy_dupes_settle(d); /* at once: a caller's members pointer sees the new order */
  return FERRY_OK;
}

int ferry_dupes_is_reference(const ferry_dupes *d, uint32_t index) {
  return d && d->ref && index < d->cat->count && d->ref[index];
}

const char *fy_dupes_keep_describe(const ferry_dupes *d, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (int k = 0; k < d->norder && used < n; k++)
    used += (size_t)snprintf(buf + used, n - used, "%s%s", k ? ", " : "", names[d->order[k]]);
  if (d->ref && used < n)
    snprintf(buf + used, n - used, "; reference folders first");
  return buf;
}
