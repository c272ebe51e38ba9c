/* pack_build.c — `ferry pack`: runs the loader over the source (all cores,
 * deterministic transforms, u8 HWC) and writes one shard per batch, or
 * (--store jpeg) re-encodes each image small (pack_jpeg.c). An interrupted
 * build resumes: complete shards are kept, the rest redone. */
#include "io/source.h"
#include "pack/pack.h"
#include "pipeline/loader_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void ferry_pack_options_default(ferry_pack_options *o) {
  memset(o, 0, sizeof *o);
  o->width = o->height = 224;
  o->crop = FERRY_CROP_CENTER;
  o->crop_ratio = 0.875f;
  o->filter = FERRY_FILTER_TRIANGLE;
  o->shard_size = 1024;
  o->store = FERRY_PACK_U8;
  o->quality = 90;
}

/* The settings a pack was made with: resuming with others is refused. */
static void plan_text(const ferry_pack_options *o, int64_t n, char *buf, size_t len) {
  snprintf(buf, len,
           "ferry-pack-plan 1\nsource %s\nsize %d %d\ncrop %d %.6f\nfilter %d\nshard_size %d\n"
           "samples %lld\n",
           o->source, o->height, o->width, (int)o->crop, o->crop_ratio, (int)o->filter,
           o->shard_size, (long long)n);
  /* u8 plans read as before this line existed: resuming one still works */
  if (o->store == FERRY_PACK_JPEG) {
    size_t k = strlen(buf);
    snprintf(buf + k, len - k, "store jpeg quality %d\n", o->quality);
  }
}

static int write_small_file(const char *dir, const char *name, const char *text) {
  char tmp[4200], final[4200];
  snprintf(final, sizeof final, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  int ok = fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok) {
    unlink(tmp);
    return fy_error(FERRY_EIO, "%s: write failed: %s", tmp, strerror(errno));
  }
  return fy_pack_commit(tmp, final, dir);
}

static int is_pack_temp(const char *name);

/* A directory without a PLAN is a new pack only when it holds nothing else
 * (ferry's own temporaries aside): packing into a folder of the user's
 * would write MANIFEST, PLAN and shard files among theirs. */
static int check_empty(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return fy_error(FERRY_EIO, "%s: cannot open: %s", dir, strerror(errno));
  struct dirent *e;
  char other[256] = "";
  while ((e = readdir(d)) != NULL && !other[0])
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !is_pack_temp(e->d_name))
      snprintf(other, sizeof other, "%s", e->d_name);
  closedir(d);
  if (other[0])
    return fy_error(FERRY_EINVAL,
                    "%s: not empty (it holds %s) and not a ferry pack (no PLAN): pack into a "
                    "new or empty directory",
                    dir, other);
  return FERRY_OK;
}

/* Checks or writes PLAN; sets *id to the pack's (0 for a PLAN written
 * before packs had one: its shards are unbound too). */
static int check_plan(const ferry_pack_options *o, int64_t n, uint64_t *id) {
  char want[8192], path[4200], have[8192];
  plan_text(o, n, want, sizeof want);
  snprintf(path, sizeof path, "%s/PLAN", o->output);
  FILE *f = fy_pack_fopen(path);
  if (!f && errno == EINVAL)
    return fy_error(FERRY_EINVAL, "%s: not a regular file", path);
  if (!f) {
    int rc = check_empty(o->output);
    if (rc)
      return rc;
    *id = fy_pack_new_id();
    size_t k = strlen(want);
    snprintf(want + k, sizeof want - k, "id %016llx\n", (unsigned long long)*id);
    return write_small_file(o->output, "PLAN", want);
  }
  size_t k = fread(have, 1, sizeof have - 1, f);
  have[k] = '\0';
  fclose(f);
  /* the id line is the pack's own, not a setting */
  *id = 0;
  char *line = strstr(have, "\nid ");
  unsigned long long v = 0;
  int end = 0;
  if (line && sscanf(line + 1, "id %16llx\n%n", &v, &end) == 1 && end > 0 && !line[1 + end]) {
    *id = v;
    line[1] = '\0';
  }
  if (strcmp(have, want) != 0)
    return fy_error(FERRY_EINVAL,
                    "%s: holds a pack made with other settings (see its PLAN); "
                    "remove it or choose another directory",
                    o->output);
  return FERRY_OK;
}

enum { SHARD_MISSING, SHARD_DONE, SHARD_FOREIGN };

/* Shard k is done when its file exists with a valid header of this pack;
 * one with another pack's id or number is foreign (never overwritten). */
static int shard_state(const char *dir, int k, uint64_t id, uint32_t *count) {
  char path[4200];
  snprintf(path, sizeof path, "%s/" FY_PACK_SHARD_NAME, dir, k);
  FILE *f = fy_pack_fopen(path);
  if (!f)
    return SHARD_MISSING;
  uint8_t h[FY_PACK_HEADER];
  int ok = fread(h, 1, sizeof h, f) == sizeof h && memcmp(h, FY_PACK_MAGIC, 8) == 0;
  fclose(f);
  if (!ok || fy_le32(h + 60) != fy_crc32c(0, h, 60))
    return SHARD_MISSING;
  *count = fy_le32(h + 28);
  uint64_t hid = fy_le64(h + 48);
  if (hid != id || (id && fy_le32(h + 56) != (uint32_t)k))
    return SHARD_FOREIGN;
  return SHARD_DONE;
}

static int foreign_shard(const char *dir, int k) {
  return fy_error(FERRY_ECORRUPT,
                  "%s/" FY_PACK_SHARD_NAME
                  ": belongs to another pack (its header names another pack id "
                  "or shard number); move it away and run ferry pack again",
                  dir, k);
}

/* The temporaries an interrupted `ferry pack` leaves, by exact name:
 * shard-NNNNN.fpk.tmp (fy_pack_write_shard_var) and .PLAN.tmp,
 * .MANIFEST.tmp (write_small_file). Nothing else in the directory is
 * ferry's to remove, whatever its name ends with. */
static int is_pack_temp(const char *name) {
  if (!strcmp(name, ".PLAN.tmp") || !strcmp(name, ".MANIFEST.tmp"))
    return 1;
  if (strncmp(name, "shard-", 6) != 0)
    return 0;
  const char *p = name + 6;
  size_t digits = strspn(p, "0123456789");
  return digits >= 5 && !strcmp(p + digits, ".fpk.tmp");
}

static void remove_temps(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4200];
  while (d && (e = readdir(d)) != NULL) {
    if (is_pack_temp(e->d_name)) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path); /* an interrupted write: never renamed, never read */
    }
  }
  if (d)
    closedir(d);
}

/* The samples of the missing shards, in order, as a source of their own
 * (in memory: a name with a newline or a comma stays one path). Absolute
 * paths, as a pack stores them. */
static int todo_source(const ferry_pack_options *o, const fy_source *src, const int *missing,
                       int nmissing, fy_source *todo) {
  memset(todo, 0, sizeof *todo);
  int rc = FERRY_OK;
  for (int m = 0; m < nmissing && rc == FERRY_OK; m++) {
    int64_t a = (int64_t)missing[m] * o->shard_size, b = a + o->shard_size;
    for (int64_t i = a; i < b && i < src->count && rc == FERRY_OK; i++) {
      const char *p = fy_source_path(src, i);
      char *abs = realpath(p, NULL);
      rc = fy_source_add(todo, abs ? abs : p, src->labels[i]);
      free(abs);
    }
  }
  if (rc)
    fy_source_free(todo);
  return rc;
}

static int write_manifest(const ferry_pack_options *o, int nshards, uint64_t id) {
  size_t cap = 160 + (size_t)nshards * 40;
  char *t = malloc(cap);
  if (!t)
    return fy_error(FERRY_ENOMEM, "out of memory");
  size_t k = (size_t)snprintf(t, cap, "ferry-pack %d\nid %016llx\nshape %d %d 3\nshards %d\n",
                              FY_PACK_MANIFEST_VERSION, (unsigned long long)id, o->height, o->width,
                              nshards);
  uint64_t total = 0;
  int rc = FERRY_OK;
  for (int i = 0; i < nshards && rc == FERRY_OK; i++) {
    uint32_t c = 0;
    int st = shard_state(o->output, i, id, &c);
    if (st == SHARD_MISSING)
      rc = fy_error(FERRY_ECORRUPT, "%s: shard %d missing after packing", o->output, i);
    else if (st == SHARD_FOREIGN)
      rc = foreign_shard(o->output, i);
    total += c;
    k += (size_t)snprintf(t + k, cap - k, FY_PACK_SHARD_NAME " %u\n", i, c);
  }
  if (rc == FERRY_OK && total == 0)
    rc = fy_error(FERRY_EEMPTY, "%s: no image of %s could be packed", o->output, o->source);
  if (rc == FERRY_OK) {
    snprintf(t + k, cap - k, "crc32c %08x\n", fy_crc32c(0, t, k));
    rc = write_small_file(o->output, "MANIFEST", t);
  }
  free(t);
  return rc;
}

/* Runs the loader over the to-do samples (taken over), one shard per batch. */
static int pack_missing(const ferry_pack_options *o, uint64_t id, fy_source *todo,
                        const int *missing, int nmissing, int64_t done0, int64_t total) {
  ferry_loader_options lo;
  ferry_loader_options_default(&lo);
  lo.source = o->source;
  lo.batch_size = o->shard_size;
  lo.width = o->width;
  lo.height = o->height;
  lo.crop = o->crop;
  lo.crop_ratio = o->crop_ratio;
  lo.filter = o->filter;
  lo.layout = FERRY_LAYOUT_HWC;
  lo.dtype = FERRY_U8;
  lo.shuffle = 0;
  lo.workers = o->workers;
  lo.prefetch = 2;
  lo.on_error = o->on_error;
  lo.on_skip = o->on_skip;
  lo.on_skip_user = o->on_skip_user;
  ferry_loader *L;
  int rc = fy_loader_open_source(&lo, todo, &L);
  if (rc)
    return rc;
  const char **paths = malloc(sizeof *paths * (size_t)o->shard_size);
  if (!paths) {
    ferry_loader_close(L);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  ferry_batch *b;
  int m = 0;
  int64_t done = done0;
  while (rc == FERRY_OK && (rc = ferry_loader_next(L, &b)) == FERRY_OK) {
    for (int i = 0; i < b->count; i++)
      paths[i] = ferry_loader_path(L, b->indices[i]);
    rc = m < nmissing ? fy_pack_write_shard(o->output, id, missing[m++], o->height, o->width, 3,
                                            b->count, b->data, b->labels, paths)
                      : fy_error(FERRY_EINTERNAL, "pack: more batches than shards");
    done += o->shard_size;
    if (o->progress)
      o->progress(o->progress_user, done < total ? done : total, total);
    ferry_loader_release(L, b);
  }
  free(paths);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", ferry_last_error());
  ferry_loader_close(L);
  if (rc == FERRY_END && m != nmissing)
    return fy_error(FERRY_EINTERNAL, "pack: %d of %d shards written", m, nmissing);
  return rc == FERRY_END ? FERRY_OK : fy_error(rc, "%s", msg);
}

static int pack_locked(const ferry_pack_options *o);

int ferry_pack_build(const ferry_pack_options *o) {
  if (!o || !o->source || !o->output || o->shard_size < 1 || o->width < 1 || o->height < 1)
    return fy_error(FERRY_EINVAL, "pack: source, output, size and shard size are required");
  if (o->store != FERRY_PACK_U8 && o->store != FERRY_PACK_JPEG)
    return fy_error(FERRY_EINVAL, "pack: store must be FERRY_PACK_U8 or FERRY_PACK_JPEG");
  if (o->store == FERRY_PACK_JPEG && (o->quality < 1 || o->quality > 100))
    return fy_error(FERRY_EINVAL, "pack: JPEG quality %d out of range (1..100)", o->quality);
  if (o->crop == FERRY_CROP_RANDOM)
    return fy_error(FERRY_EINVAL, "pack: random crops are augmentation: pack with center or "
                                  "none and crop when loading");
  if (mkdir(o->output, 0755) != 0 && errno != EEXIST)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", o->output, strerror(errno));
  /* One writer a directory: a lock on the directory itself (released
   * when this returns, or when the process dies). */
  int lock = open(o->output, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock < 0)
    return fy_error(FERRY_EIO, "%s: cannot open: %s", o->output, strerror(errno));
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    close(lock);
    return fy_error(FERRY_ESTATE, "%s: another ferry pack is writing this directory", o->output);
  }
  int rc = pack_locked(o);
  close(lock);
  return rc;
}

static int pack_locked(const ferry_pack_options *o) {
  fy_source src;
  int rc = fy_source_open(&src, o->source);
  if (rc)
    return rc;
  int nshards = (int)((src.count + o->shard_size - 1) / o->shard_size);
  uint64_t id = 0;
  rc = check_plan(o, src.count, &id);
  int *missing = malloc(sizeof *missing * (size_t)(nshards ? nshards : 1));
  int nmissing = 0;
  int64_t done = 0;
  if (rc == FERRY_OK && !missing)
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  if (rc == FERRY_OK) {
    remove_temps(o->output);
    for (int k = 0; k < nshards && rc == FERRY_OK; k++) {
      uint32_t c;
      int st = shard_state(o->output, k, id, &c);
      if (st == SHARD_FOREIGN)
        rc = foreign_shard(o->output, k);
      else if (st == SHARD_DONE)
        done += o->shard_size;
      else
        missing[nmissing++] = k;
    }
  }
  if (rc == FERRY_OK && o->store == FERRY_PACK_JPEG) {
    rc = fy_pack_build_jpeg(o, id, &src, missing, nmissing, done);
  } else if (rc == FERRY_OK && nmissing > 0) {
    fy_source todo;
    rc = todo_source(o, &src, missing, nmissing, &todo);
    if (rc == FERRY_OK)
      rc = pack_missing(o, id, &todo, missing, nmissing, done, src.count);
  }
  if (rc == FERRY_OK)
    rc = write_manifest(o, nshards, id);
  free(missing);
  fy_source_free(&src);
  return rc;
}

/* One shard's checksums, under fy_bus_guard (the shard may shrink while it
 * is read). */
typedef struct verify_job {
  const fy_pack_shard *s;
  int64_t bad;
  char *first;
  size_t first_len;
} verify_job;

static void verify_shard(void *arg) {
  verify_job *j = arg;
  const fy_pack_shard *s = j->s;
  for (uint32_t k = 0; k < s->count; k++) {
    fy_pack_entry e;
    fy_pack_entry_get(s, k, &e);
    if (fy_crc32c(0, s->map + e.offset, e.length) == e.crc)
      continue;
    if (!j->bad++ && !j->first[0])
      snprintf(j->first, j->first_len, "%s: sample %u (%.*s): checksum mismatch", s->path, k,
               (int)e.path_len, s->strings + e.path_off);
  }
}

int fy_pack_verify_open(const fy_pack *p, int64_t *bad_out) {
  int64_t bad = 0;
  char first[1024] = "";
  for (int i = 0; i < p->nshards; i++) {
    verify_job j = {&p->shards[i], 0, first, sizeof first};
    if (fy_bus_guard(verify_shard, &j) != 0) { /* truncated while read */
      bad += j.bad + 1;
      if (!first[0])
        snprintf(first, sizeof first, "%s: the shard shrank while it was being read",
                 p->shards[i].path);
      continue;
    }
    bad += j.bad;
  }
  if (bad_out)
    *bad_out = bad;
  if (bad)
    return fy_error(FERRY_ECORRUPT, "%s%s", first, bad > 1 ? " (and more damaged samples)" : "");
  return FERRY_OK;
}

int ferry_pack_verify(const char *dir, int64_t *bad_out) {
  fy_pack p;
  if (bad_out)
    *bad_out = 0;
  int rc = fy_pack_open(&p, dir);
  if (rc)
    return rc;
  rc = fy_pack_verify_open(&p, bad_out);
  fy_pack_close(&p);
  return rc;
}
